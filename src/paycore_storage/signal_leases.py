"""The host-signal lease statements (``paycore.storage``: host-signal leases), mixed into
``SqlTx``.

Kept apart from ``sql.py`` because they touch one table of their own and the poll queues'
position column. Each promise is one atomic statement:

- ``claim_signal``: an upsert whose ``DO UPDATE .. WHERE`` only takes a free, lapsed or own
  lease; whether a row came back says who won.
- ``move_signal``: ``UPDATE`` of the lease ``WHERE holder = :holder`` (its row lock, on
  PostgreSQL, makes a concurrent claim wait), then the position's compare-and-set
  ``UPDATE .. WHERE last_seq = :start``; both in the caller's transaction, so a holder that
  lost its lease moves nothing.
"""

from __future__ import annotations

from sqlalchemy import Connection, or_, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from .tables import event_queues, signal_leases


class SignalLeaseStatements:
    """``claim_signal``, ``move_signal`` and ``release_signal`` of ``StorageTx``, on the
    connection of the transaction they run in."""

    @property
    def _c(self) -> Connection:
        raise NotImplementedError

    def claim_signal(self, consumer: str, holder: str, now: int, lease_ms: int) -> bool:
        insert_into = pg_insert if self._c.dialect.name == "postgresql" else sqlite_insert
        claimed = (
            insert_into(signal_leases)
            .values(consumer=consumer, holder=holder, lease_until=now + lease_ms)
            .on_conflict_do_update(
                index_elements=["consumer"],
                set_={"holder": holder, "lease_until": now + lease_ms},
                where=or_(
                    signal_leases.c.holder.is_(None),
                    signal_leases.c.holder == holder,
                    signal_leases.c.lease_until <= now,
                ),
            )
            .returning(signal_leases.c.holder)
        )
        return self._c.execute(claimed).first() is not None

    def move_signal(
        self, consumer: str, holder: str, start: int, to: int, now: int, lease_ms: int
    ) -> bool:
        held = self._c.execute(
            update(signal_leases)
            .where(signal_leases.c.consumer == consumer, signal_leases.c.holder == holder)
            .values(lease_until=now + lease_ms)
        )
        if held.rowcount != 1:
            return False
        moved = self._c.execute(
            update(event_queues)
            .where(event_queues.c.consumer == consumer, event_queues.c.last_seq == start)
            .values(last_seq=to)
        )
        return moved.rowcount == 1

    def release_signal(self, consumer: str, holder: str) -> None:
        self._c.execute(
            update(signal_leases)
            .where(signal_leases.c.consumer == consumer, signal_leases.c.holder == holder)
            .values(holder=None, lease_until=0)
        )
