"""The payout batches' part of the storage contract (docs/payouts.md).

What storage owes: a batch and its rows are inserted together in one transaction (a batch
is never seen without its rows); ``settle_payouts`` moves only rows still ``pending``, so
of two transactions confirming the same call one settles the rows and the other finds none
(PostgreSQL: the UPDATE's row locks; SQLite and memory run writers one at a time) -- which
is what makes each ``payout.confirmed`` event happen once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ..payouts.records import Payout, PayoutBatch, PayoutStatus


class PayoutStore(Protocol):
    """``StorageTx``'s payout methods."""

    def insert_payout_batch(self, batch: PayoutBatch, payouts: Sequence[Payout]) -> None:
        """Insert the batch and its rows; ``ValueError`` when the batch id exists."""

    def get_payout_batch(self, batch_id: str) -> PayoutBatch | None:
        """The batch with this id, or None; any owner's (the caller checks whose it is)."""

    def payouts_of(self, batch_id: str) -> list[Payout]:
        """The batch's rows, by line."""

    def settle_payouts(
        self, batch_id: str, call: int, status: PayoutStatus, tx_hash: str, now: int
    ) -> list[Payout]:
        """Move the ``pending`` rows of transaction ``call`` to ``status`` with ``tx_hash``;
        returns them as settled, by line (none when no row of the call was pending)."""
