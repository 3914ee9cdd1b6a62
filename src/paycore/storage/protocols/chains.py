"""The chain watchers' part of the storage contract: each chain's cursor and scanning lease,
and the addresses a watcher scans for.

One row per chain: the cursor (last block scanned and its hash) and the lease that lets one
watcher at a time scan the chain, across processes. Times are unix milliseconds. A watcher
that dies holding the lease lets it lapse; the next one resumes at the cursor. What storage
owes:

- ``claim_chain`` gives a chain's lease to one holder at a time: of concurrent claims, one
  wins.
- ``advance_chain`` moves the cursor only while that holder still has the lease (its
  fencing): a watcher whose lease was taken over moves nothing, so an ingest batch that
  advances the cursor in its transaction commits only for the lease's holder.
"""

from __future__ import annotations

from typing import Protocol

from ...chains.records import ChainCursor


class ChainLeases(Protocol):
    """``StorageTx``'s chain cursors and leases."""

    def claim_chain(
        self, chain_id: int, holder: str, now: int, lease_ms: int
    ) -> ChainCursor | None:
        """Take or renew ``chain_id``'s lease for ``holder`` -- when nobody holds it, it has
        lapsed (``lease_until <= now``), or it is ``holder``'s already -- until ``now +
        lease_ms``, and return the cursor (``block_number`` None on first use). ``None`` while
        another holder's lease is live. Atomic against concurrent claims: one winner."""

    def advance_chain(
        self,
        chain_id: int,
        holder: str,
        block_number: int,
        block_hash: str | None,
        now: int,
        lease_ms: int,
    ) -> bool:
        """Set the cursor (forward, or back after a reorg) and renew the lease to ``now +
        lease_ms``, only while ``holder`` is still the holder (a lapsed lease nobody took over
        is still its own). ``False``, changing nothing, once another holder has claimed it."""

    def release_chain(self, chain_id: int, holder: str) -> None:
        """Give up ``holder``'s lease (the cursor stays), so another watcher need not wait
        for it to lapse. A no-op when ``holder`` does not hold it."""

    def get_chain_cursor(self, chain_id: int) -> ChainCursor | None:
        """``chain_id``'s cursor and lease as they stand, without claiming anything; ``None``
        before any watcher has claimed the chain."""


class WatchedAddresses(Protocol):
    """``StorageTx``'s reads of what a chain's watcher must scan: read from the invoices."""

    def watched_addresses(self, chain_id: int, deadline_after: int) -> list[str]:
        """The distinct deposit addresses of ``chain_id``'s invoices that are open (init,
        partialPaid) or whose deadline is at or after ``deadline_after`` (late payments and
        overpayments are still recorded for a while), sorted."""

    def earliest_watched(self, chain_id: int, deadline_after: int) -> int | None:
        """The oldest ``created_at`` among the invoices ``watched_addresses`` watches (the
        same condition), or ``None`` when it watches none: where a new watcher must begin."""
