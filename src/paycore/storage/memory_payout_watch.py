"""The memory store's payout watch list (``paycore.storage.payout_watch``), mixed into its
transaction class; the list is a dict in the store's snapshot, so a rollback takes it back."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class MemoryPayoutWatch:
    @property
    def _t(self) -> Any:
        raise NotImplementedError

    def watch_payout_hashes(self, batch_id: str, tx_hashes: Sequence[str], now: int) -> None:
        kept: dict[tuple[str, str], int] = self._t.payout_watch
        for tx_hash in tx_hashes:
            kept.setdefault((batch_id, tx_hash), now)

    def watched_payout_hashes(self, limit: int) -> list[tuple[str, str]]:
        kept: dict[tuple[str, str], int] = self._t.payout_watch
        ordered = sorted(kept.items(), key=lambda item: (item[1], item[0]))
        return [key for key, _at in ordered[:limit]]

    def unwatch_payout_hash(self, batch_id: str, tx_hash: str) -> None:
        kept: dict[tuple[str, str], int] = self._t.payout_watch
        kept.pop((batch_id, tx_hash), None)
