"""The payout watch list's part of the storage contract (docs/payouts.md, "Confirmed by
the worker").

``POST /payouts/confirm`` may be handed a hash the node has not mined yet. Storage keeps
such a hash beside its batch, so the worker's payout pass can read it again until it is
mined and settle its rows through the same service code as a confirm. A hash is kept once
per batch however often it is handed in, and dropped once it is mined (or proved not to be
the batch's).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class PayoutWatch(Protocol):
    """``StorageTx``'s payout watch list methods."""

    def watch_payout_hashes(self, batch_id: str, tx_hashes: Sequence[str], now: int) -> None:
        """Keep ``tx_hashes`` for ``batch_id``; a hash already kept stays as it was."""

    def watched_payout_hashes(self, limit: int) -> list[tuple[str, str]]:
        """Up to ``limit`` kept (batch id, hash) pairs, the longest kept first."""

    def unwatch_payout_hash(self, batch_id: str, tx_hash: str) -> None:
        """Forget the hash for the batch (nothing when it was not kept)."""
