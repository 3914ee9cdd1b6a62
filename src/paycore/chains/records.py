"""The record a chain watcher keeps in storage: where it is, and who is scanning.

One row per chain holds both the cursor and the lease, so that moving the cursor and proving
the lease is still held are one statement: a watcher whose lease lapsed and was taken over
cannot move the new holder's cursor (see ``StorageTx.advance_chain``).
"""

from __future__ import annotations

import attrs


@attrs.frozen
class ChainCursor:
    chain_id: int
    #: The last block fully scanned, or None before the first scan.
    block_number: int | None
    #: That block's hash (0x hex), re-checked on the next scan to detect a reorg.
    block_hash: str | None
    #: Who holds the scanning lease, and until when (unix milliseconds).
    holder: str | None = None
    lease_until: int = 0
