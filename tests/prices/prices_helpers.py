"""Price sources a test controls, and a gateway wired to them on a fake clock."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from paycore import Gateway, Settings
from paycore.plugins.hookspecs import hookimpl
from paycore.prices.pricing import Quote
from paycore.storage import Storage

NATIVE = "0x0000000000000000000000000000000000000000"
ETH = f"1:{NATIVE}"
USDC = "1:0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48"
USDT = "1:0xdAC17F958D2ee523a2206206994597C13D831ec7"
WBTC = "1:0x2260FAC5E5542a773Aa44fBCfeDf7C193bc2C599"
OWNER = "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359"
ADDRESS = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"
T0 = 1_700_000_000


class Clock:
    def __init__(self, t: int = T0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


class Board:
    """A source that answers what is written on it, per currency, and records each ask.
    ``ages`` makes it a quoting source: the unix time each price is as of."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.prices: dict[str, dict[str, Decimal]] = {}  # currency -> token -> price
        self.ages: dict[str, int] = {}
        self.asked: list[tuple[str, list[str]]] = []
        self.fail = False

    def put(self, vs: str, token: str, price: str, as_of: int | None = None) -> None:
        self.prices.setdefault(vs, {})[token] = Decimal(price)
        if as_of is not None:
            self.ages[token] = as_of

    def fetch_quotes(self, vs_currency: str, tokens: Sequence[str]) -> dict[str, Quote]:
        self.asked.append((vs_currency, list(tokens)))
        if self.fail:
            raise RuntimeError(f"{self.name} is down")
        table = self.prices.get(vs_currency, {})
        return {t: Quote(table[t], self.ages.get(t)) for t in tokens if t in table}

    def fetch(self, vs_currency: str, tokens: Sequence[str]) -> dict[str, Decimal]:
        return {t: q.price for t, q in self.fetch_quotes(vs_currency, tokens).items()}


class Sources:
    """A plugin registering the given sources, in order."""

    def __init__(self, *sources: object) -> None:
        self.sources = sources

    @hookimpl
    def paycore_price_sources(self, settings: Settings, register: Any) -> None:
        for source in self.sources:
            register(source)


def gateway(
    *sources: object,
    clock: Clock | None = None,
    storage: Storage | None = None,
    **settings: Any,
) -> Gateway:
    values: dict[str, Any] = {"database_url": "memory://", "price_tokens": (ETH, USDC)}
    values.update(settings)
    return Gateway(
        Settings(**values),
        storage=storage,
        entry_points=False,
        plugins=[Sources(*sources)],
        clock=clock or Clock(),
    )


def new_invoice(gw: Gateway, tokens: Sequence[str] = (USDC,), **extra: Any) -> str:
    fields = {"value": "100", "chainId": 1, "description": "d", "acceptedTokens": list(tokens)}
    fields.update({"address": ADDRESS, **extra})
    return gw.create_invoice(OWNER, fields).guid
