"""The pluggy hooks through which paycore finds its I/O: storage, chains, prices, notifiers.

Storage is pick-one (``firstresult``): the first plugin that answers for the configured
database URL wins. The others are collections: each plugin calls ``register`` for every
backend, source or notifier it offers, so one plugin may offer several.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from ..config import Settings
    from ..storage import Storage

PROJECT = "paycore"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec(firstresult=True)
def paycore_storage(settings: Settings) -> Storage | None:
    """Return a Storage for ``settings.database_url`` if this plugin handles that URL."""


@hookspec
def paycore_chain_backends(settings: Settings, register: Callable[[Any], None]) -> None:
    """Register chain backends (see ``paycore.chains.ChainBackend``)."""


@hookspec
def paycore_price_sources(settings: Settings, register: Callable[[Any], None]) -> None:
    """Register price sources (see ``paycore.prices.pricing.PriceSource``), in preference order."""


@hookspec
def paycore_notifiers(settings: Settings, register: Callable[[Any], None]) -> None:
    """Register notifiers called after every committed invoice change."""
