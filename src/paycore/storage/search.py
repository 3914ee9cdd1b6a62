"""The invoice search's part of the storage contract: an owner's invoices filtered by status,
creation time, chain, token and text, in keyset pages; and the aggregates the dashboard's
chart is drawn from (``GET /invoices`` with filters, ``GET /stats``; docs/interface.md).

Why here and not in ``list_invoices``: that method serves the watcher and the plain list
as well, and every store already keeps it fast by ``(owner, seq)``; a search has other
indexes to use (docs/performance.md, "Invoice search"), and a cap on what it counts.

The text an invoice is found by is :func:`search_text` of its description and ``data``,
computed in Python when the invoice is stored (the SQL stores keep it in a column of its
own, revision 0019; the memory store computes it when it reads) so that every store
lowercases and joins it the same way, and a search gives the same rows on all of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any, Protocol

import attrs

from ..domain.records import Invoice, Status

#: A search's text must be at least this long: shorter, a trigram index cannot narrow it.
MIN_TEXT = 3
#: And at most this long (an order id, a word of a description; not a document).
MAX_TEXT = 100
#: The longest stored search text: a description and a ``data`` object are bounded by the
#: invoice's own limits, but the index entry should be too.
MAX_SEARCH_TEXT = 2000


def search_text(description: str, data: Any) -> str:
    """What an invoice is found by: its description and every string and number inside
    ``data`` (keys left out: ``orderId`` is not what a merchant types), lowercased and
    joined by newlines, which no search text contains."""
    parts = [description]
    _values(data, parts)
    return "\n".join(p for p in parts if p).lower()[:MAX_SEARCH_TEXT]


def _values(value: Any, into: list[str]) -> None:
    if isinstance(value, dict):
        for inner in value.values():
            _values(inner, into)
    elif isinstance(value, list):
        for inner in value:
            _values(inner, into)
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, str | int | float):
        into.append(str(value))


def invoice_search_text(invoice: Invoice) -> str:
    return search_text(invoice.description, invoice.data)


@attrs.frozen
class InvoiceFilter:
    """Which of ``owner``'s invoices a search keeps; every field set narrows it. ``text`` is
    already lowercased (:meth:`matches` and the SQL stores compare it as it is)."""

    owner: str
    statuses: tuple[Status, ...] = ()
    created_from: int | None = None  # inclusive, unix seconds
    created_to: int | None = None  # exclusive
    chain_id: int | None = None
    token: str | None = None
    text: str | None = None

    def matches(self, invoice: Invoice) -> bool:
        """The rule every store follows (the memory store applies it as it is)."""
        return (
            invoice.owner == self.owner
            and (not self.statuses or invoice.status in self.statuses)
            and (self.created_from is None or invoice.created_at >= self.created_from)
            and (self.created_to is None or invoice.created_at < self.created_to)
            and (self.chain_id is None or invoice.chain_id == self.chain_id)
            and (self.token is None or invoice.token == self.token)
            and (self.text is None or self.text in invoice_search_text(invoice))
        )


@attrs.frozen
class StatsRow:
    """One group of ``invoice_stats``: the invoices created on ``day`` (days since the epoch,
    counted from ``offset`` seconds east of UTC) with this chain, token, status and
    currency; how many, and the sum of their ``paid_amount`` (exact)."""

    day: int
    chain_id: int
    token: str
    status: Status
    vs_currency: str
    invoices: int
    paid: Decimal


class InvoiceSearch(Protocol):
    """``StorageTx``'s search methods."""

    def search_invoices(
        self, where: InvoiceFilter, *, after: str | None, limit: int, newest_first: bool = True
    ) -> list[Invoice] | None:
        """Up to ``limit`` invoices matching ``where``, ordered by ``created_at`` and, within
        a second, by creation order (newest first when asked), after the invoice with guid
        ``after`` in that order -- which need not match ``where`` itself -- or from that end
        when ``after`` is None; ``None`` when there is no invoice ``after``. By time first,
        not creation order alone as ``invoices_after``: a time range and a status are then
        one range of an index, read in order. Refunds not attached."""

    def count_invoice_matches(self, where: InvoiceFilter, cap: int) -> int:
        """How many invoices match ``where``, counting no further than ``cap``: the answer
        is ``min(matches, cap)``, and costs at most ``cap`` rows."""

    def invoice_stats(
        self, owner: str, *, start: int, end: int, offset: int = 0
    ) -> Sequence[StatsRow]:
        """``owner``'s invoices created in ``[start, end)`` grouped by day (shifted by
        ``offset`` seconds), chain, token, status and currency, in that order of keys."""
