"""Engines configured for what the storage contract relies on, per database.

SQLite: WAL so readers never block the writer, a busy timeout so a second writer waits
instead of failing with "database is locked", and ``BEGIN IMMEDIATE`` on every transaction
(SQLAlchemy's documented pysqlite recipe) so the write lock is taken up front. A deferred
BEGIN would let two transactions both read and then deadlock when both try to write; taking
the lock first makes every transaction serial, which is what turns the contract's
compare-and-set methods atomic on SQLite.

PostgreSQL: the psycopg 3 driver and READ COMMITTED pinned explicitly, because the row
locking in ``sql.py`` is reasoned for it (a statement that waited on a lock sees the row as
committed by the holder), and a connect timeout so that an unreachable server is reported
in seconds rather than after the operating system's TCP timeout (minutes).

Dead pooled connections, without a ping. ``pool_pre_ping`` sent a statement on every
checkout -- a round trip per transaction, a fifth of a signed request's time. Instead each
checkout asks the operating system, at no round trip, whether the idle connection's socket
has anything to read: an idle PostgreSQL connection is sent nothing unless the server is
going away (a shutdown or a killed backend sends an error, then closes the socket), so a
readable socket is dropped and the pool opens a fresh connection, transparently. A server
that vanishes without a word (a cut cable) is found by the first statement instead, which
then fails as an outage (503 with ``Retry-After``); SQLAlchemy then retires every connection
of the pool opened before that failure, so the next transactions reconnect.

Outages: :func:`unavailable` recognises the errors that mean "the database cannot be
reached or answer now" (connection refused or dropped, server shutting down, pool
exhausted, SQLite's lock timeout) so that ``SqlStorage`` raises the core's storage-neutral
``StorageUnavailable`` instead, which the HTTP layer answers with 503 and the worker
answers by backing off. Any other database error is a bug and keeps its own type.
"""

from __future__ import annotations

import hashlib
import select
import sqlite3
import time
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import URL, make_url
from sqlalchemy.pool import StaticPool

from paycore.errors import PaycoreError, StorageUnavailable
from paycore.storage.invoice_read import WouldBlock, inline_attempt

SUPPORTED = ("sqlite", "postgresql")
#: Seconds a SQLite writer waits for the lock before giving up.
SQLITE_BUSY_TIMEOUT = 30.0
_BUSY_MS = int(SQLITE_BUSY_TIMEOUT * 1000)
#: Seconds a PostgreSQL connection attempt may take (libpq's ``connect_timeout``).
POSTGRES_CONNECT_TIMEOUT = 5

#: SQLAlchemy's errors for "the database cannot be reached or answer now". Its
#: OperationalError wraps the driver's (psycopg, sqlite3) connection-level failures.
_UNAVAILABLE = (
    sa_exc.OperationalError,
    sa_exc.InterfaceError,
    sa_exc.DisconnectionError,
    sa_exc.TimeoutError,  # no pooled connection free in time
)
#: The same errors raised by a driver called directly, outside a statement (sqlite3's
#: ``BEGIN IMMEDIATE`` below; psycopg's autocommit switch in ``SqlStorage.spend_nonce``).
_DRIVER_UNAVAILABLE: tuple[type[Exception], ...] = (sqlite3.OperationalError,)
try:  # PostgreSQL support is an optional extra
    from psycopg import OperationalError as _PsycopgOperationalError

    _DRIVER_UNAVAILABLE += (_PsycopgOperationalError,)
except ImportError:  # pragma: no cover - only without the postgres extra
    pass
#: sqlite3 messages that mean "cannot be used right now" rather than a wrong statement.
_SQLITE_UNAVAILABLE = ("locked", "busy", "unable to open", "disk I/O", "readonly", "full")


