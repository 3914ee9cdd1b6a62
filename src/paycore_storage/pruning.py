"""The retention statements (``paycore.storage.protocols.pruning``), mixed into ``SqlTx``:
batches in id order, each a short transaction of the caller's.
"""

from __future__ import annotations

import itertools

from sqlalchemy import RowMapping, delete, func, select

from paycore.storage import PruneBatch

from .statements import _PENDING, SqlTxBase
from .tables import (
    event_queues,
    outbox,
    pow_challenges,
    seen_signatures,
    webhook_attempts,
    webhook_deliveries,
)


class PruningStatements(SqlTxBase):
    """The prune methods of ``StorageTx``, on the transaction's connection."""

    def prune_events(
        self, created_before: int, queue_cap: int, after: int, limit: int
    ) -> PruneBatch:
        """Which events a queue still needs is worked out per owner: the lowest cursor of
        its queues (one grouped read) and, only for owners with a queue behind an event, the
        id of the owner's ``queue_cap``-th newest event (one index probe each). Both only
        move up while this runs -- cursors advance, a new queue starts at the horizon, which
        is past every event it may be owed, and an event added later can only raise the
        owner's ``queue_cap``-th newest -- so a decision made on them stays right until the
        DELETE. The newest event may go too: ids are never handed out again (a sequence on
        PostgreSQL, ``AUTOINCREMENT`` on SQLite), so no later event can take its place."""
        o, q = outbox.c, event_queues.c
        rows = self._all(
            select(o.id, o.owner, o.created_at).where(o.id > after).order_by(o.id).limit(limit)
        )
        old = list(itertools.takewhile(lambda r: r["created_at"] < created_before, rows))
        owners = sorted({r["owner"] for r in old})
        cursors: dict[str, int] = {}
        if owners:
            lowest = (
                select(q.owner, func.min(q.last_seq)).where(q.owner.in_(owners)).group_by(q.owner)
            )
            cursors = {owner: cursor for owner, cursor in self._c.execute(lowest)}
        floors: dict[str, int] = {}

        def still_queued(row: RowMapping) -> bool:
            owner, event_id = row["owner"], row["id"]
            cursor = cursors.get(owner)
            if cursor is None or event_id <= cursor:
                return False
            if owner not in floors:
                nth_newest = (
                    select(o.id)
                    .where(o.owner == owner)
                    .order_by(o.id.desc())
                    .offset(queue_cap - 1)
                    .limit(1)
                )
                floors[owner] = self._c.execute(nth_newest).scalar_one_or_none() or 0
            return bool(event_id >= floors[owner])

        doomed = [r["id"] for r in old if not still_queued(r)]
        if doomed:
            self._c.execute(delete(outbox).where(o.id.in_(doomed)))
        done = len(old) < len(rows) or len(rows) < limit
        return PruneBatch(len(doomed), None if done else rows[-1]["id"])

    def prune_deliveries(self, settled_before: int, after: int, limit: int) -> PruneBatch:
        d, a = webhook_deliveries.c, webhook_attempts.c
        rows = self._all(
            select(d.id, d.status, d.created_at, d.retry_from)
            .where(d.id > after)
            .order_by(d.id)
            .limit(limit)
        )
        old = list(itertools.takewhile(lambda r: r["created_at"] < settled_before, rows))
        settled = [
            r["id"] for r in old if r["status"] != _PENDING and r["retry_from"] < settled_before
        ]
        deleted: list[int] = []
        if settled:
            recent = select(a.delivery_id).where(
                a.delivery_id.in_(settled), a.attempted_at >= settled_before
            )
            busy = set(self._c.execute(recent).scalars())
            doomed = [i for i in settled if i not in busy]
            if doomed:
                # The status and schedule are checked again by the DELETE itself: a
                # redelivery committed since the read above keeps its row (PostgreSQL
                # re-evaluates the WHERE on the row as that redelivery left it).
                gone = self._c.execute(
                    delete(webhook_deliveries)
                    .where(d.id.in_(doomed), d.status != _PENDING, d.retry_from < settled_before)
                    .returning(d.id)
                )
                deleted = list(gone.scalars())
            if deleted:
                self._c.execute(delete(webhook_attempts).where(a.delivery_id.in_(deleted)))
        done = len(old) < len(rows) or len(rows) < limit
        return PruneBatch(len(deleted), None if done else rows[-1]["id"])

    def prune_signatures(self, expired_before: int, limit: int) -> int:
        t = seen_signatures.c
        expired = t.expires_at < expired_before
        some = select(t.digest).where(expired).limit(limit).scalar_subquery()
        # ``expired`` again: a signature re-remembered since the subquery read stays.
        result = self._c.execute(delete(seen_signatures).where(t.digest.in_(some), expired))
        return int(result.rowcount)

    def prune_challenges(self, expired_before: int, limit: int) -> int:
        t = pow_challenges.c
        expired = t.expires_at < expired_before
        some = select(t.challenge).where(expired).limit(limit).scalar_subquery()
        result = self._c.execute(delete(pow_challenges).where(t.challenge.in_(some), expired))
        return int(result.rowcount)
