"""The price table behind Payment.vsValue and GET /prices, and the price-source contract.

A deposit is valued once, when it is attributed, from the table in force then (SPEC.md); the
value is rounded to ``VS_PLACES`` so that paidAmount, the exact sum of stored vsValues, never
carries float noise. A token with no price raises ``PriceUnavailable``: the caller leaves the
deposit unattributed until a price exists instead of valuing it at zero.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import ROUND_HALF_EVEN, Decimal, localcontext
from typing import Protocol

import attrs

from .errors import PriceUnavailable
from .model import PriceSnapshot
from .money import MONEY_CONTEXT
from .tokens import TokenId

#: Fractional digits of a vsValue. Eight keeps sub-cent payments visible in any fiat.
VS_PLACES = 8
_QUANTUM = Decimal(1).scaleb(-VS_PLACES)


class PriceSource(Protocol):
    """Something that knows prices; registered through ``paycore_price_sources``."""

    name: str

    def fetch(self, vs_currency: str, tokens: Sequence[str]) -> dict[str, Decimal]:
        """Prices for as many of ``tokens`` as this source knows; unknown ones are omitted."""


@attrs.frozen
class PriceTable:
    vs_currency: str
    fetched_at: int
    prices: Mapping[str, Decimal] = attrs.field(factory=dict)

    def price(self, token: str) -> Decimal:
        key = str(TokenId.parse(token))
        try:
            return self.prices[key]
        except KeyError:
            raise PriceUnavailable(f"no {self.vs_currency} price for {key}") from None

    def value(self, token: str, amount: Decimal) -> Decimal:
        """vsCurrency value of ``amount`` whole tokens, rounded half-even to VS_PLACES."""
        price = self.price(token)
        with localcontext(MONEY_CONTEXT):
            return (amount * price).quantize(_QUANTUM, rounding=ROUND_HALF_EVEN)

    def snapshot(self) -> PriceSnapshot:
        return PriceSnapshot(self.vs_currency, self.fetched_at, dict(self.prices))


@attrs.frozen
class StaticPriceSource:
    """Prices fixed in configuration: for tests, dev chains and pegged stablecoins."""

    prices: Mapping[str, Decimal]
    name: str = "static"

    def fetch(self, vs_currency: str, tokens: Sequence[str]) -> dict[str, Decimal]:
        return {t: self.prices[t] for t in tokens if t in self.prices}


def build_table(
    sources: Sequence[PriceSource], vs_currency: str, tokens: Sequence[str], now: int
) -> PriceTable:
    """Ask each source in order for the tokens still missing; the first answer wins."""
    found: dict[str, Decimal] = {}
    for source in sources:
        missing = [t for t in tokens if t not in found]
        if not missing:
            break
        for token, price in source.fetch(vs_currency, missing).items():
            if price.is_finite() and price >= 0:
                found[token] = price
    return PriceTable(vs_currency, now, found)
