"""``Gateway.search``: the owner's invoices found by filters and text, in cursor pages, and
the figures of the dashboard's chart (``GET /invoices`` with filters, ``GET /stats``;
docs/interface.md).

The query's values are checked here, once, for every caller (the HTTP handler is a thin
reader of the query): a status that does not exist, a token no chain has, a text too short
for an index to narrow, a range the wrong way round or over :data:`STATS_MAX_DAYS` is an
``InvalidInput`` naming its field, never an empty answer that looks like "nothing found".
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Sequence
from decimal import Decimal, localcontext
from typing import Protocol

import attrs

from ..config import Settings
from ..domain.aliases import resolve_token
from ..domain.money import MONEY_CONTEXT, normalize, plain_text
from ..domain.paging import Page, page_from, read_cursor
from ..domain.records import Invoice, Json, Status
from ..domain.tokens import NATIVE
from ..errors import InvalidInput
from ..storage import Storage
from ..storage.protocols.detected import DetectedTransfers
from ..storage.protocols.refunds import Refunds
from ..storage.search import MAX_TEXT, MIN_TEXT, InvoiceFilter, StatsRow

#: A filtered list counts its matches up to this many (``total``; ``totalCapped`` past it).
COUNT_CAP = 1000
#: The longest range ``GET /stats`` sums over.
STATS_MAX_DAYS = 366
#: ``tzOffset`` bounds, in minutes (UTC-14:00 to UTC+14:00).
MAX_TZ_MINUTES = 14 * 60
DAY = 86_400

_STATUSES = {s.value: s for s in Status}


def invoice_filter(
    settings: Settings,
    owner: str,
    *,
    statuses: Sequence[str] = (),
    created_from: int | None = None,
    created_to: int | None = None,
    chain_id: int | None = None,
    token: str | None = None,
    text: str | None = None,
) -> InvoiceFilter:
    """The :class:`InvoiceFilter` of a query's values, each checked."""
    chosen: list[Status] = []
    for name in statuses:
        if name not in _STATUSES:
            raise InvalidInput("status", f"unknown status {name[:40]!r}")
        if _STATUSES[name] not in chosen:
            chosen.append(_STATUSES[name])
    if created_from is not None and created_to is not None and created_to <= created_from:
        raise InvalidInput("createdTo", "must be after createdFrom")
    if chain_id is not None:
        settings.chain(chain_id)
    if text is not None:
        text = text.strip()
        if len(text) < MIN_TEXT:
            raise InvalidInput("q", f"at least {MIN_TEXT} characters")
        if len(text) > MAX_TEXT:
            raise InvalidInput("q", f"at most {MAX_TEXT} characters")
        if not text.isprintable():
            # Newlines join an invoice's terms (``search_text``): no search may span two.
            raise InvalidInput("q", "one line of printable text")
        text = text.lower()
    return InvoiceFilter(
        owner,
        tuple(sorted(chosen, key=lambda s: s.value)),
        created_from,
        created_to,
        chain_id,
        None if token is None else _token(settings, token, chain_id),
        text,
    )


def tz_minutes(raw: str | None) -> int:
    """``tzOffset``: minutes east of UTC, 0 when not given."""
    if raw is None:
        return 0
    text = raw[1:] if raw.startswith("-") else raw
    if not (text.isascii() and text.isdigit() and len(text) <= 3):
        raise InvalidInput("tzOffset", "must be whole minutes east of UTC, like 60 or -300")
    minutes = int(raw)
    if not -MAX_TZ_MINUTES <= minutes <= MAX_TZ_MINUTES:
        raise InvalidInput("tzOffset", f"between -{MAX_TZ_MINUTES} and {MAX_TZ_MINUTES}")
    return minutes


def _token(settings: Settings, raw: str, chain_id: int | None) -> str:
    """``raw`` (``{chainId}:{address}`` as an invoice's ``token`` shows it, or
    ``{chainId}:{SYMBOL}``) as invoices store it, when its chain has the token: among its
    ``tokens``, described in ``token_info``, priced, or the native coin."""
    found = resolve_token(settings, raw, "token", chain_id=chain_id)
    config = settings.chain(found.chain_id, "token")
    if chain_id is not None and found.chain_id != chain_id:
        raise InvalidInput("token", f"is on chain {found.chain_id}, not chainId {chain_id}")
    text = str(found)
    priced = {key.lower() for key in settings.prices}
    known = {*config.tokens, *config.token_info, NATIVE}
    if found.address not in known and text.lower() not in priced:
        raise InvalidInput("token", f"no token {found.address} on chain {found.chain_id}")
    return text


@attrs.frozen
class Found:
    """A page of a search, and whether its ``total`` stopped counting at the cap."""

    page: Page[Invoice]
    capped: bool


class AttachTx(Refunds, DetectedTransfers, Protocol):
    """What finishing an invoice for a reader reads: its refunds and its detected transfers."""