def advisory_key(name: str) -> int:
    """A stable signed 64-bit key for ``pg_advisory_xact_lock``, named so it reads in code."""
    digest = hashlib.blake2b(name.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def database_url(url: str | URL) -> URL:
    """``postgresql://`` (and the old ``postgres://``) mean psycopg 3 here; an explicit
    driver such as ``postgresql+psycopg2://`` is left alone."""
    parsed = make_url(url)
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed


def handles(url: str | URL) -> bool:
    try:
        return database_url(url).get_backend_name() in SUPPORTED
    except Exception:  # not a URL SQLAlchemy can even parse: some other plugin's business
        return False


def is_memory_sqlite(url: URL) -> bool:
    """An in-memory SQLite database exists only inside its one connection."""
    return url.get_backend_name() == "sqlite" and (
        url.database in (None, "", ":memory:") or url.query.get("mode") == "memory"
    )


def make_engine(url: str | URL, **options: Any) -> Engine:
    """An engine for ``url``; ``options`` go to ``create_engine`` and win over defaults."""
    parsed = database_url(url)
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        return _sqlite_engine(parsed, options)
    if backend == "postgresql":
        defaults: dict[str, Any] = {"isolation_level": "READ COMMITTED"}
        connect_args = {"connect_timeout": POSTGRES_CONNECT_TIMEOUT}
        connect_args.update(options.pop("connect_args", {}))
        try:
            engine = create_engine(parsed, connect_args=connect_args, **{**defaults, **options})
        except ImportError:  # psycopg is an extra: say which, not a 60-line traceback
            raise PaycoreError(
                "PostgreSQL needs its driver, which is not installed: "
                "pip install 'paycore[postgres]'"
            ) from None
        event.listen(engine, "checkout", _drop_if_closed_by_server)
        return engine
    raise ValueError(f"paycore_storage supports {', '.join(SUPPORTED)}, not {backend!r}")


def _drop_if_closed_by_server(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
    """Refuse a pooled connection the server has closed or is closing (see the module
    docstring); SQLAlchemy then discards it and checks out, or opens, another."""
    if closed_by_server(dbapi_connection):
        raise sa_exc.DisconnectionError("the server closed this pooled connection")


def closed_by_server(dbapi_connection: Any) -> bool:
    """Whether the server has closed, or is closing, this psycopg connection: the check a
    checkout makes, for a connection kept out of the pool (``SqlStorage._held``)."""
    return bool(dbapi_connection.closed) or _readable(dbapi_connection.fileno())


def _readable(fd: int) -> bool:
    """Whether ``fd`` has data or an end of file waiting, asked without blocking."""
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN | select.POLLERR | select.POLLHUP)
        return bool(poller.poll(0))
    except (OSError, ValueError):  # a socket already gone
        return True


def unavailable(error: BaseException) -> StorageUnavailable | None:
    """The core's ``StorageUnavailable`` for a connection-level failure, else ``None``.

    Its ``kind`` is the driver's error class (``OperationalError``, ``AdminShutdown``...),
    a small set that keys the rate-limited outage log; its ``detail`` the driver's first
    line, without the SQL statement and parameters SQLAlchemy appends.
    """
    if not isinstance(error, _UNAVAILABLE + _DRIVER_UNAVAILABLE):
        return None
    cause = getattr(error, "orig", None) or error
    lines = str(cause).strip().splitlines()
    first = lines[0] if lines else ""
    # sqlite3 also calls a missing table or a syntax error "OperationalError": those are
    # bugs to surface, not outages to wait out.
    if isinstance(cause, sqlite3.Error) and not any(m in first for m in _SQLITE_UNAVAILABLE):
        return None
    return StorageUnavailable(type(cause).__name__, first)


def _sqlite_engine(url: URL, options: dict[str, Any]) -> Engine:
    defaults: dict[str, Any] = {"connect_args": {"timeout": SQLITE_BUSY_TIMEOUT}}
    if is_memory_sqlite(url):
        # One shared connection, or every thread would see its own empty database.
        defaults = {
            "poolclass": StaticPool,
            "connect_args": {"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT},
        }
    engine = create_engine(url, **{**defaults, **options})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Stop pysqlite from issuing its own (deferred) BEGIN; _on_begin issues ours.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout={_BUSY_MS}")
            _enable_wal(cursor, SQLITE_BUSY_TIMEOUT)
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        # Straight to sqlite3: SQLAlchemy's execution layer cost more than SQLite's BEGIN.
        # A lock timeout raises sqlite3's own error, which ``unavailable`` recognises.
        begin(connection.connection.dbapi_connection)

    return engine


def begin(dbapi: Any) -> None:
    """``BEGIN IMMEDIATE`` on a SQLite connection, waiting out another writer for up to the
    busy timeout -- except for an event loop's transaction (``spending_inline``), which
    waits for none: ``WouldBlock`` when another connection (of another process: this
    one's take turns on its writer lock) holds the write lock. The busy timeout is put
    back before anything else runs, so the connection goes on as every other one does."""
    if inline_attempt() is None:
        dbapi.execute("BEGIN IMMEDIATE")
        return
    dbapi.execute("PRAGMA busy_timeout=0")
    try:
        dbapi.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as error:
        if not busy(error):
            raise
        raise WouldBlock from None
    finally:
        dbapi.execute(f"PRAGMA busy_timeout={_BUSY_MS}")


def busy(error: sqlite3.Error) -> bool:
    """Whether SQLite refused for a lock another connection holds (``SQLITE_BUSY``, an
    extended code of it too)."""
    return getattr(error, "sqlite_errorcode", 0) & 0xFF == sqlite3.SQLITE_BUSY


def _enable_wal(cursor: Any, patience: float) -> None:
    """Switch a file database to WAL, waiting out other connections doing the same.

    Changing the journal mode needs an exclusive lock and SQLite answers "database is
    locked" at once instead of calling the busy handler, so processes opening a new
    database together (several workers at first start) would fail without this retry.
    """
    deadline = time.monotonic() + patience
    delay = 0.005
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() + delay > deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.2)
