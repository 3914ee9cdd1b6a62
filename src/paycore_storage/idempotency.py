"""The idempotency keys' statements (``paycore.storage.idempotency``), mixed into ``SqlTx``.

A claim is ``INSERT .. ON CONFLICT DO NOTHING`` on the (scope, route, key) primary key. On
PostgreSQL a second transaction inserting the same key waits on the first one's uncommitted
row and, under READ COMMITTED, then reads what it committed (or inserts, if it rolled back);
SQLite runs write transactions one at a time. Either way concurrent retries of one key run
the write once.
"""

from __future__ import annotations

from sqlalchemy import ColumnElement, Connection, and_, delete, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from paycore.storage.idempotency import IdempotentAnswer

from .tables import idempotency_keys

_T = idempotency_keys.c


def _this(scope: str, route: str, key: str) -> ColumnElement[bool]:
    return and_(_T.scope == scope, _T.route == route, _T.key == key)


class IdempotencyStatements:
    """``claim_idempotency_key``, ``store_idempotent_answer`` and ``prune_idempotency_keys``
    of ``StorageTx``, on the connection of the transaction they run in."""

    @property
    def _c(self) -> Connection:
        raise NotImplementedError

    def claim_idempotency_key(
        self, scope: str, route: str, key: str, fingerprint: str, *, now: int, expires_before: int
    ) -> IdempotentAnswer | None:
        this = _this(scope, route, key)
        self._c.execute(delete(idempotency_keys).where(this, _T.created_at < expires_before))
        insert_into = pg_insert if self._c.dialect.name == "postgresql" else sqlite_insert
        claim = (
            insert_into(idempotency_keys)
            .values(
                scope=scope,
                route=route,
                key=key,
                fingerprint=fingerprint,
                created_at=now,
                status=0,
                content_type="",
                body=b"",
            )
            .on_conflict_do_nothing()
            .returning(_T.scope)
        )
        if self._c.execute(claim).first() is not None:
            return None
        row = self._c.execute(
            select(_T.fingerprint, _T.created_at, _T.status, _T.content_type, _T.body).where(this)
        ).first()
        if row is None:  # deleted between the two statements by a prune: claim it anew
            return self.claim_idempotency_key(
                scope, route, key, fingerprint, now=now, expires_before=expires_before
            )
        return IdempotentAnswer(row[0], int(row[1]), int(row[2]), str(row[3]), bytes(row[4]))

    def store_idempotent_answer(
        self, scope: str, route: str, key: str, *, status: int, content_type: str, body: bytes
    ) -> None:
        self._c.execute(
            update(idempotency_keys)
            .where(_this(scope, route, key))
            .values(status=status, content_type=content_type, body=body)
        )

    def prune_idempotency_keys(self, created_before: int, limit: int) -> int:
        old = _T.created_at < created_before
        some = select(_T.scope, _T.route, _T.key).where(old).limit(limit).subquery()
        doomed = (
            select(some.c.scope)
            .where(some.c.scope == _T.scope, some.c.route == _T.route, some.c.key == _T.key)
            .exists()
        )
        result = self._c.execute(delete(idempotency_keys).where(doomed, old))
        return int(result.rowcount)
