"""The accounting export's part of the storage contract (``paycore.accounting``).

Keyset batches in a fixed order, each read in a short transaction of its own, so an export of
any size holds one batch in memory and no lock between batches. Each batch starts strictly
after the last row of the one before: no row is read twice or skipped while rows are added.
"""

from __future__ import annotations

from typing import Protocol

from ...domain.records import Invoice, Transaction, TxType

#: (timestamp, chain_id, tx_hash, log_index, token): a transaction row's place in the
#: export's order, and where the next batch starts after.
TransferPlace = tuple[int, int, str, int, str]


class Export(Protocol):
    """``StorageTx``'s export reads: an owner's invoices and transaction rows in batches."""

    def export_invoices(
        self,
        owner: str,
        *,
        start: int,
        end: int | None,
        after: tuple[int, str] | None,
        limit: int,
    ) -> list[Invoice]:
        """Up to ``limit`` of ``owner``'s invoices created in ``[start, end)`` (no upper
        bound when ``end`` is None), ordered by (created_at, guid), after ``after``."""

    def export_transactions(
        self,
        owner: str,
        kind: TxType,
        *,
        start: int,
        end: int | None,
        after: TransferPlace | None,
        limit: int,
    ) -> list[Transaction]:
        """Up to ``limit`` of ``owner``'s ``kind`` rows (reorged ones left out) whose block
        time is in ``[start, end)``, ordered by :data:`TransferPlace`, after ``after``."""
