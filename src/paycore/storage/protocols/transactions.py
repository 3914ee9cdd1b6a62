"""The transaction rows' part of the storage contract: deposits and withdrawals as recorded,
the ingest's idempotence and the reorg's take-back (GET /transactions reads them).

What storage owes for it:

- ``insert_transaction`` is idempotent on (chain_id, tx_hash, log_index, token): a deposit seen
  twice, by two threads or after a restart, is counted once. A row flagged ``reorged`` is the
  one exception: the transfer was mined again and the new record replaces it, atomically.
- ``insert_transactions`` is ``insert_transaction`` per record, in order: a batch the watcher
  ingests twice writes nothing the second time, and the counts move once per written row.
- ``mark_reorged`` flags a row once: of concurrent calls one gets the row, so a deposit a
  reorg removed is taken back out once.
- ``count_transactions`` answers from counts the recording transactions keep (inserts, reorg
  flags, revivals), not by counting; rows flagged ``reorged`` are never listed or counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ...domain.paging import TxPosition
from ...domain.records import Transaction

#: (chain_id, tx_hash, log_index, token): one transfer, the transaction rows' unique key.
TransferKey = tuple[int, str, int, str]


class Transactions(Protocol):
    """``StorageTx``'s transaction-row methods: record deposits and withdrawals once, list and
    count an owner's, find the ones a reorg may have removed and flag them."""

    def insert_transaction(self, tx: Transaction) -> bool:
        """Record a deposit or withdrawal; ``False`` (and nothing written) if already known.
        A known row marked ``reorged`` is the one exception: the transfer was mined again,
        and ``tx`` replaces that row (``True``), atomically, so it is counted once more."""

    def insert_transactions(self, records: Sequence[Transaction]) -> list[bool]:
        """``insert_transaction`` for each record, in order (one round trip for the new ones
        where the database allows); returns, per record, whether it was written. The
        counts of ``count_transactions`` follow exactly as for one insert at a time."""

    def known_transfers(self, keys: Sequence[TransferKey]) -> set[TransferKey]:
        """Which of these transfers (chain_id, tx_hash, log_index, token) have a stored row
        not flagged ``reorged``: those ``insert_transaction`` would refuse."""

    def list_transactions(
        self, owner: str, *, chain_id: int | None = None, offset: int = 0, limit: int = 200
    ) -> tuple[list[Transaction], int]:
        """Newest first (timestamp, then tx_hash, log_index, chain_id, token: the
        ``paycore.domain.paging.TxPosition`` order), and the match count
        (``count_transactions``). Rows marked ``reorged`` are left out: their transfers are
        not on the chain."""

    def transactions_after(
        self,
        owner: str,
        *,
        chain_id: int | None = None,
        after: TxPosition | None = None,
        limit: int,
        newest_first: bool = True,
    ) -> list[Transaction]:
        """A keyset page of ``list_transactions``' rows: up to ``limit`` that come after the
        position ``after`` in that order (before it, oldest first, when not
        ``newest_first``), from either end when ``after`` is None."""

    def count_transactions(self, owner: str, *, chain_id: int | None = None) -> int:
        """How many of ``owner``'s transactions ``list_transactions`` shows, from counts the
        recording transactions keep (inserts, reorg flags, revivals), not by counting."""

    def recorded_deposits(self, chain_id: int, from_block: int) -> list[Transaction]:
        """The deposits of ``chain_id`` recorded in blocks ``from_block`` and later (rows with
        a block number, not reorged), newest block first, then tx_hash, log_index."""

    def mark_reorged(
        self, chain_id: int, tx_hash: str, log_index: int, token: str
    ) -> Transaction | None:
        """Flag that transfer's row ``reorged`` and return it as flagged; ``None`` when there
        is no such row or it is flagged already. Atomic: of concurrent calls, one gets it."""
