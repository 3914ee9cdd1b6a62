"""What a chain backend offers the core; backends are plugins (``paycore_chain_backends``).

Only deposit-address derivation is needed by the core today (POST /invoice without an
``address``); the watcher and transaction builders join this Protocol with the chain issues.
"""

from __future__ import annotations

from typing import Protocol


class ChainBackend(Protocol):
    #: The chain ids this backend serves.
    chain_ids: frozenset[int]

    def deposit_address(self, owner: str, chain_id: int, index: int) -> str:
        """The owner's deposit address number ``index``, computed without any RPC."""
