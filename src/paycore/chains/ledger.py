"""``Gateway.chain_ledger``: what the chain watchers and backends keep in storage -- the
scanning lease and cursor, the recorded transfers, the watched addresses, an owner's
invoices on a chain -- behind one object that holds the storage privately.

The watchers run in the worker and reach storage only through here, so the storage contract
stays the business of the gateway and its services (docs/architecture.md §The unit of work:
each method is one transaction).
"""

from __future__ import annotations

from ..domain.records import Invoice, Transaction
from ..storage import Storage
from .records import ChainCursor


class ChainLedger:
    def __init__(self, storage: Storage) -> None:
        self._storage = storage

    def claim(self, chain_id: int, holder: str, now_ms: int, lease_ms: int) -> ChainCursor | None:
        """Take or renew the chain's scanning lease; None while another holder has it."""
        with self._storage.transaction() as tx:
            return tx.claim_chain(chain_id, holder, now_ms, lease_ms)

    def advance(
        self,
        chain_id: int,
        holder: str,
        number: int,
        block_hash: str | None,
        now_ms: int,
        lease_ms: int,
    ) -> bool:
        """Move the cursor to block ``number`` and renew the lease; False if it was lost."""
        with self._storage.transaction() as tx:
            return tx.advance_chain(chain_id, holder, number, block_hash, now_ms, lease_ms)

    def cursor(self, chain_id: int) -> ChainCursor | None:
        """The chain's cursor and lease as they stand, claiming nothing (``paycore chains
        check``); None before any watcher scanned it."""
        with self._storage.transaction() as tx:
            return tx.get_chain_cursor(chain_id)

    def release(self, chain_id: int, holder: str) -> None:
        """Give the lease up so another watcher may take the chain at once."""
        with self._storage.transaction() as tx:
            tx.release_chain(chain_id, holder)

    def recorded_deposits(self, chain_id: int, from_block: int) -> list[Transaction]:
        """Deposits recorded on the chain from block ``from_block`` on, newest block first."""
        with self._storage.transaction() as tx:
            return tx.recorded_deposits(chain_id, from_block)

    def watched_addresses(self, chain_id: int, deadline_after: int) -> list[str]:
        """Deposit addresses of open invoices, and of those whose deadline is after
        ``deadline_after`` (unix seconds), so late payments are still seen."""
        with self._storage.transaction() as tx:
            return tx.watched_addresses(chain_id, deadline_after)

    def earliest_watched(self, chain_id: int, deadline_after: int) -> int | None:
        """When the oldest invoice ``watched_addresses`` watches was created (unix seconds),
        or None when it watches none."""
        with self._storage.transaction() as tx:
            return tx.earliest_watched(chain_id, deadline_after)

    def invoices_of(
        self, owner: str, chain_id: int, *, limit: int | None = None
    ) -> tuple[list[Invoice], int]:
        """(``owner``'s invoices on the chain, oldest first, at most ``limit``; their total)."""
        with self._storage.transaction() as tx:
            return tx.list_invoices(owner=owner, chain_id=chain_id, limit=limit)
