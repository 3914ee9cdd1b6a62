"""The refresher: ask the sources, keep the last good price of each token, persist it.

One round (:meth:`PriceRefresher.refresh`), for every configured vsCurrency:

1. The tokens to price: ``Settings.price_tokens``, the tokens every source says it knows
   (static prices, pegs, Chainlink feeds), the native coin and ``tokens`` of each chain
   with an ``rpc_url``, every token already in the table, the tokens of parked deposits and
   those someone found unpriced in this process.
2. Each token's sources are asked in its order (``price_source_overrides``, else
   ``price_sources``), one batch per source per pass: pass 1 asks every token's first
   source, pass 2 the second source of the tokens still missing, and so on. An answer older
   than ``max_price_age`` is no answer.
3. The winners are written to storage, one row per (token, vsCurrency). A token nobody
   priced keeps its last row, which ages until a source answers again. A row is not
   replaced by an older quote from the same source (a cached answer).

Sources are asked with no transaction open: a slow HTTP answer never holds a lock. Several
workers may run refreshers against one database; a round finds every row written less than
half an interval ago and skips the sources, so the fleet asks about once per interval.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Sequence
from decimal import ROUND_HALF_EVEN, Decimal, localcontext

import attrs

from ..config import Settings
from ..domain.money import MONEY_CONTEXT, normalize
from ..domain.tokens import NATIVE
from ..errors import StorageUnavailable
from ..ops.outages import LoopGuard
from .pricing import PriceSource, Quote, quotes_of
from .records import StoredPrice
from .service import PriceService

log = logging.getLogger("paycore.prices.refresher")

#: Fractional digits a stored price keeps, as token amounts do (``paycore.domain.money.MAX_SCALE``):
#: every storage backend then holds exactly the same number.
PRICE_PLACES = 18
_PRICE_QUANTUM = Decimal(1).scaleb(-PRICE_PLACES)


def storable(price: Decimal) -> Decimal | None:
    """``price`` rounded half-even to PRICE_PLACES; None when nothing is left of it."""
    with localcontext(MONEY_CONTEXT):
        rounded = price.quantize(_PRICE_QUANTUM, rounding=ROUND_HALF_EVEN)
    return normalize(rounded) if rounded > 0 else None


@attrs.frozen
class RefreshReport:
    """What a round did: prices written per currency, tokens still unpriced, or skipped."""

    written: dict[str, int] = attrs.field(factory=dict)
    missing: dict[str, list[str]] = attrs.field(factory=dict)
    skipped: bool = False


def configured_tokens(settings: Settings, sources: Iterable[PriceSource]) -> list[str]:
    """Tokens worth pricing whatever the table holds (step 1 above, configuration part)."""
    tokens: list[str] = list(settings.price_tokens)
    for source in sources:
        known = getattr(source, "known_tokens", None)
        if callable(known):
            tokens.extend(known())
    for chain in settings.chains.values():
        if chain.rpc_url:
            tokens.append(f"{chain.chain_id}:{NATIVE}")
            tokens.extend(f"{chain.chain_id}:{t}" for t in chain.tokens)
    return list(dict.fromkeys(tokens))


class PriceRefresher:
    def __init__(self, service: PriceService, settings: Settings) -> None:
        self.service = service
        self.settings = settings
        self.interval = settings.price_refresh_interval

    def wanted(self, stored: Sequence[StoredPrice], parked: Iterable[str]) -> list[str]:
        tokens = configured_tokens(self.settings, self.service.sources)
        tokens.extend(r.token for r in stored)
        tokens.extend(parked)
        tokens.extend(sorted(self.service.demanded.copy()))
        return list(dict.fromkeys(tokens))

    def refresh(self, *, force: bool = True, tokens: Iterable[str] = ()) -> RefreshReport:
        """One round; with ``force`` off it is skipped while every wanted row is recent."""
        now = self.service.now()
        stored, parked = self.service.stored_and_parked()
        wanted = list(dict.fromkeys([*self.wanted(stored, parked), *tokens]))
        current = {(r.vs_currency, r.token): r for r in stored}
        if not force and self._recent(current, wanted, now):
            self.service.invalidate()
            return RefreshReport(skipped=True)
        rows: list[StoredPrice] = []
        report = RefreshReport()
        for vs in self.service.currencies:
            found = self.gather(vs, wanted, now)
            for token, (quote, source) in found.items():
                fetched_at = quote.as_of if quote.as_of is not None else now
                old = current.get((vs, token))
                if old is not None and old.source == source and old.fetched_at > fetched_at:
                    quote = Quote(old.price, old.fetched_at)
                    fetched_at = old.fetched_at
                price = storable(quote.price)
                if price is not None:
                    rows.append(StoredPrice(token, vs, price, fetched_at, source, now))
            report.written[vs] = len(found)
            report.missing[vs] = [t for t in wanted if t not in found]
        if rows:
            self.service.put(rows)
        self.service.demanded.difference_update(
            t for t in wanted if all(t not in m for m in report.missing.values())
        )
        self.service.invalidate()
        for vs, missing in report.missing.items():
            if missing:
                log.info("prices: no fresh %s price for %s", vs, ", ".join(missing))
        return report

    def _recent(
        self, current: dict[tuple[str, str], StoredPrice], wanted: list[str], now: int
    ) -> bool:
        horizon = now - self.interval / 2
        return all(
            (row := current.get((vs, token))) is not None and row.checked_at >= horizon
            for vs in self.service.currencies
            for token in wanted
        )

    def gather(self, vs: str, tokens: Sequence[str], now: int) -> dict[str, tuple[Quote, str]]:
        """The first fresh answer for each token, its sources asked in its order, each
        source asked once per pass for all the tokens whose turn it is."""
        found: dict[str, tuple[Quote, str]] = {}
        orders = {t: self.service.sources_for(t) for t in tokens}
        depth = max((len(o) for o in orders.values()), default=0)
        for turn in range(depth):
            asks: dict[int, tuple[PriceSource, list[str]]] = {}
            for token, order in orders.items():
                if token in found or turn >= len(order):
                    continue
                source = order[turn]
                asks.setdefault(id(source), (source, []))[1].append(token)
            for source, batch in asks.values():
                try:
                    answers = quotes_of(source, vs, batch)
                except Exception:  # a broken plugin must not stop the other sources
                    log.exception("prices: source %s failed", source.name)
                    continue
                for token, quote in answers.items():
                    as_of = quote.as_of if quote.as_of is not None else now
                    if self.service.is_fresh(as_of, now):
                        found[token] = (quote, source.name)
        return found

    def run(self, halt: threading.Event) -> None:
        """Round after round until ``halt`` is set. While storage is down the rounds back
        off (``paycore.ops.outages``, one log line per interval) and resume when it answers;
        any other failure is logged and retried at the next interval."""
        guard = LoopGuard.from_settings(
            "price refresher", log, self.settings, pace=min(self.interval, 1.0)
        )
        while not halt.is_set():
            try:
                self.refresh(force=False)
            except StorageUnavailable as exc:
                halt.wait(guard.failed(exc))
                continue
            except Exception:
                log.exception("price refresh failed")
            else:
                guard.succeeded()
            halt.wait(self.interval)
