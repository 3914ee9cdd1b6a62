"""The memory store's refund rows (``paycore.storage.protocols.refunds``), mixed into its
transaction class.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from ..domain.records import Refund, RefundStatus
from .memory_rows import MemoryTxBase


class MemoryRefunds(MemoryTxBase):
    """The refund methods over the store's ``refunds`` table (insertion order)."""

    def insert_refund(self, refund: Refund) -> None:
        if refund.id in self._t.refunds:
            raise ValueError(f"refund {refund.id} already exists")
        self._t.refunds[refund.id] = refund

    def get_refund(self, refund_id: str) -> Refund | None:
        return self._t.refunds.get(refund_id)

    def refunds_of(self, guids: Sequence[str]) -> list[Refund]:
        wanted = set(guids)
        found = [r for r in self._t.refunds.values() if r.guid in wanted]
        order = {guid: n for n, guid in enumerate(sorted(wanted))}
        return sorted(found, key=lambda r: order[r.guid])  # stable: insertion order kept

    def pending_refunds(self, chain_id: int, owners: Sequence[str]) -> list[Refund]:
        wanted = set(owners)
        return [
            r
            for r in self._t.refunds.values()
            if r.chain_id == chain_id and r.status is RefundStatus.PENDING and r.owner in wanted
        ]

    def settle_refund(self, refund: Refund) -> bool:
        stored = self._t.refunds.get(refund.id)
        if stored is None or stored.status is not RefundStatus.PENDING:
            return False
        self._t.refunds[refund.id] = attrs.evolve(
            stored,
            status=refund.status,
            tx_hash=refund.tx_hash,
            log_index=refund.log_index,
            settled_at=refund.settled_at,
        )
        return True
