"""The price table behind Payment.vsValue and GET /prices, and the price-source contract.

A deposit is valued once, when it is attributed, from the table in force then; the
value is rounded to ``VS_PLACES`` (``paycore.domain.money.value_at``) so that paidAmount,
the exact sum of stored vsValues, never carries float noise. A token with no price raises
``PriceUnavailable`` (``StalePrice`` when the only price known is older than
``max_price_age``): the caller leaves the deposit unattributed until a fresh price exists
instead of valuing it at zero or at an old rate.

Where prices come from, how they are refreshed and persisted: ``paycore.prices``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import attrs

from ..domain.money import MAX_AMOUNT, value_at
from ..domain.records import PriceSnapshot, Valuation
from ..domain.tokens import TokenId
from ..errors import PriceUnavailable
from ..storage.protocols.prices import Prices, Quotes
from .records import StoredPrice

if TYPE_CHECKING:
    from ..domain.records import Invoice


class StalePrice(PriceUnavailable):
    """A price exists but is older than ``max_price_age``: as good as none for valuing."""


class PriceSource(Protocol):
    """Something that knows prices; registered through ``paycore_price_sources``.

    ``fetch`` must not raise for a network or data problem: it logs and leaves the tokens
    out, so that the next source in the configured order gets its turn.
    """

    @property
    def name(self) -> str:
        """The source's name in ``Settings.price_sources`` and in a price's ``source``."""

    def fetch(self, vs_currency: str, tokens: Sequence[str]) -> dict[str, Decimal]:
        """Prices for as many of ``tokens`` as this source knows; unknown ones are omitted."""


@attrs.frozen
class Quote:
    """A price and the unix time it describes (``None``: as of now)."""

    price: Decimal
    as_of: int | None = None


@runtime_checkable
class QuotingSource(Protocol):
    """A source that also knows how old each of its prices is (an on-chain feed's
    ``updatedAt``, CoinGecko's ``last_updated_at``), so a price is aged from when it was
    true rather than from when we asked."""

    name: str

    def fetch_quotes(self, vs_currency: str, tokens: Sequence[str]) -> dict[str, Quote]: ...


def is_usable(price: object) -> bool:
    """A price that can value money: a finite Decimal above zero and below ``MAX_AMOUNT``.
    Zero is refused as well: valuing a real deposit at nothing cannot be undone; and a
    price beyond any amount paycore stores is a broken answer, not a market."""
    return isinstance(price, Decimal) and price.is_finite() and 0 < price < MAX_AMOUNT


def quotes_of(source: PriceSource, vs_currency: str, tokens: Sequence[str]) -> dict[str, Quote]:
    """Ask ``source`` for ``tokens``, with ages when it can tell them; unusable prices and
    tokens nobody asked for are dropped here, whatever the source returned."""
    wanted = set(tokens)
    if isinstance(source, QuotingSource):
        raw = source.fetch_quotes(vs_currency, tokens)
        return {t: q for t, q in raw.items() if t in wanted and is_usable(q.price)}
    return {
        t: Quote(p)
        for t, p in source.fetch(vs_currency, tokens).items()
        if t in wanted and is_usable(p)
    }


class PriceTx(Prices, Quotes, Protocol):
    """What valuing a deposit may read in the attribution's transaction: the stored prices and
    the quotes an invoice locked (a fixed ``PriceTable`` reads neither)."""


class DepositValuer(Protocol):
    """What attribution asks for a deposit's vsValue: the rate of the table in force in the
    invoice's vsCurrency, or the rate the invoice locked (``paycore.prices.service``). The
    rate, its source and its time are recorded with the deposit (``Valuation``); its
    vsValue is ``value_at(rate, amount)``."""

    def valuation(self, tx: PriceTx, invoice: Invoice, token: str, at: int) -> Valuation:
        """The rate that values ``token`` paid to ``invoice`` at block time ``at``; raises
        ``PriceUnavailable`` (or ``StalePrice``) when there is none fit to use."""
        ...

    def for_batch(self, tx: PriceTx, invoices: Sequence[Invoice]) -> DepositValuer:
        """A valuer for many deposits to ``invoices`` within ``tx``: what they all need may
        be read once (the watcher's batches), with the same answers deposit by deposit."""
        ...


@attrs.frozen
class PriceTable:
    vs_currency: str
    fetched_at: int
    prices: Mapping[str, Decimal] = attrs.field(factory=dict)
    #: The stored rows behind ``prices``, when the table was read from storage: where each
    #: price came from and when, for the ``Valuation`` of what it values.
    rows: Mapping[str, StoredPrice] = attrs.field(factory=dict)

    def price(self, token: str) -> Decimal:
        key = str(TokenId.parse(token))
        try:
            return self.prices[key]
        except KeyError:
            raise PriceUnavailable(f"no {self.vs_currency} price for {key}") from None

    def value(self, token: str, amount: Decimal) -> Decimal:
        """vsCurrency value of ``amount`` whole tokens, rounded half-even to VS_PLACES."""
        return value_at(self.price(token), amount)

    def snapshot(self) -> PriceSnapshot:
        return PriceSnapshot(self.vs_currency, self.fetched_at, dict(self.prices))

    def rate(self, token: str) -> Valuation:
        """The price of ``token`` as a ``Valuation``: its stored row's source and time when
        the table has them, else this table's (source ``table``)."""
        key = str(TokenId.parse(token))
        price = self.price(key)
        row = self.rows.get(key)
        if row is None:
            return Valuation(price, "table", self.fetched_at, self.vs_currency)
        return Valuation(price, row.source, row.fetched_at, self.vs_currency)

    def valuation(self, tx: PriceTx, invoice: Invoice, token: str, at: int) -> Valuation:
        """A fixed table as a ``DepositValuer``: every invoice valued from it alike."""
        return self.rate(token)

    def value_deposit(
        self, tx: PriceTx, invoice: Invoice, token: str, amount: Decimal, at: int
    ) -> Decimal:
        """vsValue of ``amount`` of ``token`` at this table's rate."""
        return self.value(token, amount)

    def for_batch(self, tx: PriceTx, invoices: Sequence[Invoice]) -> PriceTable:
        """A fixed table reads nothing: itself."""
        return self


def _lower_keys(raw: Mapping[str, Mapping[str, Decimal]]) -> dict[str, dict[str, Decimal]]:
    return {str(k).lower(): dict(v) for k, v in raw.items()}


@attrs.frozen
class StaticPriceSource:
    """Prices fixed in configuration: for tests, dev chains and pegged stablecoins.

    ``prices`` are in ``vs_currency`` (any currency asked, when that is None, as before
    several currencies existed); ``by_currency`` adds tables for other currencies; ``pegs``
    maps a stablecoin to the currency it is pegged to, where it is worth exactly 1.
    Configuration does not age, so the refresher stamps these prices with the time it
    read them and valuation may fall back to them at any time (``ageless``).
    """

    prices: Mapping[str, Decimal] = attrs.field(factory=dict)
    name: str = "static"
    vs_currency: str | None = None
    by_currency: Mapping[str, Mapping[str, Decimal]] = attrs.field(
        factory=dict, converter=_lower_keys
    )
    pegs: Mapping[str, str] = attrs.field(factory=dict)
    ageless: bool = True

    def known_tokens(self) -> list[str]:
        tokens = [*self.prices, *self.pegs]
        for table in self.by_currency.values():
            tokens.extend(table)
        return list(dict.fromkeys(tokens))

    def fetch(self, vs_currency: str, tokens: Sequence[str]) -> dict[str, Decimal]:
        vs = vs_currency.lower()
        table: dict[str, Decimal] = {}
        if self.vs_currency is None or self.vs_currency.lower() == vs:
            table.update(self.prices)
        table.update(self.by_currency.get(vs, {}))
        for token, pegged_to in self.pegs.items():
            if pegged_to.lower() == vs:
                table.setdefault(token, Decimal(1))
        return {t: table[t] for t in tokens if t in table}


def build_table(
    sources: Sequence[PriceSource], vs_currency: str, tokens: Sequence[str], now: int
) -> PriceTable:
    """Ask each source in order for the tokens still missing; the first answer wins."""
    found: dict[str, Decimal] = {}
    for source in sources:
        missing = [t for t in tokens if t not in found]
        if not missing:
            break
        for token, quote in quotes_of(source, vs_currency, missing).items():
            found[token] = quote.price
    return PriceTable(vs_currency, now, found)
