"""The refunds' part of the storage contract (docs/interface.md, POST /refund).

A refund is its own row, not part of the invoice's: ``Invoice.refunds`` is neither stored by
``insert_invoice`` / ``update_invoice`` nor returned by invoice reads (they come back with
none), and the gateway reads them with ``refunds_of``. The gateway creates and settles refunds
with their invoice's row locked (``get_invoice(..., for_update=True)``), so the check "no more
than was paid is refunded" and the insert that relies on it are one step. What storage owes:

- ``insert_refund`` refuses a duplicate id (``ValueError``).
- ``settle_refund`` moves a refund out of ``pending`` once: of concurrent settles (the
  watcher confirming it, the merchant cancelling it), one wins.
- Refunds come back in the order they were inserted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ...domain.records import Refund


class Refunds(Protocol):
    """``StorageTx``'s refund rows: insert, read, and settle once."""

    def insert_refund(self, refund: Refund) -> None:
        """Store a new refund, every field as given; a duplicate ``id`` raises
        ``ValueError``."""

    def get_refund(self, refund_id: str) -> Refund | None:
        """The refund ``refund_id``, or ``None`` if there is none."""

    def refunds_of(self, guids: Sequence[str]) -> list[Refund]:
        """Every refund of these invoices (any status), by invoice guid, then in the order
        they were inserted: one read for a page of invoices or a batch of events."""

    def pending_refunds(self, chain_id: int, owners: Sequence[str]) -> list[Refund]:
        """The refunds of ``chain_id`` still ``pending`` whose owner is one of ``owners``,
        in the order they were inserted: those a withdrawal the watcher saw may have paid."""

    def settle_refund(self, refund: Refund) -> bool:
        """Store ``refund``'s ``status``, ``tx_hash``, ``log_index`` and ``settled_at`` over
        the refund of the same ``id`` -- only while that one is still ``pending``, as one
        compare-and-set: of concurrent settles (the watcher confirming it, the merchant
        cancelling it) exactly one wins. ``False``, changing nothing, otherwise."""
