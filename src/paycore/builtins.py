"""Plugins that ship inside the core: in-memory storage and the static price source."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .config import Settings
from .hookspecs import hookimpl
from .pricing import StaticPriceSource


@hookimpl(trylast=True)
def paycore_storage(settings: Settings) -> Any:
    if settings.database_url.startswith("memory:"):
        from .memory import MemoryStorage

        return MemoryStorage()
    return None


@hookimpl(trylast=True)
def paycore_price_sources(settings: Settings, register: Callable[[Any], None]) -> None:
    if settings.prices:
        register(StaticPriceSource(dict(settings.prices)))
