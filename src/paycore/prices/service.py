"""What the Gateway asks about prices, answered from storage so every process agrees.

The table in force is the set of stored prices (``paycore.prices.records.StoredPrice``) no
older than ``Settings.max_price_age``. Older prices are kept -- they are the last good ones,
shown again the moment a source answers -- but never value a deposit: the deposit waits
(``StalePrice``) and is valued when a fresh price arrives. Configuration prices (the static
source) do not age, so they stand in at once for a token whose stored price is missing or
stale, where the token's source order allows it.

With ``Settings.rate_lock`` on, the fresh price of each accepted token is copied to the
invoice at creation (``LockedQuote``) and values the invoice's deposits made up to its
deadline, whatever the table says later. Later deposits use the table, as without a lock.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from decimal import Decimal

from ..domain.money import value_at
from ..domain.records import Invoice, PriceSnapshot, Valuation
from ..domain.tokens import TokenId
from ..errors import InvalidInput, PriceUnavailable
from ..storage import Storage
from ..storage.protocols.prices import Prices, Quotes
from .pricing import PriceSource, PriceTable, PriceTx, StalePrice, quotes_of
from .records import LockedQuote, StoredPrice

log = logging.getLogger("paycore.prices")

#: Seconds a process reuses the stored table it read for GET /prices and /getBalances: one
#: read per second at most, however many requests come in.
READ_CACHE_SECS = 1.0


def order_sources(sources: Sequence[PriceSource], names: Sequence[str]) -> list[PriceSource]:
    """``sources`` in the order ``names`` gives; unnamed ones after, in registration order."""
    if not names:
        return list(sources)
    rank = {name: i for i, name in enumerate(names)}
    return sorted(sources, key=lambda s: rank.get(s.name, len(rank)))


class PriceService:
    def __init__(
        self,
        *,
        storage: Storage,
        sources: Sequence[PriceSource],
        vs_currency: str,
        vs_currencies: Sequence[str] = (),
        max_price_age: int = 900,
        source_order: Sequence[str] = (),
        overrides: dict[str, tuple[str, ...]] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._storage = storage
        self.sources = order_sources(sources, source_order)
        self.overrides = dict(overrides or {})
        self.default_currency = vs_currency.lower()
        self.currencies = tuple(dict.fromkeys([self.default_currency, *vs_currencies]))
        self.max_price_age = max_price_age
        self.clock = clock
        self._lock = threading.Lock()
        self._cache: tuple[float, list[StoredPrice]] | None = None
        #: Tokens someone needed and found unpriced; the refresher adds them to its list.
        self.demanded: set[str] = set()

    def now(self) -> int:
        return int(self.clock())

    # -- configuration ----------------------------------------------------------------------
    def currency(self, raw: str | None, field: str = "vsCurrency") -> str:
        """A configured vsCurrency (the default for None); any other is refused."""
        if raw is None:
            return self.default_currency
        code = raw.strip().lower()
        if code not in self.currencies:
            raise InvalidInput(field, f"must be one of {', '.join(self.currencies)}")
        return code

    def sources_for(self, token: str) -> list[PriceSource]:
        """The sources that may price ``token``, in the order they are asked."""
        names = self.overrides.get(token)
        if names is None:
            return self.sources
        by_name = {s.name: s for s in self.sources}
        return [by_name[n] for n in names if n in by_name]

    # -- freshness --------------------------------------------------------------------------
    def is_fresh(self, fetched_at: int, now: int) -> bool:
        return now - fetched_at <= self.max_price_age

    def _ageless(self, vs: str, token: str, now: int) -> StoredPrice | None:
        """A configuration price for ``token``: fresh by definition, stamped ``now``."""
        for source in self.sources_for(token):
            if not getattr(source, "ageless", False):
                continue
            quote = quotes_of(source, vs, [token]).get(token)
            if quote is not None:
                return StoredPrice(token, vs, quote.price, now, source.name, now)
        return None

    def tokens(self) -> list[str]:
        """Every token id pricing knows of: stored, or named by a source's configuration.
        The watcher follows all of them, so a price going stale never hides a transfer."""
        found = [r.token for r in self.stored()]
        for source in self.sources:
            known = getattr(source, "known_tokens", None)
            if callable(known):
                found.extend(known())
        return list(dict.fromkeys(found))

    # -- the table ---------------------------------------------------------------------------
    def stored(self, *, max_staleness: float = READ_CACHE_SECS) -> list[StoredPrice]:
        """Every stored price, read at most ``max_staleness`` seconds ago."""
        moment = time.monotonic()
        with self._lock:
            cached = self._cache
        if cached is not None and moment - cached[0] < max_staleness:
            return cached[1]
        with self._storage.transaction() as tx:
            rows = tx.get_prices()
        with self._lock:
            self._cache = (moment, rows)
        return rows

    def stored_and_parked(self) -> tuple[list[StoredPrice], list[str]]:
        """The refresher's start of round, read in one transaction: every stored price
        (uncached) and the token ids parked deposits wait for."""
        with self._storage.transaction() as tx:
            return tx.get_prices(), tx.parked_tokens()

    def put(self, rows: list[StoredPrice]) -> None:
        """Store the refresher's winners, one row per (token, vsCurrency)."""
        with self._storage.transaction() as tx:
            tx.put_prices(rows)

    def invalidate(self) -> None:
        with self._lock:
            self._cache = None

    def fresh_prices(self, vs: str | None = None) -> dict[str, StoredPrice]:
        """The prices that may value a deposit now, in ``vs``: fresh stored ones, and
        configuration prices where nothing fresh is stored."""
        code = self.currency(vs)
        now = self.now()
        table = {
            r.token: r
            for r in self.stored()
            if r.vs_currency == code and self.is_fresh(r.fetched_at, now)
        }
        for source in self.sources:
            if getattr(source, "ageless", False) and hasattr(source, "known_tokens"):
                for token in source.known_tokens():
                    if token not in table:
                        fill = self._ageless(code, token, now)
                        if fill is not None:
                            table[token] = fill
        return table

    def table(self, vs: str | None = None) -> PriceTable:
        """The table in force; ``fetched_at`` is the oldest price's, so a reader knows how
        old the table is at worst (the current time when it is empty)."""
        code = self.currency(vs)
        rows = self.fresh_prices(code)
        fetched_at = min((r.fetched_at for r in rows.values()), default=self.now())
        return PriceTable(code, fetched_at, {t: r.price for t, r in rows.items()}, rows)

    def snapshot(self, vs: str | None = None) -> PriceSnapshot:
        return self.table(vs).snapshot()

    # -- valuation, inside the attribution's transaction -----------------------------------
    def price(self, tx: Prices, vs: str, token: str, now: int) -> StoredPrice:
        """The price that values ``token`` in ``vs`` now, read in ``tx`` (so the watcher in
        one process and the refresher in another cannot disagree); raises ``StalePrice`` or
        ``PriceUnavailable`` when there is none fit to use."""
        key = str(TokenId.parse(token))
        row = tx.get_price(key, vs)
        if row is not None and self.is_fresh(row.fetched_at, now):
            return row
        fill = self._ageless(vs, key, now)
        if fill is not None:
            return fill
        self.demanded.add(key)
        if row is not None:
            raise StalePrice(
                f"{vs} price of {key} is {now - row.fetched_at} s old "
                f"(max_price_age {self.max_price_age})"
            )
        raise PriceUnavailable(f"no {vs} price for {key}")

    def valuation(self, tx: PriceTx, invoice: Invoice, token: str, at: int) -> Valuation:
        """The rate for ``token`` paid to ``invoice`` at block time ``at``: the invoice's
        locked quote up to its deadline, the table in force otherwise."""
        if at <= invoice.deadline:
            for quote in tx.get_quotes(invoice.guid):
                if quote.token == token:
                    return locked_valuation(quote)
        return stored_valuation(self.price(tx, invoice.vs_currency, token, self.now()))

    def value_deposit(
        self, tx: PriceTx, invoice: Invoice, token: str, amount: Decimal, at: int
    ) -> Decimal:
        """vsValue of ``amount`` of ``token`` paid to ``invoice`` at block time ``at``, at
        :meth:`valuation`'s rate."""
        return value_at(self.valuation(tx, invoice, token, at).rate, amount)

    def for_batch(self, tx: Quotes, invoices: Sequence[Invoice]) -> BatchValuer:
        """``value_deposit`` for a batch of deposits to ``invoices``: their locked quotes in
        one read, and each (vsCurrency, token) price read once, at one ``now``."""
        return BatchValuer(self, tx.get_quotes_of([i.guid for i in invoices]), self.now())

    def lock_quotes(self, tx: PriceTx, invoice: Invoice) -> list[LockedQuote]:
        """Copy the fresh price of each accepted token to ``invoice``. A token with no fresh
        price gets no quote: its deposits are valued from the table when they arrive."""
        now = self.now()
        quotes: list[LockedQuote] = []
        for token in invoice.accepted_tokens:
            try:
                row = self.price(tx, invoice.vs_currency, token, now)
            except PriceUnavailable:
                log.info("rate lock: no fresh price for %s, invoice %s", token, invoice.guid)
                continue
            quotes.append(
                LockedQuote(
                    invoice.guid, token, row.vs_currency, row.price, row.fetched_at, row.source
                )
            )
        if quotes:
            tx.put_quotes(quotes)
        return quotes


