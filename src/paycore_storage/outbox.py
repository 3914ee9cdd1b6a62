"""The outbox's and queues' statements (``paycore.storage.protocols.outbox``), mixed into
``SqlTx``; the host-signal leases' are ``signal_leases.SignalLeaseStatements``.

Event order (docs/decisions.md, "Events"). Queues count event ids, which the database hands
out at insert, so committing writers never wait on each other. On SQLite transactions run one
at a time, so id order is commit order. On PostgreSQL a transaction can take id 5, another
id 6 and commit first; a drain in between must not move a cursor past 5. So before its
first event, a transaction *publishes* the lowest id it may take -- the sequence's next
value -- as a shared advisory lock (which every session sees at once and which ends with
the transaction), and only then takes ids. A drain reads the sequence's last value L, then
the published bounds of the other open transactions, and reads up to the horizon min(L,
lowest bound - 1): every id below it is committed or will never be. An id a writer still
holds is at or above its bound, and a writer that publishes after the drain read L can only
take ids above L. An event is held back while an older one may still commit, never skipped;
only paycore transactions that added events can hold it back, each until it ends.
A transaction that drains after adding events sees its own as settled, as in the in-memory
store. ``drain_queue`` locks the queue's row with ``SELECT .. FOR UPDATE``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

import attrs
from sqlalchemy import (
    BigInteger,
    ColumnElement,
    bindparam,
    func,
    literal,
    literal_column,
    select,
    text,
    update,
)

from paycore.domain.changes import UPDATED
from paycore.domain.records import Json, NewEvent, OutboxEvent, OutboxRead

from .outbox_signal import CHANNEL as OUTBOX_CHANNEL
from .prepared import Prepared, copy_rows
from .rows import event_from_row
from .statements import SqlTxBase
from .tables import event_queues, outbox

log = logging.getLogger("paycore.events")


#: A drain over its cap counts the events it drops up to this many times the cap.
DROPPED_COUNTED = 10


#: Published bounds (module docstring, Event order) are two-key advisory locks: the first
#: key is a namespace taken from the outbox table's oid (so paycore schemas sharing a
#: database seldom see each other's) plus the bound's high 16 bits above 2**32, the second
#: its low 32 bits as a signed int4 (``pg_locks.objid`` shows them unsigned again). The
#: namespace occupies 2**16 first keys from ``ns * 2**16``.
_BOUND_SPAN = 1 << 16


_NAMESPACE = "(CAST(CAST(to_regclass('paycore_outbox') AS OID) AS BIGINT) % 32768 * 65536)"


#: The id the next INSERT will take (a sequence not yet used starts at its last_value).
_NEXT_ID = "CASE WHEN is_called THEN last_value + 1 ELSE last_value END"


_PUBLISH = text(
    f"""
    SELECT pg_advisory_xact_lock_shared(
        CAST({_NAMESPACE} + ({_NEXT_ID}) / 4294967296 AS INTEGER),
        CAST(CASE WHEN ({_NEXT_ID}) % 4294967296 < 2147483648
                  THEN ({_NEXT_ID}) % 4294967296
                  ELSE ({_NEXT_ID}) % 4294967296 - 4294967296 END AS INTEGER)),
           pg_notify('{OUTBOX_CHANNEL}', '')
    FROM paycore_outbox_id_seq
    """
)


#: The highest id handed out so far, whether its transaction has committed or not.
_LAST_ID = literal_column(
    "(SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END"
    " FROM paycore_outbox_id_seq)",
    BigInteger(),
)


#: The lowest bound other open transactions have published, or NULL.
_LOWEST_BOUND = text(
    f"""
    SELECT min((CAST(classid AS BIGINT) - {_NAMESPACE}) * 4294967296
               + CAST(objid AS BIGINT))
    FROM pg_locks
    WHERE locktype = 'advisory' AND objsubid = 2 AND pid <> pg_backend_pid()
      AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND CAST(classid AS BIGINT) >= {_NAMESPACE}
      AND CAST(classid AS BIGINT) < {_NAMESPACE} + {_BOUND_SPAN}
    """
)


#: An outbox event's columns besides its id.
_EVENT_COLUMNS = ("owner", "guid", "payload", "created_at", "type")


#: PostgreSQL: ids for a batch of outbox events, drawn from the table's own sequence in one
#: round trip (the rows then go in by ``COPY``, which cannot return them).
_EVENT_IDS = text(
    f"SELECT nextval(pg_get_serial_sequence('{outbox.name}', 'id')) FROM generate_series(1, :n)"
)


#: SQLite: the outbox's AUTOINCREMENT sequence (the last id it handed out), and a batch of
#: events without RETURNING (``Prepared.run_many``).
_OUTBOX_SEQUENCE = text(f"SELECT seq FROM sqlite_sequence WHERE name = '{outbox.name}'")


_INSERT_EVENTS = Prepared(
    lambda _: outbox.insert().values(
        {name: bindparam(name, type_=outbox.c[name].type) for name in _EVENT_COLUMNS}
    )
)


class OutboxStatements(SqlTxBase):
    """The outbox and queue methods of ``StorageTx``, on the transaction's connection."""

    #: Whether this transaction has published its lowest event id (Event order).
    _published: bool

    def _publish(self) -> None:
        """PostgreSQL: before this transaction takes its first event id, publish the lowest
        one it can take (module docstring, Event order). Never from inside a savepoint that
        may roll back (``insert_transactions``' is the only one, and adds no event): the
        lock would end with the savepoint while the transaction still holds its ids."""
        if self._postgres and not self._published:
            self._c.execute(_PUBLISH)
            self._published = True

    def add_event(
        self, owner: str, guid: str, payload: Json, created_at: int, type: str = UPDATED
    ) -> int:
        self._publish()
        stmt = (
            outbox.insert()
            .values(owner=owner, guid=guid, payload=payload, created_at=created_at, type=type)
            .returning(outbox.c.id)
        )
        event_id: int = self._c.execute(stmt).scalar_one()
        return event_id

    def add_events(self, events: Sequence[NewEvent]) -> list[int]:
        if len(events) < 2:
            return [
                self.add_event(e.owner, e.guid, e.payload, e.created_at, e.type) for e in events
            ]
        self._publish()
        if self._postgres:
            # Ids drawn first (after ``_publish``, as an insert's default would draw them),
            # increasing; the events take them in order, then go in by COPY.
            ids = sorted(self._c.execute(_EVENT_IDS, {"n": len(events)}).scalars())
            copy_rows(
                self._c,
                outbox.name,
                ("id", *_EVENT_COLUMNS),
                (
                    (i, e.owner, e.guid, json.dumps(e.payload), e.created_at, e.type)
                    for i, e in zip(ids, events, strict=True)
                ),
            )
            return ids
        # SQLite: this transaction holds the one write lock and the table is AUTOINCREMENT,
        # so the rows take the ids after the sequence's last, one by one, in the order given.
        # One executemany (SQLAlchemy's RETURNING path builds the statement anew for every
        # batch).
        first = self._c.execute(_OUTBOX_SEQUENCE).scalar() or 0
        _INSERT_EVENTS.run_many(self._c, [attrs.asdict(e, recurse=False) for e in events])
        last = self._c.execute(_OUTBOX_SEQUENCE).scalar() or 0
        if last - first != len(events):  # another writer in this transaction: never
            raise RuntimeError(f"outbox ids {first + 1}..{last} for {len(events)} events")
        return list(range(first + 1, last + 1))

    def _horizon(self, last_id: int) -> int:
        """The highest event id below which nothing can still appear, given ``last_id``, the
        sequence's last value read in an earlier statement (module docstring, Event order)."""
        lowest: int | None = self._c.execute(_LOWEST_BOUND).scalar()
        return last_id if lowest is None else min(last_id, lowest - 1)

    def open_queue(self, consumer: str, owner: str) -> None:
        """A new queue starts at the horizon: after every event that already exists, before
        any still being added."""
        if self._postgres:
            newest = self._horizon(self._c.execute(select(_LAST_ID)).scalar_one())
            start: ColumnElement[Any] = literal(newest, BigInteger())
        else:
            start = select(func.coalesce(func.max(outbox.c.id), 0)).scalar_subquery()
        self._c.execute(
            self._insert(event_queues)
            .values(consumer=consumer, owner=owner, last_seq=start)
            .on_conflict_do_nothing(index_elements=["consumer"])
        )

    def drain_queue(self, consumer: str, cap: int) -> list[OutboxEvent]:
        """An unknown consumer has nothing queued, so it drains to ``[]``. Reads at most
        ``cap`` events, newest first from the horizon down, whatever the backlog; how many
        older ones that drops is counted only up to ``DROPPED_COUNTED`` caps."""
        if cap < 1:
            raise ValueError("cap must be at least 1")
        # The lock makes a concurrent drain of this queue wait here, then read the cursor
        # this one leaves behind. The sequence is read here, before the published bounds.
        last_id = _LAST_ID if self._postgres else literal(None, BigInteger())
        queue = self._one(
            select(event_queues.c.owner, event_queues.c.last_seq, last_id.label("last_id"))
            .where(event_queues.c.consumer == consumer)
            .with_for_update(of=event_queues)
        )
        if queue is None:
            return []
        pending = [outbox.c.owner == queue["owner"], outbox.c.id > queue["last_seq"]]
        horizon: int | None = None
        if queue["last_id"] is not None:
            horizon = self._horizon(queue["last_id"])
            if horizon <= queue["last_seq"]:
                return []
            pending.append(outbox.c.id <= horizon)
        newest_first = [outbox.c.id.desc()]
        newest = self._all(select(outbox).where(*pending).order_by(*newest_first).limit(cap))
        if not newest:
            return []
        if len(newest) == cap:
            self._warn_dropped(consumer, cap, pending, newest_first)
        self._c.execute(
            update(event_queues)
            .where(event_queues.c.consumer == consumer)
            .values(last_seq=newest[0]["id"] if horizon is None else horizon)
        )
        return [event_from_row(row) for row in reversed(newest)]

    def read_outbox(self, consumer: str, cap: int) -> OutboxRead | None:
        """As ``drain_queue``, over every owner and without moving the position."""
        if cap < 1:
            raise ValueError("cap must be at least 1")
        last_id = _LAST_ID if self._postgres else literal(None, BigInteger())
        queue = self._one(
            select(event_queues.c.last_seq, last_id.label("last_id")).where(
                event_queues.c.consumer == consumer
            )
        )
        if queue is None:
            return None
        start: int = queue["last_seq"]
        pending = [outbox.c.id > start]
        horizon: int | None = None
        if queue["last_id"] is not None:
            horizon = self._horizon(queue["last_id"])
            if horizon <= start:
                return OutboxRead(start, [], start)
            pending.append(outbox.c.id <= horizon)
        return self._outbox_range(pending, cap, start, horizon)

    def _outbox_range(
        self, pending: list[ColumnElement[bool]], cap: int, start: int, horizon: int | None
    ) -> OutboxRead:
        """Up to ``cap`` events after ``start`` that match ``pending``: the read reaches the
        horizon unless the cap cut it short (then only its last event)."""
        rows = self._all(select(outbox).where(*pending).order_by(outbox.c.id).limit(cap))
        events = [event_from_row(row) for row in rows]
        if len(events) == cap or horizon is None:
            upto = events[-1].id if events else start
        else:
            upto = horizon
        return OutboxRead(start, events, upto)

    def outbox_since(self, after: int | None, cap: int, owner: str | None = None) -> OutboxRead:
        """As ``read_outbox`` from a position the caller holds (a web process's WebSocket
        feed, a resuming socket); ``owner`` narrows it to one owner's rows (their index)."""
        if cap < 1:
            raise ValueError("cap must be at least 1")
        horizon: int | None = None
        if self._postgres:
            horizon = self._horizon(self._c.execute(select(_LAST_ID)).scalar_one())
        if after is None:
            if horizon is None:
                horizon = self._c.execute(
                    select(func.coalesce(func.max(outbox.c.id), 0))
                ).scalar_one()
            return OutboxRead(horizon, [], horizon)
        pending = [outbox.c.id > after]
        if owner is not None:
            pending.append(outbox.c.owner == owner)
        if horizon is not None:
            if horizon <= after:
                return OutboxRead(after, [], after)
            pending.append(outbox.c.id <= horizon)
        return self._outbox_range(pending, cap, after, horizon)

    def move_queue(self, consumer: str, start: int, to: int) -> bool:
        moved = self._c.execute(
            update(event_queues)
            .where(event_queues.c.consumer == consumer, event_queues.c.last_seq == start)
            .values(last_seq=to)
        )
        return bool(moved.rowcount)

    def _warn_dropped(
        self,
        consumer: str,
        cap: int,
        pending: list[ColumnElement[bool]],
        order: list[Any],
    ) -> None:
        """Count the events below the ``cap`` newest, up to ``DROPPED_COUNTED`` times
        ``cap`` of them: the number when it is modest, a floor when a backlog is huge, at a
        cost that does not grow with the backlog."""
        most = DROPPED_COUNTED * cap
        beyond = select(outbox.c.id).where(*pending).order_by(*order).offset(cap).limit(most)
        dropped = self._c.execute(select(func.count()).select_from(beyond.subquery())).scalar_one()
        if dropped:
            log.warning(
                "event queue %s over its cap of %d: dropped %s oldest events",
                consumer,
                cap,
                dropped if dropped < most else f"at least {most}",
            )

    def close_queue(self, consumer: str) -> None:
        self._delete(event_queues, event_queues.c.consumer == consumer)
