"""The memory store's transaction rows (``paycore.storage.protocols.transactions``), mixed
into its transaction class: one row per transfer key, so a deposit seen twice is kept once.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from ..domain.paging import TxPosition, tx_position
from ..domain.records import Transaction, TxType
from .memory_rows import MemoryTxBase, TxKey, _page


def _newest_order(tx: Transaction) -> TxPosition:
    return tx_position(tx)


class MemoryTransactions(MemoryTxBase):
    """The transaction-row methods over the store's ``transactions`` table; counts are
    counted (one process, nothing to keep)."""

    def insert_transaction(self, tx: Transaction) -> bool:
        known = self._t.transactions.get(tx.key)
        if known is not None and not known.reorged:
            return False
        self._t.transactions[tx.key] = tx
        return True

    def insert_transactions(self, records: Sequence[Transaction]) -> list[bool]:
        return [self.insert_transaction(record) for record in records]

    def known_transfers(self, keys: Sequence[TxKey]) -> set[TxKey]:
        rows = self._t.transactions
        return {key for key in keys if key in rows and not rows[key].reorged}

    def recorded_deposits(self, chain_id: int, from_block: int) -> list[Transaction]:
        found = [
            tx
            for tx in self._t.transactions.values()
            if tx.type is TxType.DEPOSIT
            and tx.chain_id == chain_id
            and tx.block_number is not None
            and tx.block_number >= from_block
            and not tx.reorged
        ]
        found.sort(key=lambda tx: (-(tx.block_number or 0), tx.tx_hash, tx.log_index))
        return found

    def mark_reorged(
        self, chain_id: int, tx_hash: str, log_index: int, token: str
    ) -> Transaction | None:
        key = (chain_id, tx_hash, log_index, token)
        known = self._t.transactions.get(key)
        if known is None or known.reorged:
            return None
        flagged = attrs.evolve(known, reorged=True)
        self._t.transactions[key] = flagged
        return flagged

    def list_transactions(
        self, owner: str, *, chain_id: int | None = None, offset: int = 0, limit: int = 200
    ) -> tuple[list[Transaction], int]:
        matches = self._counted_transactions(owner, chain_id)
        matches.sort(key=_newest_order, reverse=True)
        return _page(matches, offset, limit), len(matches)

    def _counted_transactions(self, owner: str, chain_id: int | None) -> list[Transaction]:
        return [
            tx
            for tx in self._t.transactions.values()
            if tx.owner == owner
            and (chain_id is None or tx.chain_id == chain_id)
            and not tx.reorged
        ]

    def transactions_after(
        self,
        owner: str,
        *,
        chain_id: int | None = None,
        after: TxPosition | None = None,
        limit: int,
        newest_first: bool = True,
    ) -> list[Transaction]:
        matches = self._counted_transactions(owner, chain_id)
        if after is not None:
            matches = [
                tx
                for tx in matches
                if (_newest_order(tx) < after if newest_first else _newest_order(tx) > after)
            ]
        matches.sort(key=_newest_order, reverse=newest_first)
        return matches[:limit]

    def count_transactions(self, owner: str, *, chain_id: int | None = None) -> int:
        return len(self._counted_transactions(owner, chain_id))
