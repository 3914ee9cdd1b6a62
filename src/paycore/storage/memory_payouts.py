"""The memory store's payout batches (``paycore.storage.payouts``), mixed into its
transaction class; the tables are dicts in the store's snapshot, so a rollback takes a
batch back with the rest."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from ..payouts.records import Payout, PayoutBatch, PayoutStatus


class MemoryPayouts:
    @property
    def _t(self) -> Any:
        raise NotImplementedError

    def insert_payout_batch(self, batch: PayoutBatch, payouts: Sequence[Payout]) -> None:
        if batch.id in self._t.payout_batches:
            raise ValueError(f"payout batch {batch.id} already exists")
        self._t.payout_batches[batch.id] = batch
        rows: dict[tuple[str, int], Payout] = self._t.payouts
        for payout in payouts:
            rows[(batch.id, payout.line)] = payout

    def get_payout_batch(self, batch_id: str) -> PayoutBatch | None:
        found: PayoutBatch | None = self._t.payout_batches.get(batch_id)
        return found

    def payouts_of(self, batch_id: str) -> list[Payout]:
        rows: dict[tuple[str, int], Payout] = self._t.payouts
        return sorted((p for (b, _l), p in rows.items() if b == batch_id), key=lambda p: p.line)

    def settle_payouts(
        self, batch_id: str, call: int, status: PayoutStatus, tx_hash: str, now: int
    ) -> list[Payout]:
        rows: dict[tuple[str, int], Payout] = self._t.payouts
        settled: list[Payout] = []
        for payout in self.payouts_of(batch_id):
            if payout.call == call and payout.status is PayoutStatus.PENDING:
                new = attrs.evolve(payout, status=status, tx_hash=tx_hash, updated_at=now)
                rows[(batch_id, payout.line)] = new
                settled.append(new)
        return settled
