"""``SqlStorage``: the ``paycore.storage`` contract on SQLAlchemy Core, SQLite or PostgreSQL.

Each atomicity promise of the contract is one statement the database makes atomic, rather
than a read followed by a write that another transaction could slip between:

- ``advance_nonce``: ``UPDATE .. WHERE last_seen_nonce < :n``; the row count says who won.
- ``spend_nonce`` (and ``accept_nonce``, the same without the expiry test): on PostgreSQL
  one statement -- an ``UPDATE .. RETURNING`` of the key row (its row lock serialises one
  key's requests, READ COMMITTED re-checks the window on the row as the previous holder
  committed it, and the returned row is the key the request needs), a ``DELETE`` of rows
  that fell out of the window and an ``INSERT .. ON CONFLICT DO NOTHING`` of the message, as
  data-modifying CTEs. On SQLite the same three run as statements, serial under ``BEGIN
  IMMEDIATE``. Both go to the driver as prepared text, with no per-request compiling.
- ``put_session_key``: an upsert whose ``DO UPDATE`` keeps the larger nonce and a tombstone.
- ``insert_transaction`` / ``insert_invoice``: ``INSERT .. ON CONFLICT DO NOTHING RETURNING``,
  which also keeps the transaction usable (a unique violation would abort it on PostgreSQL).
- ``allocate_wallet_index``: an upsert that increments and returns the counter.
- ``take_challenge``: ``DELETE .. RETURNING``. ``remember_signature``: an upsert that only
  overwrites an expired row.
- ``for_update`` reads and ``drain_queue`` lock rows with ``SELECT .. FOR UPDATE``.
- ``enqueue_delivery``: one ``INSERT .. SELECT`` from the owner's webhook row, so "queue it
  only if a URL is set" is decided by the same statement that queues.
- ``claim_chain``: an upsert whose ``DO UPDATE .. WHERE`` only takes a free, lapsed or own
  lease; ``advance_chain``: ``UPDATE .. WHERE holder = :holder``.
- ``claim_deliveries``: ``SELECT .. FOR UPDATE SKIP LOCKED`` of due, unleased rows, then an
  ``UPDATE`` that writes the lease, in one transaction: a concurrent claimant skips the rows
  being claimed, and once committed the lease itself keeps them out of its ``WHERE``.
  ``finish_delivery`` settles with ``UPDATE .. WHERE lease_token = :token``.

On SQLite those statements are serial anyway (``BEGIN IMMEDIATE``, see ``engine.py``) and
``FOR UPDATE`` renders as nothing.

The statements are one mixin per concern, as the contract is one protocol per concern
(``paycore.storage.protocols``): ``invoices``, ``transactions``, ``detected``, ``auth``,
``webhooks``, ``endpoints``, ``outbox`` (with the event order across overlapping
transactions), ``signal_leases``, ``chains``, ``prices``, ``refunds``, ``links``,
``merchant``, ``export``, ``pruning``, ``idempotency``; ``statements`` holds the helpers and
the owner counts they share. ``SqlTx`` is composed of them; ``SqlStorage`` opens it.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import URL
from sqlalchemy.pool import NullPool, Pool, PoolProxiedConnection, QueuePool

from paycore.domain.records import Invoice, SessionKey
from paycore.storage import OutboxSignal, StorageTx
from paycore.storage.contract import spend_then_insert_invoice, spend_then_read
from paycore.storage.invoice_read import (
    InlineAttempt,
    InvoiceRead,
    WouldBlock,
    inline_attempt,
    on_event_loop,
    refuse_blocking,
    without_blocking,
)

from .async_read import AsyncReads
from .auth import _SPEND as _SPEND  # bench/auth_bench.py reads the statements from here
from .auth import AuthStatements, _Run, _spend_on_postgres, _spend_on_sqlite, _spend_params
from .chains import ChainStatements
from .detected import DetectedStatements
from .endpoints import EndpointStatements
from .engine import (
    _BUSY_MS,
    begin,
    busy,
    closed_by_server,
    database_url,
    is_memory_sqlite,
    make_engine,
    unavailable,
)
from .export import ExportStatements
from .idempotency import IdempotencyStatements
from .invoice_read import read_on
from .invoices import InvoiceStatements
from .links import LinkStatements
from .merchant import MerchantStatements
from .migrations import migrate
from .outbox import OutboxStatements
from .outbox_signal import PostgresListen, SqliteDataVersion
from .own_readers import OwnReaders
from .payout_watch import PayoutWatchStatements
from .payouts import PayoutStatements
from .prepared import connection_runner, on_dbapi
from .prices import PriceStatements
from .pruning import PruningStatements
from .refunds import RefundStatements
from .search import SearchStatements
from .signal_leases import SignalLeaseStatements
from .signed_create import create_arguments, spend_then_create_on_postgres
from .signed_read import spend_then_read_on_postgres
from .statements import INVOICES as INVOICES  # bench/scale_bench.py reads the count kinds
from .statements import TRANSACTIONS as TRANSACTIONS
from .subscriptions import SubscriptionStatements
from .transactions import TransactionStatements
from .webhooks import WebhookStatements


class SqlStorage:
    """A ``paycore.storage.Storage`` on the database at ``url``.

    ``auto_migrate`` (default on) brings the schema to the newest revision before the first
    transaction, so an embedded SQLite setup needs no separate step; turn it off where
    deployments run ``paycore_storage.migrate`` themselves. ``clock`` (unix seconds) decides
    when a remembered signature has expired. ``engine_options`` go to ``create_engine``.
    """

    def __init__(
        self,
        url: str | URL,
        *,
        auto_migrate: bool = True,
        clock: Callable[[], float] = time.time,
        **engine_options: Any,
    ) -> None:
        self.url = database_url(url)
        self.engine = make_engine(self.url, **engine_options)
        self._clock = clock
        self._migrated = not auto_migrate
        self._migrate_lock = threading.Lock()
        # SQLite runs one write transaction at a time, and every transaction here is one
        # (BEGIN IMMEDIATE). Threads of this process queue on a lock for it rather than in
        # SQLite's busy handler, which sleeps up to 100 ms between tries and lets a steady
        # writer starve the others; other processes still meet the busy handler. An
        # in-memory database also needs it because all threads share its one connection.
        sqlite = self.url.get_backend_name() == "sqlite"
        self._postgres = self.url.get_backend_name() == "postgresql"
        self._shared_connection = threading.Lock() if sqlite else None
        #: Whether ``outbox_signal`` has anything to offer: not for an in-memory database.
        self._memory = is_memory_sqlite(self.url)
        self.has_outbox_signal = not self._memory
        #: The spending connection (``_held``) of each process, by its id, kept out of the
        #: pool between spends, with its runner and, on a SQLite file, the SQLAlchemy
        #: ``Connection`` around it, which this process's transactions run on too
        #: (``_connection``); on PostgreSQL taken by one spend at a time, through
        #: ``_held_lock`` (a busy one sends the others to the pool). A forked child keeps
        #: its parent's entry untouched: dropping it would let the garbage collector close
        #: the parent's connection from the child.
        self._writers: dict[int, tuple[PoolProxiedConnection, _Run, Connection | None]] = {}
        self._held_lock = threading.Lock()
        #: Only where the pool can spare the connection: never its one and only.
        self._may_hold = not self._memory and _spares_one(self.engine.pool)
        #: The poll's read on an event loop (``async_read``): PostgreSQL, where the sync
        #: read is a round trip a loop must not wait out; a SQLite file's WAL read answers
        #: inline as it is (``read_invoice``), so ``has_async_read`` is off there.
        self._async_reads = AsyncReads(self.engine) if self._postgres else None
        self.has_async_read = self._async_reads is not None
        #: A signed read's spend and read awaited on a loop (``spend_nonce_then_read_async``):
        #: the same statement as the sync call's, on PostgreSQL.
        self.has_async_spend = self.has_async_read
        #: A signed request's storage on an event loop, all or nothing (``spending_inline``):
        #: a SQLite file, whose writes wait for nothing but their fsync when no other writer
        #: holds the lock.
        self.has_inline_spend = self._may_hold and sqlite and not self._memory
        # A SQLite file's readers of their own, one per thread (``own_readers``); opened as
        # sqlite3 opens a path, so not where the URL or the engine's options say how to
        # connect (a ``file:`` URI, a creator of the host's).
        plain_file = sqlite and not self._memory and not self.url.query
        plain_file = plain_file and not {"connect_args", "creator"} & engine_options.keys()
        self._own_readers = OwnReaders(str(self.url.database), _BUSY_MS) if plain_file else None

    def migrate(self) -> None:
        """Upgrade the schema to the newest revision now."""
        migrate(self.engine)
        self._migrated = True

    def _ensure_schema(self) -> None:
        if self._migrated:
            return
        with self._migrate_lock:
            if not self._migrated:
                self.migrate()

    def _exclusive(self) -> AbstractContextManager[Any]:
        return self._shared_connection or nullcontext()

    @contextmanager
    def transaction(self) -> Iterator[StorageTx]:
        """One unit of work. A failure to reach the database -- connecting, in a statement,
        at commit -- raises ``StorageUnavailable`` (see ``engine.unavailable``); the
        transaction is rolled back as for any other error."""
        attempt = inline_attempt()
        try:
            if attempt is None:
                self._ensure_schema()
            with (
                self._exclusive() if attempt is None else self._inline_turn(),
                self._connection() as connection,
                connection.begin(),  # engine.py: BEGIN IMMEDIATE, at once for an attempt
            ):
                tx = SqlTx(connection, self._clock)
                try:
                    yield tx
                    tx.before_commit()
                finally:
                    tx.close()
            if attempt is not None:
                attempt.committed = True
        except Exception as error:
            outage = unavailable(error)
            if outage is None:
                raise
            raise outage from error

    @contextmanager
    def _connection(self) -> Iterator[Connection]:
        """The connection a transaction runs on, inside this process's writer lock on
        SQLite: on a SQLite file the held one (``_held``), which every write of the
        process takes its turn on anyway, so that a transaction pays no pool checkout and
        check-in (with its reset ``ROLLBACK``) and no ``Connection`` built and closed --
        together about a tenth of an invoice's creation. An error that leaves it broken
        or inside a transaction gives it back to the pool, which resets or discards it.
        Elsewhere a pooled connection for the one transaction."""
        if not self._may_hold or self._postgres:
            with self.engine.connect() as connection:
                yield connection
            return
        pooled, _run, held = self._held()
        assert held is not None  # a SQLite file's held connection is a Connection
        try:
            yield held
        except BaseException:
            if held.invalidated or held.in_transaction() or not pooled.is_valid:
                self._release_writer()
            raise

    def inline_turn_free(self) -> bool:
        """Whether this process's writer lock is free now: what an event loop's spend or
        transaction takes first (``_spend_and_read_on_file``, ``_inline_turn``). A hint,
        read without taking anything: ``paycore.api`` waits on the loop while a worker
        thread of this process holds the writer, rather than send the request to a thread
        as well. (A write's first turn in a process also needs an idle pooled connection,
        which ``_inline_turn`` checks; after it the write runs on the held one.)"""
        lock = self._shared_connection
        return lock is not None and not lock.locked()

    @contextmanager
    def _inline_turn(self) -> Iterator[None]:
        """This process's writer lock for an event loop's transaction (``spending_inline``),
        or ``WouldBlock``: when the lock is taken, when the store cannot write inline (see
        ``has_inline_spend``) or has yet to migrate, and when the process holds no
        connection yet (``_connection``) and none in the pool is idle (a checkout would
        connect, or wait for one)."""
        lock = self._shared_connection
        pool: Any = self.engine.pool
        if not self.has_inline_spend or not self._migrated or lock is None:
            raise WouldBlock
        holds = os.getpid() in self._writers
        if (not holds and pool.checkedin() == 0) or not lock.acquire(blocking=False):
            raise WouldBlock
        try:
            yield
        finally:
            lock.release()

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
        """PostgreSQL: the one statement in autocommit mode, so that it is its own
        transaction -- one round trip, committed (durably: ``synchronous_commit`` as the
        server has it) before the answer comes back, with no ``BEGIN`` or ``COMMIT`` round
        trip around it. SQLite: one ``BEGIN IMMEDIATE`` transaction, as ``transaction()``
        would open, committed only when the nonce was spent.

        Both run on a DBAPI connection without SQLAlchemy's ``Connection`` around it: its
        checkout, begin, commit and close cost more CPU than the statements (on a SQLite
        file, 0.2 ms of a verification's 0.5). Nor is the connection checked out of the pool
        each time, where the pool can spare one (``_held``)."""
        if inline_attempt() is not None:
            raise WouldBlock  # inline, a spend is a read's (its read decides) or a write's
        params = _spend_params(address, nonce, digest, window, now)
        try:
            self._ensure_schema()
            if self._may_hold and not self._postgres:
                return self._spend_and_read_on_file(params, strict, None, None)[0]
            if self._postgres:
                with self._autocommitted() as (_dbapi, _invalidate, run):
                    return _spend_on_postgres(run, params, strict)
            with self._exclusive(), self._pooled() as (pooled, run):
                dbapi: Any = pooled.dbapi_connection
                dbapi.execute("BEGIN IMMEDIATE")
                spent = None
                try:
                    spent = _spend_on_sqlite(run, params, strict)
                finally:
                    if pooled.is_valid and dbapi.in_transaction:
                        dbapi.execute("COMMIT" if spent else "ROLLBACK")
                return spent
        except Exception as error:
            outage = unavailable(error)
            if outage is None:
                raise
            raise outage from error

    def spend_nonce_then_read(
        self,
        address: str,
        nonce: int,
        digest: str,
        *,
        window: int,
        strict: bool = False,
        now: int,
        guid: str,
    ) -> tuple[SessionKey | None, InvoiceRead | None]:
        """``spend_nonce``, then (when it spent) ``read_invoice(guid)``: on PostgreSQL as
        one autocommitted statement (``signed_read``), one round trip; on a SQLite file the
        read inside the spend's transaction, on the held spending connection
        (``_spend_and_read_on_file``), which is also how it is made on an event loop
        (``spending_inline``, where the store has ``has_inline_spend``)."""
        params = _spend_params(address, nonce, digest, window, now)
        attempt = inline_attempt()
        if attempt is not None and not self.has_inline_spend:
            raise WouldBlock
        try:
            if attempt is None:
                self._ensure_schema()
            if self._postgres:
                with self._autocommitted() as (dbapi, invalidate, _run):
                    return spend_then_read_on_postgres(
                        self.engine.dialect, dbapi, invalidate, params, strict, guid
                    )
            if self._may_hold:
                return self._spend_and_read_on_file(params, strict, guid, attempt)
            # An in-memory database (one shared connection), or a pool with none to spare.
            return spend_then_read(
                self, address, nonce, digest, window=window, strict=strict, now=now, guid=guid
            )
        except Exception as error:
            outage = unavailable(error)
            if outage is None:
                raise
            raise outage from error

    def read_invoice(self, guid: str) -> InvoiceRead | None:
        """One autocommitted read (``invoice_read``): on PostgreSQL one ``SELECT``, one
        round trip, no ``BEGIN`` or ``COMMIT``, on the connection the process holds for
        its spends when no other call has it, else on a pooled one (``_autocommitted``);
        on a SQLite file on the reading thread's own connection (``own_readers``; a pooled
        one past their bound), a read that takes neither ``BEGIN IMMEDIATE`` nor this
        process's writer lock (WAL lets it run beside a writer). An in-memory SQLite
        database has one connection, shared: the lock is taken there."""
        # Not on an event loop: a round trip to PostgreSQL (the loop would wait it out,
        # one request at a time, where worker threads overlap their waits), a shared lock
        # to wait for, a migration, a connection to open. A SQLite file's WAL read is none.
        pool: Any = self.engine.pool
        if self._own_readers is not None and self._migrated:
            on_loop = on_event_loop()
            own = self._own_readers.reader(on_loop)
            if own is not None:
                return self._read_on_own(guid, *own, on_loop)
        if self._postgres or self._memory or not self._migrated or pool.checkedin() == 0:
            refuse_blocking()
        try:
            self._ensure_schema()
            if self._postgres:
                with self._autocommitted() as (dbapi, invalidate, _run):
                    return read_on(self.engine.dialect, dbapi, invalidate, guid)
            shared = self._shared_connection if self._memory else None
            with shared or nullcontext(), self._pooled() as (pooled, _run):
                return read_on(
                    self.engine.dialect, pooled.dbapi_connection, pooled.invalidate, guid
                )
        except Exception as error:
            outage = unavailable(error)
            if outage is None:
                raise
            raise outage from error

    def _spend_and_read_on_file(
        self,
        params: dict[str, Any],
        strict: bool,
        guid: str | None,
        attempt: InlineAttempt | None,
    ) -> tuple[SessionKey | None, InvoiceRead | None]:
        """A spend on a SQLite file, and a signed read's read of ``guid`` with it:
        ``BEGIN IMMEDIATE`` on the held spending connection under this process's writer
        lock, the spend, the read, then ``COMMIT`` (``ROLLBACK`` for a refused nonce). The
        read is made before the commit, on the same connection, so that no pool checkout is
        paid for it. Any error gives the connection back to the pool, whose reset rolls
        back whatever the error left open (or which discards it, when the error broke it).

        With an ``attempt`` (``spending_inline``: an event loop's call) it is all or nothing
        and waits for nothing: the writer lock is taken only if free, ``BEGIN IMMEDIATE``
        runs with no busy timeout (a writer of another process sends the request to a
        thread at once), and a refused nonce (its reason is another read) or a read that
        does not settle the request (``attempt.settles``: an expiry due, a second write)
        rolls the spend back. Each of those raises ``WouldBlock`` with nothing committed,
        and the thread that answers next finds the nonce unspent. Only the commit's fsync
        is waited for. A first spend, which checks the connection out of the pool, and a
        schema not yet migrated are left to a thread too."""
        lock = self._shared_connection
        assert lock is not None  # a SQLite file
        if attempt is None:
            lock.acquire()
        elif not (self._migrated and os.getpid() in self._writers and lock.acquire(False)):
            raise WouldBlock
        try:
            writer, run, _connection = self._held()
            dbapi: Any = writer.dbapi_connection
            try:
                begin(dbapi)
                spent = _spend_on_sqlite(run, params, strict)
                read = None
                if spent is not None and guid is not None:
                    read = read_on(self.engine.dialect, dbapi, writer.invalidate, guid)
                if spent is None or (attempt is not None and not attempt.settles(read)):
                    dbapi.execute("ROLLBACK")
                    if attempt is not None:
                        raise WouldBlock
                    return None, None
                dbapi.execute("COMMIT")
                if attempt is not None:
                    attempt.committed = True
                return spent, read
            except WouldBlock:
                raise
            except BaseException:
                self._release_writer()
                raise
        finally:
            lock.release()

    def _held(self) -> tuple[PoolProxiedConnection, _Run, Connection | None]:
        """The connection that spends nonces, with its runner (and on a SQLite file the
        ``Connection`` around it, for ``_connection``); call with the writer lock
        (``_exclusive``, a SQLite file) or ``_held_lock`` (PostgreSQL) held. A SQLite
        file's spends are writes, which take turns on that lock anyway, so one connection,
        kept checked out, serves them all; on PostgreSQL it serves whichever spend finds it
        free. A spend then pays no pool checkout and check-in (with its reset
        ``ROLLBACK``), nor on PostgreSQL the switch to autocommit and back: about a tenth
        of a verification's CPU. A SQLite spend also finds its page cache still valid
        unless another connection wrote in between. Before each use on PostgreSQL it is
        checked as a checkout checks a pooled one (the server may have closed it). A
        process forked after the first spend does not share its parent's connection: it
        checks out its own."""
        held = self._writers.get(os.getpid())
        if held is not None:
            pooled = held[0]
            if pooled.is_valid and not (
                self._postgres and closed_by_server(pooled.dbapi_connection)
            ):
                return held
            if pooled.is_valid:
                pooled.invalidate()  # closed by the server: the pool discards it
            self._release_writer()
        connection = None
        if self._postgres:
            pooled = self.engine.raw_connection()
            try:
                pooled.dbapi_connection.autocommit = True  # type: ignore[union-attr]
            except BaseException:
                pooled.close()
                raise
        else:
            connection = self.engine.connect()
            pooled = connection.connection
        run = connection_runner(self.engine.dialect, pooled.dbapi_connection, pooled.invalidate)
        self._writers[os.getpid()] = held = (pooled, run, connection)
        return held

    def _release_writer(self) -> None:
        """The held connection back to the pool (which resets it, or discards it when it
        was invalidated), if this process holds one; out of autocommit on PostgreSQL, as
        every pooled connection is."""
        held = self._writers.pop(os.getpid(), None)
        if held is None:
            return
        pooled, _run, connection = held
        try:
            if self._postgres and pooled.is_valid:
                dbapi: Any = pooled.dbapi_connection
                dbapi.autocommit = False
        except Exception:
            pooled.invalidate()  # a connection that cannot even switch: not for reuse
        finally:
            (connection or pooled).close()

    def _read_on_own(
        self, guid: str, reader: Any, drop: Callable[[BaseException], None], on_loop: bool
    ) -> InvoiceRead | None:
        """``read_invoice`` on a SQLite file, on the thread's reader of its own
        (``own_readers``): no pool checkout. On an event loop, where SQLite would make the
        read wait (``SQLITE_BUSY``, as the driver raised it or as SQLAlchemy wraps it),
        ``WouldBlock``: a thread reads instead."""
        try:
            return read_on(self.engine.dialect, reader, drop, guid)
        except Exception as error:
            driver = getattr(error, "orig", error)
            if on_loop and isinstance(driver, sqlite3.Error) and busy(driver):
                raise WouldBlock from None
            outage = unavailable(error)
            if outage is None:
                raise
            raise outage from error

    async def read_invoice_async(self, guid: str) -> InvoiceRead | None:
        """``read_invoice`` awaited on the caller's event loop. PostgreSQL: ``async_read``,
        the same statement on a pooled ``AsyncConnection``. SQLite: ``read_invoice`` itself
        inside ``without_blocking()`` (a file's WAL read waits for nothing; where it would,
        ``WouldBlock``), which is why ``has_async_read`` is off there: awaiting it gains
        nothing over calling ``read_invoice`` inline. Raises ``WouldBlock`` before the
        schema is known to be migrated (a migration is no work for a loop), and
        ``StorageUnavailable`` as ``read_invoice`` does."""
        if not self._migrated:
            raise WouldBlock
        if self._async_reads is None:
            with without_blocking():
                return self.read_invoice(guid)
        return await self._async_reads.read_invoice(guid)

    async def spend_nonce_then_read_async(
        self,
        address: str,
        nonce: int,
        digest: str,
        *,
        window: int,
        strict: bool = False,
        now: int,
        guid: str,
    ) -> tuple[SessionKey | None, InvoiceRead | None]:
        """``spend_nonce_then_read`` awaited on the caller's event loop: on PostgreSQL its
        one statement on a pooled ``AsyncConnection`` (``async_read``), committed with the
        statement. Elsewhere (``has_async_spend`` off) the sync call itself. Raises
        ``WouldBlock`` before the schema is known to be migrated, and
        ``StorageUnavailable`` as the sync call does."""
        if self._async_reads is None:
            return self.spend_nonce_then_read(
                address, nonce, digest, window=window, strict=strict, now=now, guid=guid
            )
        if not self._migrated:
            raise WouldBlock
        params = _spend_params(address, nonce, digest, window, now)
        return await self._async_reads.spend_nonce_then_read(params, strict, guid)

    def spend_nonce_then_insert_invoice(
        self,
        address: str,
        nonce: int,
        digest: str,
        *,
        window: int,
        strict: bool = False,
        now: int,
        expect: SessionKey,
        invoice: Invoice,
    ) -> SessionKey | None:
        """:meth:`spend_nonce_then_insert_invoice_async` on the calling thread (a sync
        host's creation, ``paycore.api.handle_streamed``): on PostgreSQL the one
        autocommitted statement on a pooled connection; on SQLite one transaction."""
        if not self._postgres:
            return spend_then_insert_invoice(
                self, address, nonce, digest, window=window, strict=strict, now=now,
                expect=expect, invoice=invoice,
            )  # fmt: skip
        params = _spend_params(address, nonce, digest, window, now)
        sql, arguments = create_arguments(self.engine.dialect, strict, params, expect, invoice)
        try:
            self._ensure_schema()
            with self._autocommitted() as (dbapi, invalidate, _run):
                return spend_then_create_on_postgres(
                    self.engine.dialect, dbapi, invalidate, sql, arguments
                )
        except Exception as error:
            outage = unavailable(error)
            if outage is None:
                raise
            raise outage from error

    async def spend_nonce_then_insert_invoice_async(
        self,
        address: str,
        nonce: int,
        digest: str,
        *,
        window: int,
        strict: bool = False,
        now: int,
        expect: SessionKey,
        invoice: Invoice,
    ) -> SessionKey | None:
        """A signed creation's writes -- the nonce's spend, the invoice and its count -- as
        one autocommitted statement on PostgreSQL (``signed_create``), awaited on the
        caller's event loop on a pooled ``AsyncConnection`` (``async_read``): the spent
        key, or None with nothing written (a refused nonce, or a key whose owner or
        encryption key is no longer ``expect``'s). Raises ``WouldBlock`` (nothing sent)
        before the schema is known to be migrated, ``StorageUnavailable`` as
        ``spend_nonce`` does (the statement then may or may not have committed). On SQLite
        (``has_async_spend`` off: its creation already commits once, on the loop) the
        same writes in one blocking transaction (``contract.spend_then_insert_invoice``)."""
        if self._async_reads is None:  # a SQLite file: the sync transaction, blocking
            return spend_then_insert_invoice(
                self, address, nonce, digest, window=window, strict=strict, now=now,
                expect=expect, invoice=invoice,
            )  # fmt: skip
        if not self._migrated:
            raise WouldBlock
        params = _spend_params(address, nonce, digest, window, now)
        sql, arguments = create_arguments(self.engine.dialect, strict, params, expect, invoice)
        return await self._async_reads.spend_then_create(sql, arguments)

    @contextmanager
    def _pooled(self) -> Iterator[tuple[PoolProxiedConnection, _Run]]:
        """A pooled DBAPI connection and a ``_Run`` on it; a driver error that broke the
        connection retires it (``is_valid`` turns false: send nothing more on it)."""
        pooled = self.engine.raw_connection()

        def run(sql: str, arguments: Any, fetch: bool = True) -> list[Any]:
            rows, _ = on_dbapi(
                self.engine.dialect, pooled.dbapi_connection, sql, arguments,
                pooled.invalidate, fetch=fetch,
            )  # fmt: skip
            return rows

        try:
            yield pooled, run
        finally:
            pooled.close()

    @contextmanager
    def _autocommitted(self) -> Iterator[tuple[Any, Callable[[BaseException], None], _Run]]:
        """A PostgreSQL DBAPI connection in autocommit, what retires it and a ``_Run`` on
        it, for one statement that commits itself (a spend, a signed read, a signed
        creation): the held one (``_held``) when no other call has it, with no pool
        checkout and no switch to autocommit and back, given back to the pool after any
        error, as a connection checked out for the one call would have gone back; else a
        pooled one, switched and put back."""
        if self._may_hold and self._held_lock.acquire(blocking=False):
            try:
                held, run, _connection = self._held()
                try:
                    yield held.dbapi_connection, held.invalidate, run
                except BaseException:
                    self._release_writer()
                    raise
            finally:
                self._held_lock.release()
            return
        with self._pooled() as (pooled, run):
            dbapi: Any = pooled.dbapi_connection
            dbapi.autocommit = True
            try:
                yield dbapi, pooled.invalidate, run
            finally:
                if pooled.is_valid:
                    dbapi.autocommit = False

    def outbox_signal(self, name: str = "paycore-outbox") -> OutboxSignal | None:
        """A new wake-up for outbox readers (``outbox_signal.py``): LISTEN on PostgreSQL
        (``name`` is its ``application_name``), ``data_version`` on a SQLite file; None for
        an in-memory SQLite database, which no other process can write. Connecting may
        raise ``StorageUnavailable``."""
        self._ensure_schema()
        if self._postgres:
            try:
                return PostgresListen(self.url, name=name)
            except Exception as error:
                outage = unavailable(error)
                if outage is None:
                    raise
                raise outage from error
        if not self.has_outbox_signal:
            return None
        return SqliteDataVersion(str(self.url.database))

    def close(self) -> None:
        with self._exclusive(), self._held_lock:
            self._release_writer()
        if self._own_readers is not None:
            self._own_readers.close()
        if self._async_reads is not None:
            self._async_reads.close()
        self.engine.dispose()


def _spares_one(pool: Pool) -> bool:
    """Whether ``pool`` still has a connection for transactions while ``SqlStorage`` keeps
    one for spending nonces: a pool that opens one per checkout, or one of two or more
    (SQLAlchemy's default is 5, plus 10 overflow). A pool of one would be starved."""
    if isinstance(pool, NullPool):
        return True
    if isinstance(pool, QueuePool):
        overflow: int = pool._max_overflow  # -1: unbounded
        return overflow < 0 or pool.size() + overflow >= 2
    return False


class SqlTx(
    InvoiceStatements,
    TransactionStatements,
    DetectedStatements,
    AuthStatements,
    WebhookStatements,
    EndpointStatements,
    OutboxStatements,
    SignalLeaseStatements,
    ChainStatements,
    PriceStatements,
    RefundStatements,
    LinkStatements,
    MerchantStatements,
    ExportStatements,
    PruningStatements,
    SearchStatements,
    IdempotencyStatements,
    SubscriptionStatements,
    PayoutStatements,
    PayoutWatchStatements,
):
    """One unit of work on one connection; only valid inside its ``with`` block. Its
    statements are the mixins of the module docstring, one per concern; this class holds the
    connection they run on and writes the owner counts before the commit."""

    def __init__(self, connection: Connection, clock: Callable[[], float]) -> None:
        self._connection: Connection | None = connection
        self._clock = clock
        self._postgres = connection.dialect.name == "postgresql"
        self._insert = pg_insert if self._postgres else sqlite_insert
        #: Whether this transaction has published its lowest event id (Event order).
        self._published = False
        #: (owner, kind, chain_id, stripe) -> rows added by this transaction, not yet written.
        self._pending_counts: dict[tuple[str, str, int, int], int] = {}

    @property
    def _c(self) -> Connection:
        if self._connection is None:
            raise RuntimeError("storage transaction used after it ended")
        return self._connection

    def close(self) -> None:
        self._connection = None

    def before_commit(self) -> None:
        self._write_counts()
