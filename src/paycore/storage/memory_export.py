"""The memory store's accounting export reads (``paycore.storage.protocols.export``), mixed
into its transaction class.
"""

from __future__ import annotations

from ..domain.records import Invoice, Transaction, TxType
from .contract import TransferPlace
from .memory_rows import MemoryTxBase, _detached


def _place(tx: Transaction) -> TransferPlace:
    return (tx.timestamp, tx.chain_id, tx.tx_hash, tx.log_index, tx.token)


class MemoryExport(MemoryTxBase):
    """The export's keyset batches over the store's invoices and transaction rows."""

    def export_invoices(
        self,
        owner: str,
        *,
        start: int,
        end: int | None,
        after: tuple[int, str] | None,
        limit: int,
    ) -> list[Invoice]:
        found = [
            inv
            for inv in self._t.invoices.values()
            if inv.owner == owner
            and inv.created_at >= start
            and (end is None or inv.created_at < end)
            and (after is None or (inv.created_at, inv.guid) > after)
        ]
        found.sort(key=lambda inv: (inv.created_at, inv.guid))
        return [_detached(inv) for inv in found[:limit]]

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
        found = [
            tx
            for tx in self._t.transactions.values()
            if tx.owner == owner
            and tx.type is kind
            and not tx.reorged
            and tx.timestamp >= start
            and (end is None or tx.timestamp < end)
            and (after is None or _place(tx) > after)
        ]
        found.sort(key=_place)
        return found[:limit]
