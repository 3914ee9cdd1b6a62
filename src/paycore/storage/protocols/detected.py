"""The detected transfers' part of the storage contract (docs/chains.md, Detection).

Transfers mined but not yet ``confirmations`` deep, provisional: rows of their own, never part
of an invoice's row. The watcher replaces a chain's whole set each pass, so
``replace_detected`` is idempotent (doing it twice with one list changes nothing) and leaves
other chains' rows alone; a public read asks for one invoice's (an indexed lookup by guid).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ...domain.detected import Detected


class DetectedTransfers(Protocol):
    """``StorageTx``'s detected-transfer methods: the watcher's replace, the reader's lookup."""

    def replace_detected(self, chain_id: int, found: Sequence[Detected]) -> None:
        """Make ``found`` the detected transfers of ``chain_id``: every row of that chain
        not in it is dropped, every one in it stored with every field as given, keyed by
        (chain_id, tx_hash, log_index, token) -- a key given twice keeps the last. Other
        chains' rows are left alone (and a row of another chain in ``found`` is ignored).
        Doing it twice with the same list changes nothing."""

    def detected_of(self, guids: Sequence[str]) -> list[Detected]:
        """The detected transfers of these invoices, by guid, then oldest first (block
        number, then tx hash, log index and token)."""
