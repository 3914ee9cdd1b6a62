"""The memory store's detected transfers (``paycore.storage.protocols.detected``), mixed
into its transaction class: each chain's set is one dict, replaced whole.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..domain.detected import Detected
from .memory_rows import MemoryTxBase


class MemoryDetected(MemoryTxBase):
    """The detected-transfer methods over the store's ``detected`` table."""

    def replace_detected(self, chain_id: int, found: Sequence[Detected]) -> None:
        rows = {d.key: d for d in found if d.chain_id == chain_id}
        if rows:
            self._t.detected[chain_id] = rows
        else:
            self._t.detected.pop(chain_id, None)

    def detected_of(self, guids: Sequence[str]) -> list[Detected]:
        wanted = set(guids)
        found = [d for rows in self._t.detected.values() for d in rows.values() if d.guid in wanted]
        return sorted(
            found, key=lambda d: (d.guid, d.block_number, d.tx_hash, d.log_index, d.token)
        )