def stored_valuation(row: StoredPrice) -> Valuation:
    """A stored (or configuration) price as the rate a deposit is recorded with."""
    return Valuation(row.price, row.source, row.fetched_at, row.vs_currency)


def locked_valuation(quote: LockedQuote) -> Valuation:
    """A rate the invoice locked at creation: its source is marked ``locked:``, because the
    price was the table's at creation, not at payment."""
    return Valuation(quote.price, f"locked:{quote.source}", quote.fetched_at, quote.vs_currency)


class BatchValuer:
    """``PriceService.value_deposit`` over one batch of deposits in one transaction.

    A range of blocks holds thousands of deposits to a few tokens; reading the quotes and
    the price per deposit made each one a round trip. The answers are the same: a locked
    quote first (up to the invoice's deadline), else the price in force, which a batch
    reads once per (vsCurrency, token) -- an unusable price, once, too."""

    def __init__(self, service: PriceService, quotes: Sequence[LockedQuote], now: int) -> None:
        self._service = service
        self._now = now
        self._quotes = {(q.guid, q.token): q for q in quotes}
        self._prices: dict[tuple[str, str], StoredPrice | PriceUnavailable] = {}

    def valuation(self, tx: Prices, invoice: Invoice, token: str, at: int) -> Valuation:
        """The rate for ``token`` paid to ``invoice`` at block time ``at``."""
        if at <= invoice.deadline:
            quote = self._quotes.get((invoice.guid, token))
            if quote is not None:
                return locked_valuation(quote)
        key = (invoice.vs_currency, token)
        found = self._prices.get(key)
        if found is None:
            try:
                found = self._service.price(tx, invoice.vs_currency, token, self._now)
            except PriceUnavailable as exc:
                found = exc
            self._prices[key] = found
        if isinstance(found, PriceUnavailable):
            raise type(found)(*found.args)
        return stored_valuation(found)

    def value_deposit(
        self, tx: Prices, invoice: Invoice, token: str, amount: Decimal, at: int
    ) -> Decimal:
        """vsValue of ``amount`` of ``token`` paid to ``invoice`` at block time ``at``."""
        return value_at(self.valuation(tx, invoice, token, at).rate, amount)

    def for_batch(self, tx: PriceTx, invoices: Sequence[Invoice]) -> BatchValuer:
        """Already one batch's valuer."""
        return self
