"""The memory store's invoices (``paycore.storage.protocols.invoices``), mixed into its
transaction class. The store runs one transaction at a time under its lock, which is stronger
than any row lock ``for_update`` asks for; creation order is the sequence number each
invoice is given at insert.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import attrs

from ..domain.detected import Detected
from ..domain.machine import OPEN as _OPEN_STATUSES
from ..domain.records import Invoice, Refund
from .invoice_read import InvoiceRead, read_from
from .memory_rows import MemoryTxBase, _detached, _page


class MemoryInvoices(MemoryTxBase):
    """The invoice methods over the store's ``invoices`` and ``invoice_seq`` tables."""

    if TYPE_CHECKING:  # ``read_invoice`` reads them too: memory_refunds, memory_detected

        def refunds_of(self, guids: Sequence[str]) -> list[Refund]: ...

        def detected_of(self, guids: Sequence[str]) -> list[Detected]: ...

    def insert_invoice(self, invoice: Invoice) -> None:
        if invoice.guid in self._t.invoices:
            raise ValueError(f"invoice {invoice.guid} already exists")
        self._t.invoices[invoice.guid] = _detached(invoice)
        self._t.last_invoice_seq += 1
        self._t.invoice_seq[invoice.guid] = self._t.last_invoice_seq

    def get_invoice(self, guid: str, *, for_update: bool = False) -> Invoice | None:
        invoice = self._t.invoices.get(guid)
        return None if invoice is None else _detached(invoice)

    def read_invoice(self, guid: str) -> InvoiceRead | None:
        invoice = self.get_invoice(guid)
        open_ = invoice is not None and invoice.status in _OPEN_STATUSES
        return read_from(
            invoice, self.refunds_of([guid]), self.detected_of([guid]) if open_ else ()
        )

    def update_invoice(self, invoice: Invoice) -> None:
        """Raises ``KeyError`` for an unknown guid: an update that silently did nothing
        would hide a lost invoice."""
        if invoice.guid not in self._t.invoices:
            raise KeyError(invoice.guid)
        self._t.invoices[invoice.guid] = _detached(invoice)

    def invoices_at_address(
        self, chain_id: int, address: str, *, for_update: bool = False
    ) -> list[Invoice]:
        found, _ = self.list_invoices(chain_id=chain_id, address=address)
        return found

    def invoices_at_addresses(
        self, chain_id: int, addresses: Sequence[str], *, for_update: bool = False
    ) -> dict[str, list[Invoice]]:
        wanted = set(addresses)
        found: dict[str, list[Invoice]] = {}
        for inv in self._t.invoices.values():
            if inv.chain_id == chain_id and inv.address in wanted:
                found.setdefault(inv.address, []).append(inv)
        return {
            address: [_detached(inv) for inv in sorted(items, key=self._created_order)]
            for address, items in sorted(found.items())
        }

    def update_invoice_states(self, records: Sequence[Invoice]) -> None:
        stored = self._t.invoices
        for invoice in records:
            if invoice.guid not in stored:
                raise KeyError(invoice.guid)
            stored[invoice.guid] = attrs.evolve(
                stored[invoice.guid],
                status=invoice.status,
                paid_amount=invoice.paid_amount,
                payments=invoice.payments,
            )

    def list_invoices(
        self,
        *,
        owner: str | None = None,
        chain_id: int | None = None,
        address: str | None = None,
        offset: int = 0,
        limit: int | None = None,
        newest_first: bool = False,
    ) -> tuple[list[Invoice], int]:
        matches = self._matching(owner, chain_id, address)
        matches.sort(key=self._created_order, reverse=newest_first)
        return [_detached(inv) for inv in _page(matches, offset, limit)], len(matches)

    def _created_order(self, invoice: Invoice) -> int:
        return self._t.invoice_seq[invoice.guid]

    def _matching(
        self, owner: str | None, chain_id: int | None, address: str | None
    ) -> list[Invoice]:
        return [
            inv
            for inv in self._t.invoices.values()
            if (owner is None or inv.owner == owner)
            and (chain_id is None or inv.chain_id == chain_id)
            and (address is None or inv.address == address)
        ]

    def invoices_after(
        self,
        *,
        owner: str | None = None,
        chain_id: int | None = None,
        address: str | None = None,
        after: str | None = None,
        limit: int,
        newest_first: bool = False,
    ) -> list[Invoice] | None:
        matches = self._matching(owner, chain_id, address)
        if after is not None:
            bound = self._t.invoice_seq.get(after)
            if bound is None:
                return None
            matches = [
                inv
                for inv in matches
                if (
                    self._created_order(inv) < bound
                    if newest_first
                    else self._created_order(inv) > bound
                )
            ]
        matches.sort(key=self._created_order, reverse=newest_first)
        return [_detached(inv) for inv in matches[:limit]]

    def count_invoices(
        self, *, owner: str | None = None, chain_id: int | None = None, address: str | None = None
    ) -> int:
        return len(self._matching(owner, chain_id, address))

    def due_for_expiry(self, now: int, limit: int) -> list[str]:
        due = [
            inv
            for inv in self._t.invoices.values()
            if inv.status in _OPEN_STATUSES and inv.deadline < now
        ]
        due.sort(key=lambda inv: (inv.deadline, inv.guid))
        return [inv.guid for inv in due[:limit]]
