"""The session keys', nonces', challenges', signatures' and poll tokens' statements
(``paycore.storage.protocols.auth``), mixed into ``SqlTx``; the nonce-spending SQL is also
what ``SqlStorage.spend_nonce`` runs outside a transaction.

- ``advance_nonce``: ``UPDATE .. WHERE last_seen_nonce < :n``; the row count says who won.
- ``spend_nonce`` (and ``accept_nonce``, the same without the expiry test): see ``sql.py``.
- ``put_session_key``: an upsert whose ``DO UPDATE`` keeps the larger nonce and a tombstone.
- ``take_challenge``: ``DELETE .. RETURNING``. ``remember_signature``: an upsert that only
  overwrites an expired row.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import attrs
from sqlalchemy import Connection, case, delete, func, select, update

from paycore.domain.records import PollToken, PowChallenge, SessionKey

from .prepared import on_driver
from .rows import plain_row
from .statements import SqlTxBase
from .tables import poll_tokens, pow_challenges, seen_signatures, session_keys, session_nonces

#: The columns of ``SessionKey``; ``nonce_floor`` is the storage's own business.
_KEY_COLUMNS = [c for c in session_keys.c if c.name != "nonce_floor"]


_KEY_NAMES = [c.name for c in _KEY_COLUMNS]
# The spend's RETURNING lists them in this order, which is ``SessionKey``'s field order: a
# returned row is then the key's positional arguments, with no dict built per request.
if [field.name for field in attrs.fields(SessionKey)] != _KEY_NAMES:  # not under -O either
    raise RuntimeError("session_keys' columns and SessionKey's fields are in different orders")


#: ``accept_nonce`` is ``spend_nonce`` without the expiry test: every stored key passes it.
_ANY_KEY = -(2**63)


def _driver_sql(sql: str, postgres: bool) -> str:
    """``:name`` placeholders as the driver takes them (sqlite3 as they are, psycopg as
    ``%(name)s``), so the hot statements go to the driver with no compiling at all."""
    return re.sub(r":(\w+)", r"%(\1)s", sql) if postgres else sql


def _spend_sql(*, postgres: bool, strict: bool, guarded: bool = False) -> tuple[str, ...]:
    """``SqlTx.spend_nonce`` as driver SQL: on PostgreSQL one statement (data-modifying
    CTEs: the key's ``UPDATE .. RETURNING``, the prune, the message's ``INSERT``); on SQLite
    the ``UPDATE .. RETURNING``, the ``INSERT`` and the prune, run one after the other in the
    same serial transaction. Text rather than Core (Core cannot write a data-modifying CTE
    around an ``INSERT .. ON CONFLICT`` that its cache keeps), sent as it is to the driver
    (``prepared.on_driver``); the columns and tables still come from ``tables.py``.

    Strict mode writes the key's row and nothing else: a nonce above the highest is new by
    that alone, so no message is recorded, and the key's ``nonce_floor`` rises with it
    (every nonce at or below it is refused in either mode, as the storage contract asks of
    nonces accepted unrecorded). One row written per signed request, as a bare counter
    would write it; on PostgreSQL the statement keeps its CTE's shape, which the signed
    read extends (``signed_read``)."""
    keys, used, names = session_keys.name, session_nonces.name, ", ".join(_KEY_NAMES)
    lowest = "last_seen_nonce" if strict else "last_seen_nonce - :window"
    where = (
        f"address = :address AND expires_at > :now AND nonce_floor < :nonce AND {lowest} < :nonce"
    )
    if guarded:
        where += (
            " AND owner = :key_owner"
            " AND encryption_public_key IS NOT DISTINCT FROM CAST(:key_encryption AS TEXT)"
        )
    if strict:
        nonce = "CAST(:nonce AS BIGINT)" if postgres else ":nonce"
        advance = (
            f"UPDATE {keys} SET last_seen_nonce = {nonce}, nonce_floor = {nonce} "
            f"WHERE {where} RETURNING {names}"
        )
        if postgres:
            statement = f"WITH advanced AS ({advance}) SELECT {names} FROM advanced"
            return (_driver_sql(statement, postgres=True),)
        return (advance,)
    if postgres:
        statement = f"""
            WITH advanced AS (
                UPDATE {keys}
                   SET last_seen_nonce = GREATEST(last_seen_nonce, CAST(:nonce AS BIGINT))
                 WHERE {where}
                RETURNING {names}
            ), pruned AS (
                DELETE FROM {used}
                 WHERE address = :address
                   AND nonce <= (SELECT last_seen_nonce FROM advanced) - :window
            ), recorded AS (
                INSERT INTO {used} (address, nonce, digest)
                SELECT :address, CAST(:nonce AS BIGINT), :digest
                 WHERE EXISTS (SELECT 1 FROM advanced)
                ON CONFLICT (address, nonce, digest) DO NOTHING
                RETURNING nonce
            )
            SELECT {names} FROM advanced WHERE EXISTS (SELECT 1 FROM recorded)
        """
        return (_driver_sql(statement, postgres=True),)
    return (
        f"UPDATE {keys} SET last_seen_nonce = max(last_seen_nonce, :nonce) "
        f"WHERE {where} RETURNING {names}",
        f"INSERT INTO {used} (address, nonce, digest) VALUES (:address, :nonce, :digest) "
        "ON CONFLICT (address, nonce, digest) DO NOTHING RETURNING nonce",
        f"DELETE FROM {used} WHERE address = :address AND nonce <= :bound",
    )


#: (postgres, strict) -> the statements of ``spend_nonce``.
_SPEND = {
    (postgres, strict): _spend_sql(postgres=postgres, strict=strict)
    for postgres in (False, True)
    for strict in (False, True)
}


#: strict -> ``spend_nonce``'s PostgreSQL statement guarded on the expected key.
_SPEND_GUARDED = {
    strict: _spend_sql(postgres=True, strict=strict, guarded=True)[0] for strict in (False, True)
}


def _spend_params(address: str, nonce: int, digest: str, window: int, now: int) -> dict[str, Any]:
    return {"address": address, "nonce": nonce, "digest": digest, "window": window, "now": now}


#: Runs driver SQL inside the open transaction: ``run(sql, arguments, fetch=True)`` -> rows.
_Run = Callable[..., list[Any]]


def _on(connection: Connection) -> _Run:
    """``_Run`` on a SQLAlchemy ``Connection``'s transaction (see ``prepared.on_driver``)."""
    return lambda sql, arguments, fetch=True: on_driver(connection, sql, arguments, fetch=fetch)[0]


