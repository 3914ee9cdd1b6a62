"""The memory store's invoice search (``paycore.storage.search``), mixed into its transaction
class: the filter's own rule over every stored invoice, a scan, which is what a store for
tests and demos can afford. The SQL stores answer the same from indexes."""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Sequence
from decimal import Decimal, localcontext
from typing import Any

import attrs

from ..domain.money import MONEY_CONTEXT, normalize
from ..domain.records import Invoice, Status
from .search import InvoiceFilter, StatsRow

_DAY = 86_400


class MemorySearch:
    """``search_invoices``, ``count_invoice_matches`` and ``invoice_stats`` over the store's
    ``invoices`` table, in its creation order (``invoice_seq``)."""

    @property
    def _t(self) -> Any:
        raise NotImplementedError

    def search_invoices(
        self, where: InvoiceFilter, *, after: str | None, limit: int, newest_first: bool = True
    ) -> list[Invoice] | None:
        seq: dict[str, int] = self._t.invoice_seq

        def key(invoice: Invoice) -> tuple[int, int]:
            return (invoice.created_at, seq[invoice.guid])

        bound: tuple[int, int] | None = None
        if after is not None:
            if after not in seq:
                return None
            bound = key(self._t.invoices[after])
        found = [
            invoice
            for invoice in self._t.invoices.values()
            if where.matches(invoice)
            and (bound is None or (key(invoice) < bound if newest_first else key(invoice) > bound))
        ]
        found.sort(key=key, reverse=newest_first)
        # ``data`` is a dict: the caller gets its own, as from every read of this store.
        return [attrs.evolve(i, data=copy.deepcopy(i.data)) for i in found[:limit]]

    def count_invoice_matches(self, where: InvoiceFilter, cap: int) -> int:
        return min(sum(1 for i in self._t.invoices.values() if where.matches(i)), cap)

    def invoice_stats(
        self, owner: str, *, start: int, end: int, offset: int = 0
    ) -> Sequence[StatsRow]:
        counts: Counter[tuple[int, int, str, Status, str]] = Counter()
        sums: dict[tuple[int, int, str, Status, str], Decimal] = {}
        for invoice in self._t.invoices.values():
            if invoice.owner != owner or not start <= invoice.created_at < end:
                continue
            key = (
                (invoice.created_at + offset) // _DAY,
                invoice.chain_id,
                invoice.token,
                invoice.status,
                invoice.vs_currency,
            )
            counts[key] += 1
            with localcontext(MONEY_CONTEXT):  # wide enough: a sum is never rounded
                sums[key] = sums.get(key, Decimal(0)) + invoice.paid_amount
        return [
            StatsRow(*key, invoices=counts[key], paid=normalize(sums[key]))
            for key in sorted(counts, key=lambda k: (k[0], k[1], k[2], k[3].value, k[4]))
        ]
