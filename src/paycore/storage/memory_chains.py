"""The memory store's chain cursors, leases and watched addresses
(``paycore.storage.protocols.chains``), mixed into its transaction class.
"""

from __future__ import annotations

import attrs

from ..chains.records import ChainCursor
from ..domain.machine import OPEN as _OPEN_STATUSES
from .memory_rows import MemoryTxBase


class MemoryChains(MemoryTxBase):
    """The chain methods over the store's ``chain_cursors`` table and its invoices."""

    def claim_chain(
        self, chain_id: int, holder: str, now: int, lease_ms: int
    ) -> ChainCursor | None:
        row = self._t.chain_cursors.get(chain_id) or ChainCursor(chain_id, None, None)
        if row.holder not in (None, holder) and row.lease_until > now:
            return None
        row = attrs.evolve(row, holder=holder, lease_until=now + lease_ms)
        self._t.chain_cursors[chain_id] = row
        return row

    def advance_chain(
        self,
        chain_id: int,
        holder: str,
        block_number: int,
        block_hash: str | None,
        now: int,
        lease_ms: int,
    ) -> bool:
        row = self._t.chain_cursors.get(chain_id)
        if row is None or row.holder != holder:
            return False
        self._t.chain_cursors[chain_id] = attrs.evolve(
            row, block_number=block_number, block_hash=block_hash, lease_until=now + lease_ms
        )
        return True

    def release_chain(self, chain_id: int, holder: str) -> None:
        row = self._t.chain_cursors.get(chain_id)
        if row is not None and row.holder == holder:
            self._t.chain_cursors[chain_id] = attrs.evolve(row, holder=None, lease_until=0)

    def get_chain_cursor(self, chain_id: int) -> ChainCursor | None:
        return self._t.chain_cursors.get(chain_id)

    def watched_addresses(self, chain_id: int, deadline_after: int) -> list[str]:
        return sorted(
            {
                inv.address
                for inv in self._t.invoices.values()
                if inv.chain_id == chain_id
                and (inv.status in _OPEN_STATUSES or inv.deadline >= deadline_after)
            }
        )

    def earliest_watched(self, chain_id: int, deadline_after: int) -> int | None:
        return min(
            (
                inv.created_at
                for inv in self._t.invoices.values()
                if inv.chain_id == chain_id
                and (inv.status in _OPEN_STATUSES or inv.deadline >= deadline_after)
            ),
            default=None,
        )
