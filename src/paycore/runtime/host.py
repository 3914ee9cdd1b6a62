"""Where a ``paycore`` command takes its settings and plugins from.

Run as ``paycore ...`` (or ``python -m paycore``) a command reads ``PAYCORE_*`` environment
variables, as it always has. Run as ``flask paycore ...`` or ``litestar paycore ...`` it
starts from the settings of the app's gateway instead (Flask: ``PAYCORE_*`` app.config keys
over the environment; Litestar: ``PayCoreConfig``), with the plugins the host gave that
gateway, so ``flask paycore migrate`` migrates the database the app uses. In both, a flag
given on the command line wins.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs

from ..config import Settings
from ..gateway import Gateway
from ..plugins.manager import host_plugins


@attrs.frozen
class CommandSource:
    """The base settings of a command run (None: ``PAYCORE_*`` environment variables) and
    the extra plugins every gateway and storage lookup of the run registers."""

    base: Callable[[], Settings] | None = None
    plugins: Callable[[], Sequence[object]] = tuple

    @classmethod
    def of_gateway(cls, gateway: Callable[[], Gateway]) -> CommandSource:
        """A host app's gateway, asked for only when a command runs (after the app loaded)."""
        return cls(lambda: gateway().settings, lambda: host_plugins(gateway().pm))

    @property
    def hosted(self) -> bool:
        return self.base is not None

    def settings(self, database_url: str | None = None, **overrides: Any) -> Settings:
        """The settings with the command line's values over them; ``database_url`` None
        (the flag not given) keeps the configured one."""
        if database_url:
            overrides["database_url"] = database_url
        if self.base is None:
            return Settings.from_env(**overrides)
        return attrs.evolve(self.base(), **overrides)

    def gateway(self, database_url: str | None = None) -> Gateway:
        return Gateway(self.settings(database_url), plugins=self.plugins())