def _spend_on_postgres(run: _Run, params: Mapping[str, Any], strict: bool) -> SessionKey | None:
    """The one statement, straight to psycopg (see ``prepared``)."""
    rows = run(_SPEND[(True, strict)][0], params)
    return SessionKey(*rows[0]) if rows else None


def _spend_on_sqlite(run: _Run, params: Mapping[str, Any], strict: bool) -> SessionKey | None:
    """The statements straight to sqlite3 (see ``prepared``; strict mode's one, window
    mode's three), inside a transaction the caller began and ends: committed when a key
    comes back, rolled back otherwise."""
    if strict:
        rows = run(_SPEND[(False, True)][0], params)
        return SessionKey(*rows[0]) if rows else None
    advance, record, prune = _SPEND[(False, False)]
    rows = run(advance, params)
    if not rows:
        return None
    if not run(record, params):
        return None  # a replay; the caller's rollback undoes the (no-op) advance
    key = SessionKey(*rows[0])
    if key.last_seen_nonce == params["nonce"]:  # the window moved up: forget what fell out
        bound = key.last_seen_nonce - params["window"]
        run(prune, {"address": key.address, "bound": bound}, fetch=False)
    return key


class AuthStatements(SqlTxBase):
    """The authentication methods of ``StorageTx``, on the transaction's connection."""

    def get_session_key(self, address: str) -> SessionKey | None:
        row = self._one(select(*_KEY_COLUMNS).where(session_keys.c.address == address))
        return None if row is None else SessionKey(**row)

    def session_keys_of(self, owner: str) -> list[SessionKey]:
        query = (
            select(*_KEY_COLUMNS)
            .where(session_keys.c.owner == owner)
            .order_by(session_keys.c.registered_at, session_keys.c.address)
        )
        return [SessionKey(**row) for row in self._all(query)]

    def put_session_key(self, key: SessionKey) -> None:
        row = plain_row(key)
        stmt = self._insert(session_keys).values(row)
        stored, new = session_keys.c, stmt.excluded
        larger = func.greatest if self._postgres else func.max  # SQLite's scalar max()
        changes: dict[str, Any] = {name: new[name] for name in row if name != "address"}
        changes["last_seen_nonce"] = larger(stored.last_seen_nonce, new.last_seen_nonce)
        changes["expires_at"] = case((stored.expires_at == 0, 0), else_=new.expires_at)
        self._c.execute(stmt.on_conflict_do_update(index_elements=["address"], set_=changes))

    def delete_session_key(self, address: str) -> bool:
        self._delete(session_nonces, session_nonces.c.address == address)
        return self._delete(session_keys, session_keys.c.address == address)

    def advance_nonce(self, address: str, nonce: int) -> bool:
        result = self._c.execute(
            update(session_keys)
            .where(session_keys.c.address == address, session_keys.c.last_seen_nonce < nonce)
            .values(last_seen_nonce=nonce)
        )
        return result.rowcount == 1

    def accept_nonce(
        self, address: str, nonce: int, digest: str, *, window: int, strict: bool = False
    ) -> bool:
        found = self.spend_nonce(address, nonce, digest, window=window, strict=strict, now=_ANY_KEY)
        return found is not None

    def spend_nonce(
        self,
        address: str,
        nonce: int,
        digest: str,
        *,
        window: int,
        strict: bool = False,
        now: int,
    ) -> SessionKey | None:
        """PostgreSQL: one statement, one round trip. The ``UPDATE`` takes the key's row lock
        first, so one key's messages are decided one at a time, each against the window as
        the previous one committed it (READ COMMITTED re-checks the ``WHERE`` on that row);
        the ``DELETE`` and ``INSERT`` only touch that key's rows. A replay conflicts with the
        committed row (``DO NOTHING``: no row returned), and its advance changed nothing,
        since a recorded nonce is never above the key's highest. SQLite: the same three
        steps as statements, serial under ``BEGIN IMMEDIATE``; a replay's (no-op) advance is
        undone by the caller's rollback."""
        params = _spend_params(address, nonce, digest, window, now)
        spend = _spend_on_postgres if self._postgres else _spend_on_sqlite
        return spend(_on(self._c), params, strict)

    def put_challenge(self, challenge: PowChallenge) -> None:
        self._put(pow_challenges, plain_row(challenge))

    def take_challenge(self, challenge: str) -> PowChallenge | None:
        stmt = (
            delete(pow_challenges)
            .where(pow_challenges.c.challenge == challenge)
            .returning(*pow_challenges.c)
        )
        row = self._c.execute(stmt).first()
        return None if row is None else PowChallenge(**row._mapping)

    def remember_signature(self, digest: str, expires_at: int, *, now: int | None = None) -> bool:
        current = self._clock() if now is None else now
        seen = self._insert(seen_signatures).values(digest=digest, expires_at=expires_at)
        unless_live = seen.on_conflict_do_update(
            index_elements=["digest"],
            set_={"expires_at": seen.excluded.expires_at},
            where=seen_signatures.c.expires_at <= current,
        ).returning(seen_signatures.c.digest)
        return self._c.execute(unless_live).first() is not None

    def put_poll_token(self, token: PollToken) -> None:
        self._put(poll_tokens, plain_row(token))

    def get_poll_token(self, token: str) -> PollToken | None:
        row = self._one(select(poll_tokens).where(poll_tokens.c.token == token))
        return None if row is None else PollToken(**row)
