"""``PayCorePlugin``: the Litestar plugin, in the usual ``plugins=[PayCorePlugin(config)]`` shape.

``on_app_init`` only adds: one Router under the prefix, the gateway in ``app.state`` and as
the ``paycore_gateway`` dependency, and (when the plugin built the gateway) a shutdown hook
that closes it. It never touches the host's exception handlers, middleware, serialisation or
other routes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from litestar import Request
from litestar.config.app import AppConfig
from litestar.di import Provide
from litestar.exceptions import ImproperlyConfiguredException
from litestar.plugins import CLIPluginProtocol, InitPluginProtocol
from litestar.types import Guard, Middleware

from paycore import Gateway, Settings

from .handler import build_router

if TYPE_CHECKING:
    from click import Group

STATE_KEY = "paycore"
#: The dependency name host handlers ask for: ``async def shop(paycore_gateway: Gateway)``.
DEPENDENCY_KEY = "paycore_gateway"


@dataclass
class PayCoreConfig:
    """A ready ``gateway``, or ``settings`` to build one from (default: ``PAYCORE_*``
    environment variables) and pluggy ``plugins`` to register on it (``paycore.plugins``),
    the path prefix the interface is mounted under, ``guards`` and ``middleware``.

    ``guards`` is a list, applied to paycore's Router (every paycore route, the WebSocket
    included, and no host route), or a mapping from handler names to guards of single
    endpoints (``{"paycore.create_invoice": [guard]}``). ``middleware`` goes on the Router
    too: it wraps paycore's routes only, not the host's.
    """

    gateway: Gateway | None = None
    settings: Settings | None = None
    prefix: str = "/paycore"
    guards: Sequence[Guard] | Mapping[str, Sequence[Guard]] = field(default_factory=dict)
    plugins: Sequence[object] = ()
    middleware: Sequence[Middleware] = ()

    def __post_init__(self) -> None:
        if self.gateway is not None and self.settings is not None:
            raise TypeError("PayCoreConfig takes a gateway or settings, not both")
        if self.gateway is not None and self.plugins:
            raise TypeError("PayCoreConfig takes plugins only when it builds the gateway")
        stripped = self.prefix.strip().strip("/")
        self.prefix = "/" + stripped if stripped else ""


class PayCorePlugin(InitPluginProtocol, CLIPluginProtocol):
    """Mount paycore's HTTP interface; the gateway is the ``paycore_gateway`` dependency
    (and ``app.state.paycore``) for host code. ``litestar paycore ...`` runs the ``paycore``
    commands on this gateway's settings and plugins."""

    def __init__(self, config: PayCoreConfig | None = None) -> None:
        self.config = config or PayCoreConfig()
        self._gateway = self.config.gateway
        self._owns_gateway = False

    @property
    def gateway(self) -> Gateway:
        """The plugin's gateway: the one given, or the one built on the first app init."""
        if self._gateway is None:
            self._gateway = Gateway(
                self.config.settings or Settings.from_env(), plugins=self.config.plugins
            )
            self._owns_gateway = True
        return self._gateway

    def on_app_init(self, app_config: AppConfig) -> AppConfig:
        if STATE_KEY in app_config.state:
            raise ImproperlyConfiguredException(
                "paycore is already registered on this Litestar app (app.state.paycore); "
                "pass a single PayCorePlugin"
            )
        gateway = self.gateway
        # Invoices made outside a request (host code, scripts) link to this app's page too.
        gateway.mount_prefix = self.config.prefix
        app_config.state[STATE_KEY] = gateway
        app_config.dependencies.setdefault(
            DEPENDENCY_KEY, Provide(lambda: gateway, use_cache=True, sync_to_thread=False)
        )
        guards = self.config.guards
        everywhere = [] if isinstance(guards, Mapping) else list(guards)
        app_config.route_handlers.append(
            build_router(
                self.config.prefix,
                gateway,
                guards if isinstance(guards, Mapping) else None,
                router_guards=everywhere,
                middleware=self.config.middleware,
            )
        )
        if self._owns_gateway:
            app_config.on_shutdown.append(self._close)
        return app_config

    def on_cli_init(self, cli: Group) -> None:
        from paycore.runtime.cli import hosted_cli
        from paycore.runtime.host import CommandSource

        cli.add_command(hosted_cli(CommandSource.of_gateway(lambda: self.gateway)))

    def _close(self) -> None:
        """Release the storage of a gateway this plugin built (a given one is the host's)."""
        if self._gateway is not None:
            self._gateway.close()


def checkout_url(request: Request[Any, Any, Any], gateway: Gateway) -> str:
    """The checkout page's address as ``request`` resolves it (``public_url``, or the
    address the request came in at, under paycore's prefix): what a host handler that
    creates invoices itself passes on, ``gateway.create_invoice(..., checkout_url=...)``,
    so its buyers get the same link paycore's own POST /invoice would give them."""
    return gateway.checkout_url_for(str(request.base_url))
