"""The invoices' part of the storage contract: the invoice rows, their reads and their locks.

What storage owes for it:

- ``insert_invoice`` refuses a duplicate guid (``ValueError``) and writes nothing then.
- ``get_invoice(for_update=True)``, ``invoices_at_address(for_update=True)`` and
  ``invoices_at_addresses(for_update=True)`` lock the rows they return until the transaction
  ends, so two attributions to one invoice (two deposits, a deposit and an expiry) serialise
  instead of both deciding from the same stale record. A batch takes its locks in one global
  order (address, then creation order), so two batches that share addresses queue rather than
  deadlock.
- Order is creation order: the order ``insert_invoice`` was called in, even within one second.
- ``count_invoices`` answers from counts the inserting transactions keep, not by counting,
  and gives the same answer as counting would, inside the transaction as after it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ...domain.records import Invoice
from ..invoice_read import InvoiceRead


class Invoices(Protocol):
    """``StorageTx``'s invoice methods: create, read (plain, locked, whole with refunds, by
    address, by page) and store an invoice's changing state. ``Invoice.refunds`` is never
    stored with the invoice (``paycore.storage.protocols.refunds``)."""

    def insert_invoice(self, invoice: Invoice) -> None:
        """Store a new invoice; a duplicate guid raises ``ValueError``."""

    def get_invoice(self, guid: str, *, for_update: bool = False) -> Invoice | None:
        """The invoice ``guid``, or ``None`` if there is none.

        With ``for_update=True`` the invoice's row is locked until this transaction ends
        (PostgreSQL: ``SELECT ... FOR UPDATE``; SQLite and the memory storage run whole
        transactions one at a time, which is stronger): another transaction that asks for
        the same lock waits, so a read, a decision and the ``update_invoice`` that follows
        are one step. The core relies on it
        to attribute two deposits to one invoice, or a deposit and an expiry, one after the
        other, never both from the same stale record. Without it, a plain read.
        """

    def read_invoice(self, guid: str) -> InvoiceRead | None:
        """The invoice ``guid`` with its refunds, as ``Storage.read_invoice`` reads it
        (the same ``version`` for the same stored state), inside this transaction."""

    def update_invoice(self, invoice: Invoice) -> None:
        """Replace the stored invoice with the same guid (status, paid_amount, payments...)."""

    def invoices_at_address(
        self, chain_id: int, address: str, *, for_update: bool = False
    ) -> list[Invoice]:
        """Every invoice whose deposit address is ``address`` on ``chain_id``, oldest first
        (creation order, as ``list_invoices``)."""

    def invoices_at_addresses(
        self, chain_id: int, addresses: Sequence[str], *, for_update: bool = False
    ) -> dict[str, list[Invoice]]:
        """``invoices_at_address`` for many addresses in one read (the watcher's batch):
        each address that has invoices maps to them, oldest first (creation order); the
        others are absent. ``for_update`` locks every row returned, taken in (address,
        creation order) order, so two batches that share addresses queue rather than
        deadlock."""

    def update_invoice_states(self, records: Sequence[Invoice]) -> None:
        """Store the state of each invoice -- ``status``, ``paid_amount``, ``payments``,
        what deposits, reorgs and deadlines change; every other field is fixed at creation
        -- in one round trip where the database allows. Raises ``KeyError`` for an unknown
        guid, as ``update_invoice`` does."""

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
        """A page of matching invoices in creation order (the order ``insert_invoice`` was
        called in, even within one second; newest first when asked) and the match count
        (``count_invoices``). Skipping ``offset`` rows should cost no more than reading
        the index it orders by."""

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
        """A keyset page: up to ``limit`` matching invoices that follow the invoice with guid
        ``after`` in creation order (older ones when ``newest_first``), from either end of
        the order when ``after`` is None; ``None`` when there is no invoice ``after``. Costs
        the rows it returns, not the rows before them."""

    def count_invoices(
        self, *, owner: str | None = None, chain_id: int | None = None, address: str | None = None
    ) -> int:
        """How many invoices match. By owner (and chain), without reading the invoices: from
        counts the inserting transactions keep, which give the same answer as counting."""

    def due_for_expiry(self, now: int, limit: int) -> list[str]:
        """Guids of init/partialPaid invoices whose deadline is before ``now``."""