class InvoiceSearchService:
    """``Gateway.search``: built from storage, settings, the clock and the gateway's way of
    finishing invoices it hands out (refunds attached, lazy expiry applied)."""

    def __init__(
        self,
        storage: Storage,
        settings: Settings,
        attach: Callable[[AttachTx, list[Invoice]], list[Invoice]],
        expire_due: Callable[[list[Invoice]], list[Invoice]],
    ) -> None:
        self._storage = storage
        self._settings = settings
        self._attach = attach
        self._expire_due = expire_due

    def page(self, where: InvoiceFilter, cursor: str, limit: int) -> Found:
        """One cursor page of the matches, newest first (``paycore.domain.paging``). A
        cursor's position is any of the owner's invoices: one that stopped matching (paid
        since) still marks where the walk stands."""
        at = read_cursor(cursor, "invoices")
        after = at.position if isinstance(at.position, str) else None
        with self._storage.transaction() as tx:
            if after is not None:
                position = tx.get_invoice(after)
                if position is None or position.owner != where.owner:
                    raise InvalidInput("cursor", "no such position in this invoices list")
            fetched = tx.search_invoices(
                where, after=after, limit=limit + 1, newest_first=at.direction == "older"
            )
            counted = tx.count_invoice_matches(where, COUNT_CAP + 1)
            if fetched is None:
                raise InvalidInput("cursor", "no such position in this invoices list")
            fetched = self._attach(tx, fetched)
        total = min(counted, COUNT_CAP)
        page = page_from(at, fetched, limit=limit, total=total, position=lambda i: i.guid)
        page = attrs.evolve(page, items=self._expire_due(page.items))
        return Found(page, counted > COUNT_CAP)

    def stats(
        self,
        owner: str,
        *,
        start: int,
        end: int,
        currency: str | None = None,
        tz_minutes: int = 0,
    ) -> Json:
        """GET /stats: revenue per day and by token in ``currency``, counts by status, over
        the invoices ``owner`` created in ``[start, end)``; every day of the range listed."""
        if end <= start:
            raise InvalidInput("to", "must be after from")
        if end - start > STATS_MAX_DAYS * DAY:
            raise InvalidInput("to", f"at most {STATS_MAX_DAYS} days after from")
        if not -MAX_TZ_MINUTES <= tz_minutes <= MAX_TZ_MINUTES:
            raise InvalidInput("tzOffset", f"between -{MAX_TZ_MINUTES} and {MAX_TZ_MINUTES}")
        known = (self._settings.vs_currency, *self._settings.vs_currencies)
        chosen = (currency or self._settings.vs_currency).lower()
        if chosen not in known:
            raise InvalidInput("currency", f"not a configured currency: {chosen[:16]!r}")
        offset = tz_minutes * 60
        with self._storage.transaction() as tx:
            rows = tx.invoice_stats(owner, start=start, end=end, offset=offset)
        return _stats_wire(rows, start, end, chosen, tz_minutes)


def _stats_wire(
    rows: Sequence[StatsRow], start: int, end: int, currency: str, tz_minutes: int
) -> Json:
    offset = tz_minutes * 60
    first, last = (start + offset) // DAY, (end - 1 + offset) // DAY
    days: dict[int, list[Decimal | int]] = {d: [Decimal(0), 0, 0] for d in range(first, last + 1)}
    tokens: dict[tuple[int, str], list[Decimal | int]] = {}
    statuses = {s.value: 0 for s in Status}
    total = Decimal(0)
    with localcontext(MONEY_CONTEXT):
        for row in rows:
            revenue = row.paid if row.vs_currency == currency else Decimal(0)
            paid = row.invoices if row.status is Status.PAID else 0
            for figures in (
                days[row.day],
                tokens.setdefault((row.chain_id, row.token), [Decimal(0), 0, 0]),
            ):
                figures[0] += revenue
                figures[1] += row.invoices
                figures[2] += paid
            statuses[row.status.value] += row.invoices
            total += revenue
    return {
        "from": start,
        "to": end,
        "currency": currency,
        "tzOffset": tz_minutes,
        "revenue": _money(total),
        "days": [
            {
                "day": datetime.date.fromordinal(_EPOCH + day).isoformat(),
                "start": max(day * DAY - offset, start),
                "revenue": _money(figures[0]),
                "invoices": figures[1],
                "paid": figures[2],
            }
            for day, figures in days.items()
        ],
        "byToken": [
            {
                "chainId": chain_id,
                "token": token,
                "revenue": _money(figures[0]),
                "invoices": figures[1],
                "paid": figures[2],
            }
            for (chain_id, token), figures in sorted(tokens.items())
        ],
        "byStatus": statuses,
    }


#: The proleptic ordinal of 1970-01-01: day ``n`` since the epoch is ordinal ``_EPOCH + n``.
_EPOCH = datetime.date(1970, 1, 1).toordinal()


def _money(value: Decimal | int) -> str:
    return plain_text(normalize(Decimal(value)))
