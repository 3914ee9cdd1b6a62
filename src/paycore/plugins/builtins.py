"""Plugins that ship inside the core: in-memory storage, the static price source and the
WebSocket Hub (the notifier behind GET /ws)."""

from __future__ import annotations

from typing import Any

from ..config import Settings
from ..prices.pricing import StaticPriceSource
from .hookspecs import RegisterNotifier, RegisterPriceSource, hookimpl


@hookimpl(trylast=True)
def paycore_storage(settings: Settings) -> Any:
    if settings.database_url.startswith("memory:"):
        from ..storage.memory import MemoryStorage

        return MemoryStorage()
    return None


@hookimpl(trylast=True)
def paycore_price_sources(settings: Settings, register: RegisterPriceSource) -> None:
    if settings.prices or settings.prices_by_currency or settings.price_pegs:
        register(
            StaticPriceSource(
                dict(settings.prices),
                vs_currency=settings.vs_currency.lower(),
                by_currency=settings.prices_by_currency,
                pegs=dict(settings.price_pegs),
            )
        )


@hookimpl(trylast=True)
def paycore_notifiers(settings: Settings, register: RegisterNotifier) -> None:
    """The WebSocket Hub, in every process: web workers push to their sockets, and any
    process with ``redis_url`` set (``paycore worker`` too) publishes for the others."""
    from ..realtime.hub import Hub

    register(Hub.from_settings(settings))
