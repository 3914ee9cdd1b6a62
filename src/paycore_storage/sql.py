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
store.

Counts. ``paycore_owner_counts`` keeps each owner's invoices and counted transactions per
chain; the changes of a transaction are added up and written just before it commits, in a
fixed row order, so that concurrent inserts of one owner hold the rows' locks only across
a commit and spread over ``COUNT_STRIPES`` rows; in-transaction reads add the pending part.
"""

from __future__ import annotations

import itertools
import json
import logging
import re
import threading
import time
import zlib
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

import attrs
from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Connection,
    Dialect,
    RowMapping,
    Select,
    Table,
    Text,
    and_,
    any_,
    bindparam,
    case,
    delete,
    func,
    insert,
    literal,
    literal_column,
    or_,
    select,
    text,
    tuple_,
    update,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.dialects.postgresql import Insert as PgInsert
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import Insert as SqliteInsert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import URL
from sqlalchemy.pool import PoolProxiedConnection
from sqlalchemy.sql.expression import ClauseElement

from paycore.chains.records import ChainCursor
from paycore.domain.changes import UPDATED
from paycore.domain.machine import OPEN
from paycore.domain.paging import TxPosition
from paycore.domain.records import (
    Deposit,
    Invoice,
    Json,
    NewEvent,
    OutboxEvent,
    OutboxRead,
    PollToken,
    PowChallenge,
    SessionKey,
    Transaction,
    TxType,
    WebhookConfig,
)
from paycore.links.records import LinkUse, PaymentLink
from paycore.management.records import AppKey, AppKeyAdd, EmailSetting
from paycore.merchant.profile import MerchantProfile
from paycore.prices.records import LockedQuote, ParkedDeposit, StoredPrice
from paycore.storage import OutboxSignal, PruneBatch, StorageTx
from paycore.storage.contract import TransferPlace
from paycore.storage.invoice_read import InvoiceRead, refuse_blocking
from paycore.webhooks.records import (
    DEFAULT_ENDPOINT,
    ClaimedDelivery,
    Delivery,
    DeliveryAttempt,
    DeliveryStatus,
    NewDelivery,
    Settlement,
)

from .decimals import exact_text
from .detected import DetectedStatements
from .endpoints import EndpointStatements
from .engine import advisory_key, database_url, is_memory_sqlite, make_engine, unavailable
from .idempotency import IdempotencyStatements
from .invoice_read import read_on
from .migrations import migrate
from .outbox_signal import CHANNEL as OUTBOX_CHANNEL
from .outbox_signal import PostgresListen, SqliteDataVersion
from .payouts import PayoutStatements
from .prepared import Prepared, copy_rows, on_dbapi, on_driver
from .refunds import RefundStatements
from .rows import (
    attempt_from_row,
    attempt_row,
    claimed_from_row,
    delivery_from_row,
    event_from_row,
    invoice_from_row,
    invoice_row,
    invoice_state_row,
    link_from_row,
    link_row,
    parked_from_row,
    parked_row,
    plain_row,
    transaction_from_row,
    transaction_row,
)
from .signal_leases import SignalLeaseStatements
from .tables import (
    app_keys,
    chain_cursors,
    disabled_indexes,
    email_settings,
    event_queues,
    invoice_quotes,
    invoices,
    merchant_profiles,
    notices,
    outbox,
    owner_counts,
    parked_deposits,
    payment_links,
    poll_tokens,
    pow_challenges,
    prices,
    seen_signatures,
    session_keys,
    session_nonces,
    transactions,
    wallet_indexes,
    webhook_attempts,
    webhook_deliveries,
    webhook_endpoints,
    webhooks,
)

log = logging.getLogger("paycore.events")

#: Rows each (owner, kind, chain) count is spread over (see Counts in the module docstring).
COUNT_STRIPES = 8
INVOICES, TRANSACTIONS = "invoices", "transactions"
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
_TX_ORDER = ("timestamp", "tx_hash", "log_index", "chain_id", "token")
#: The columns of ``SessionKey``; ``nonce_floor`` is the storage's own business.
_KEY_COLUMNS = [c for c in session_keys.c if c.name != "nonce_floor"]


_KEY_NAMES = [c.name for c in _KEY_COLUMNS]
#: ``accept_nonce`` is ``spend_nonce`` without the expiry test: every stored key passes it.
_ANY_KEY = -(2**63)


def _driver_sql(sql: str, postgres: bool) -> str:
    """``:name`` placeholders as the driver takes them (sqlite3 as they are, psycopg as
    ``%(name)s``), so the hot statements go to the driver with no compiling at all."""
    return re.sub(r":(\w+)", r"%(\1)s", sql) if postgres else sql


def _spend_sql(*, postgres: bool, strict: bool) -> tuple[str, ...]:
    """``SqlTx.spend_nonce`` as driver SQL: on PostgreSQL one statement (data-modifying
    CTEs: the key's ``UPDATE .. RETURNING``, the prune, the message's ``INSERT``); on SQLite
    the ``UPDATE .. RETURNING``, the ``INSERT`` and the prune, run one after the other in the
    same serial transaction. Text rather than Core (Core cannot write a data-modifying CTE
    around an ``INSERT .. ON CONFLICT`` that its cache keeps), sent as it is to the driver
    (``prepared.on_driver``); the columns and tables still come from ``tables.py``."""
    keys, used, names = session_keys.name, session_nonces.name, ", ".join(_KEY_NAMES)
    lowest = "last_seen_nonce" if strict else "last_seen_nonce - :window"
    where = (
        f"address = :address AND expires_at > :now AND nonce_floor < :nonce AND {lowest} < :nonce"
    )
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


#: The transaction rows' unique key: one transfer (``paycore.storage``: insert_transaction).
_TRANSFER_KEY = ["chain_id", "tx_hash", "log_index", "token"]
#: What deposits and deadlines change in an invoice; the rest is fixed at creation.
_INVOICE_STATE = ("status", "paid_amount", "payments")
#: An outbox event's columns besides its id.
_EVENT_COLUMNS = ("owner", "guid", "payload", "created_at", "type")


def _insert_into(dialect: Dialect, table: Table) -> PgInsert | SqliteInsert:
    """The dialect's own ``INSERT`` of ``table`` (the one with ``ON CONFLICT``)."""
    return (pg_insert if dialect.name == "postgresql" else sqlite_insert)(table)


#: PostgreSQL: ids for a batch of outbox events, drawn from the table's own sequence in one
#: round trip (the rows then go in by ``COPY``, which cannot return them).
_EVENT_IDS = text(
    f"SELECT nextval(pg_get_serial_sequence('{outbox.name}', 'id')) FROM generate_series(1, :n)"
)
#: PostgreSQL: many invoices' state from one JSON document, parsed by the server: one text
#: parameter instead of arrays, which psycopg dumps element by element in Python.
_INVOICE_STATES_JSON = text(
    f"""
    UPDATE {invoices.name} AS i
       SET status = v.status, paid_amount = v.paid, payments = v.payments
      FROM json_to_recordset(CAST(:states AS JSON))
           AS v(guid TEXT, status TEXT, paid NUMERIC, payments JSON)
     WHERE i.guid = v.guid
    """
)

#: SQLite: the outbox's AUTOINCREMENT sequence (the last id it handed out), and a batch of
#: events without RETURNING (``Prepared.run_many``).
_OUTBOX_SEQUENCE = text(f"SELECT seq FROM sqlite_sequence WHERE name = '{outbox.name}'")
_INSERT_EVENTS = Prepared(
    lambda _: outbox.insert().values(
        {name: bindparam(name, type_=outbox.c[name].type) for name in _EVENT_COLUMNS}
    )
)


def _insert_transactions(dialect: Dialect) -> ClauseElement:
    """A batch of transaction rows, every column bound (``Prepared.run_many``): a row whose
    transfer is known already is skipped, which the caller sees in the count."""
    names = [c.name for c in transactions.c if c.name != "id"]
    return (
        _insert_into(dialect, transactions)
        .values({name: bindparam(name, type_=transactions.c[name].type) for name in names})
        .on_conflict_do_nothing(index_elements=_TRANSFER_KEY)
    )


_INSERT_TRANSACTIONS = Prepared(_insert_transactions)
#: SQLite: a batch of invoices' new state, one row each (PostgreSQL takes one JSON document).
_UPDATE_INVOICE_STATES = Prepared(
    lambda _: (
        update(invoices)
        .where(invoices.c.guid == bindparam("_guid"))
        .values({name: bindparam(name, type_=invoices.c[name].type) for name in _INVOICE_STATE})
    )
)

#: Values bound in one ``IN (...)``: well below SQLite's limit on host parameters.
_IN_CHUNK = 500


def _chunks(values: Sequence[Any]) -> Iterator[Sequence[Any]]:
    for start in range(0, len(values), _IN_CHUNK):
        yield values[start : start + _IN_CHUNK]


#: (postgres, strict) -> the statements of ``spend_nonce``.
_SPEND = {
    (postgres, strict): _spend_sql(postgres=postgres, strict=strict)
    for postgres in (False, True)
    for strict in (False, True)
}
# Sorted so the compiled statement is the same in every process.
_OPEN_STATUSES = tuple(sorted(status.value for status in OPEN))
_PENDING = DeliveryStatus.PENDING.value


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
    return SessionKey(**dict(zip(_KEY_NAMES, rows[0], strict=True))) if rows else None


def _spend_on_sqlite(run: _Run, params: Mapping[str, Any], strict: bool) -> SessionKey | None:
    """The three statements straight to sqlite3 (see ``prepared``), inside a transaction
    the caller began and ends: committed when a key comes back, rolled back otherwise."""
    advance, record, prune = _SPEND[(False, strict)]
    rows = run(advance, params)
    if not rows:
        return None
    if not run(record, params):
        return None  # a replay; the caller's rollback undoes the (no-op) advance
    key = SessionKey(**dict(zip(_KEY_NAMES, rows[0], strict=True)))
    if key.last_seen_nonce == params["nonce"]:  # the window moved up: forget what fell out
        bound = key.last_seen_nonce - params["window"]
        run(prune, {"address": key.address, "bound": bound}, fetch=False)
    return key


def _add_count(dialect: Dialect) -> ClauseElement:
    stmt = _insert_into(dialect, owner_counts).values(
        {name: bindparam(name) for name in ("owner", "kind", "chain_id", "stripe", "n")}
    )
    return stmt.on_conflict_do_update(
        index_elements=["owner", "kind", "chain_id", "stripe"],
        set_={"n": owner_counts.c.n + stmt.excluded.n},
    )


#: A counter row's change, written at commit by every transaction that adds or removes an
#: invoice or a transaction row: compiled once (SQLAlchemy's cache does not keep an upsert,
#: and compiling it anew cost more than the rest of an invoice's creation).
_ADD_COUNT = Prepared(_add_count)


#: An invoice's own columns: ``seq``, its creation sequence, is the database's to number.
_INVOICE_COLUMNS = [column for column in invoices.c if column.name != "seq"]


def _insert_invoice(dialect: Dialect) -> ClauseElement:
    return (
        _insert_into(dialect, invoices)
        .values({column.name: bindparam(column.name) for column in _INVOICE_COLUMNS})
        .on_conflict_do_nothing(index_elements=["guid"])
        .returning(invoices.c.guid)
    )


_INVOICE_BY_GUID = select(*_INVOICE_COLUMNS).where(invoices.c.guid == bindparam("guid"))
#: The request path's invoice statements (see ``prepared``): read, read and lock, create.
_INVOICE = Prepared(lambda _: _INVOICE_BY_GUID, _INVOICE_COLUMNS)
_INVOICE_FOR_UPDATE = Prepared(lambda _: _INVOICE_BY_GUID.with_for_update(), _INVOICE_COLUMNS)
_INSERT_INVOICE = Prepared(_insert_invoice, [invoices.c.guid])


def _invoices_at(dialect: Dialect) -> Select[Any]:
    """The invoices at a batch of addresses (the watcher's), one statement of fixed text for
    any number of them: PostgreSQL takes them as an array, SQLite as a JSON array it unpacks
    (``json_each``), instead of an ``IN`` list of that many placeholders compiled anew for
    each batch. Ordered by address: with ``FOR UPDATE`` PostgreSQL takes the row locks in one
    global order ("C" collation sorts as Python does)."""
    if dialect.name == "postgresql":
        match = invoices.c.address == any_(bindparam("addresses", type_=ARRAY(Text)))
    else:
        listed: Select[Any] = select(literal_column("value")).select_from(
            func.json_each(bindparam("addresses", type_=Text))
        )
        match = invoices.c.address.in_(listed.scalar_subquery())
    return (
        select(*_INVOICE_COLUMNS)
        .where(invoices.c.chain_id == bindparam("chain_id"), match)
        .order_by(invoices.c.address, invoices.c.seq)
    )


_INVOICES_AT = Prepared(_invoices_at, _INVOICE_COLUMNS)
_INVOICES_AT_FOR_UPDATE = Prepared(
    lambda dialect: _invoices_at(dialect).with_for_update(), _INVOICE_COLUMNS
)


def _after(columns: Sequence[Any], values: Sequence[Any]) -> ColumnElement[bool]:
    """``(columns) > (values)``, row-value order: a keyset batch starts after ``values``."""
    bound = [literal(value, column.type) for column, value in zip(columns, values, strict=True)]
    return tuple_(*columns) > tuple_(*bound)


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
        try:
            self._ensure_schema()
            with self._exclusive(), self.engine.connect() as connection, connection.begin():
                tx = SqlTx(connection, self._clock)
                try:
                    yield tx
                    tx.before_commit()
                finally:
                    tx.close()
        except Exception as error:
            outage = unavailable(error)
            if outage is None:
                raise
            raise outage from error

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

        Both run on a pooled DBAPI connection without SQLAlchemy's ``Connection`` around
        it: its checkout, begin, commit and close cost more CPU than the statements (on a
        SQLite file, 0.2 ms of a verification's 0.5)."""
        params = _spend_params(address, nonce, digest, window, now)
        try:
            self._ensure_schema()
            with self._exclusive(), self._pooled() as (pooled, run):
                dbapi: Any = pooled.dbapi_connection
                if self._postgres:
                    dbapi.autocommit = True
                    try:
                        return _spend_on_postgres(run, params, strict)
                    finally:
                        if pooled.is_valid:  # not when an error retired the connection
                            dbapi.autocommit = False
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

    def read_invoice(self, guid: str) -> InvoiceRead | None:
        """One autocommitted ``SELECT`` on a pooled DBAPI connection (``invoice_read``):
        on PostgreSQL one round trip, no ``BEGIN`` or ``COMMIT``; on a SQLite file a read
        that takes neither ``BEGIN IMMEDIATE`` nor this process's writer lock (WAL lets it
        run beside a writer). An in-memory SQLite database has one connection, shared: the
        lock is taken there."""
        # Not on an event loop: a round trip to PostgreSQL (the loop would wait it out,
        # one request at a time, where worker threads overlap their waits), a shared lock
        # to wait for, a migration, a connection to open. A SQLite file's WAL read is none.
        pool: Any = self.engine.pool
        if self._postgres or self._memory or not self._migrated or pool.checkedin() == 0:
            refuse_blocking()
        try:
            self._ensure_schema()
            shared = self._shared_connection if self._memory else None
            with shared or nullcontext(), self._pooled() as (pooled, _run):
                dbapi: Any = pooled.dbapi_connection
                if not self._postgres:
                    return read_on(self.engine.dialect, dbapi, pooled.invalidate, guid)
                dbapi.autocommit = True
                try:
                    return read_on(self.engine.dialect, dbapi, pooled.invalidate, guid)
                finally:
                    if pooled.is_valid:
                        dbapi.autocommit = False
        except Exception as error:
            outage = unavailable(error)
            if outage is None:
                raise
            raise outage from error

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
        self.engine.dispose()


class SqlTx(
    RefundStatements,
    PayoutStatements,
    IdempotencyStatements,
    DetectedStatements,
    SignalLeaseStatements,
    EndpointStatements,
):
    """One unit of work on one connection; only valid inside its ``with`` block (the refund
    rows' statements are ``refunds.RefundStatements``, the idempotency keys'
    ``idempotency.IdempotencyStatements``, the detected transfers'
    ``detected.DetectedStatements``, the host-signal leases'
    ``signal_leases.SignalLeaseStatements``, the webhook endpoints'
    ``endpoints.EndpointStatements``)."""

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

    # -- statement helpers ----------------------------------------------------------------
    def _one(self, query: Select[Any]) -> RowMapping | None:
        row = self._c.execute(query).first()
        return None if row is None else row._mapping

    def _all(self, query: Select[Any]) -> list[RowMapping]:
        return [row._mapping for row in self._c.execute(query)]

    def _count(self, table: Table, *where: ColumnElement[bool]) -> int:
        return self._c.execute(select(func.count()).select_from(table).where(*where)).scalar_one()

    def _put(self, table: Table, row: Mapping[str, Any]) -> None:
        """Insert, or replace every column of the row with the same primary key."""
        key = [c.name for c in table.primary_key.columns]
        stmt = self._insert(table).values(row)
        self._c.execute(
            stmt.on_conflict_do_update(
                index_elements=key,
                set_={name: stmt.excluded[name] for name in row if name not in key},
            )
        )

    def _insert_new(self, table: Table, row: Mapping[str, Any], unique: Sequence[str]) -> bool:
        """Insert unless a row with the same ``unique`` columns exists; says which."""
        stmt = (
            self._insert(table)
            .values(row)
            .on_conflict_do_nothing(index_elements=unique)
            .returning(*[table.c[name] for name in unique])
        )
        return self._c.execute(stmt).first() is not None

    def _delete(self, table: Table, *where: ColumnElement[bool]) -> bool:
        return self._c.execute(delete(table).where(*where)).rowcount > 0

    # -- counts -----------------------------------------------------------------------------
    def _add_count(self, owner: str, kind: str, chain_id: int, row_key: str, delta: int) -> None:
        stripe = zlib.crc32(row_key.encode()) % COUNT_STRIPES
        slot = (owner, kind, chain_id, stripe)
        self._pending_counts[slot] = self._pending_counts.get(slot, 0) + delta

    def _write_counts(self) -> None:
        """Write this transaction's count changes, in sorted order so that two transactions
        changing the same rows take their locks in the same order and cannot deadlock."""
        pending, self._pending_counts = self._pending_counts, {}
        for (owner, kind, chain_id, stripe), delta in sorted(pending.items()):
            if delta == 0:
                continue
            row = {"owner": owner, "kind": kind, "chain_id": chain_id, "stripe": stripe}
            _ADD_COUNT.rows(self._c, {**row, "n": delta})

    def _counted(self, owner: str, kind: str, chain_id: int | None) -> int:
        c = owner_counts.c
        where = [c.owner == owner, c.kind == kind]
        if chain_id is not None:
            where.append(c.chain_id == chain_id)
        stored: int = self._c.execute(
            select(func.coalesce(func.sum(c.n), 0)).where(*where)
        ).scalar_one()
        pending = sum(
            delta
            for (o, k, chain, _stripe), delta in self._pending_counts.items()
            if o == owner and k == kind and chain_id in (None, chain)
        )
        return int(stored) + pending

    # -- invoices -------------------------------------------------------------------------
    def insert_invoice(self, invoice: Invoice) -> None:
        if not _INSERT_INVOICE.rows(self._c, invoice_row(invoice)):
            raise ValueError(f"invoice {invoice.guid} already exists")
        self._add_count(invoice.owner, INVOICES, invoice.chain_id, invoice.guid, 1)

    def get_invoice(self, guid: str, *, for_update: bool = False) -> Invoice | None:
        query = _INVOICE_FOR_UPDATE if for_update else _INVOICE
        rows = query.rows(self._c, {"guid": guid})
        return invoice_from_row(rows[0]) if rows else None

    def read_invoice(self, guid: str) -> InvoiceRead | None:
        connection = self._c
        dbapi = connection.connection.dbapi_connection
        return read_on(connection.dialect, dbapi, connection.invalidate, guid)

    def update_invoice(self, invoice: Invoice) -> None:
        """Raises ``KeyError`` for an unknown guid: an update that silently did nothing
        would hide a lost invoice. An invoice's owner and chain never change, so its count
        stays where it is."""
        row = invoice_row(invoice)
        del row["guid"]
        result = self._c.execute(
            update(invoices).where(invoices.c.guid == invoice.guid).values(row)
        )
        if result.rowcount == 0:
            raise KeyError(invoice.guid)

    def invoices_at_address(
        self, chain_id: int, address: str, *, for_update: bool = False
    ) -> list[Invoice]:
        query = (
            select(invoices)
            .where(invoices.c.chain_id == chain_id, invoices.c.address == address)
            .order_by(invoices.c.seq)
        )
        return [
            invoice_from_row(r) for r in self._all(query.with_for_update() if for_update else query)
        ]

    def invoices_at_addresses(
        self, chain_id: int, addresses: Sequence[str], *, for_update: bool = False
    ) -> dict[str, list[Invoice]]:
        found: dict[str, list[Invoice]] = {}
        wanted = sorted(set(addresses))
        params = {
            "chain_id": chain_id,
            "addresses": wanted if self._postgres else json.dumps(wanted),
        }
        prepared = _INVOICES_AT_FOR_UPDATE if for_update else _INVOICES_AT
        for row in prepared.rows(self._c, params):
            found.setdefault(row["address"], []).append(invoice_from_row(row))
        return found

    def update_invoice_states(self, records: Sequence[Invoice]) -> None:
        if len(records) < 2:
            for invoice in records:
                self.update_invoice(invoice)
            return
        states = [invoice_state_row(invoice) for invoice in records]
        if self._postgres:  # one statement for them all: a round trip per row costs more
            document = json.dumps(
                [
                    {
                        "guid": invoice.guid,
                        "status": state["status"],
                        "paid": exact_text(state["paid_amount"]),
                        "payments": state["payments"],
                    }
                    for invoice, state in zip(records, states, strict=True)
                ]
            )
            if self._c.execute(_INVOICE_STATES_JSON, {"states": document}).rowcount != len(states):
                self._unknown_invoice([invoice.guid for invoice in records])
            return
        rows = [
            {"_guid": invoice.guid, **state} for invoice, state in zip(records, states, strict=True)
        ]
        if _UPDATE_INVOICE_STATES.run_many(self._c, rows) != len(rows):
            self._unknown_invoice([r["_guid"] for r in rows])

    def _unknown_invoice(self, wanted: list[str]) -> None:
        query = select(invoices.c.guid).where(invoices.c.guid.in_(wanted))
        stored = set(self._c.execute(query).scalars())
        raise KeyError(next((guid for guid in wanted if guid not in stored), wanted[0]))

    @staticmethod
    def _invoice_filter(
        owner: str | None, chain_id: int | None, address: str | None
    ) -> list[ColumnElement[bool]]:
        return [
            column == wanted
            for column, wanted in (
                (invoices.c.owner, owner),
                (invoices.c.chain_id, chain_id),
                (invoices.c.address, address),
            )
            if wanted is not None
        ]

    def list_invoices(
        self,
        *,
        owner: str | None = None,
        chain_id: int | None = None,
        address: str | None = None,
        offset: int = 0,
        limit: int | None = None,
        newest_first: bool = False,
    ) -> tuple[list[Invoice], int]:
        """An offset is skipped in the index alone (a "deferred join"): the page's sequence
        numbers come from (owner, seq) -- an index-only scan on PostgreSQL, a covering index
        on SQLite, where seq is the rowid -- and only the page's own rows are read."""
        where = self._invoice_filter(owner, chain_id, address)
        order = invoices.c.seq.desc() if newest_first else invoices.c.seq
        if offset == 0 and limit is None:
            query = select(invoices).where(*where).order_by(order)
        else:
            page = (
                select(invoices.c.seq)
                .where(*where)
                .order_by(order)
                .offset(offset)
                .limit(limit)
                .subquery()
            )
            query = select(invoices).join(page, invoices.c.seq == page.c.seq).order_by(order)
        items = [invoice_from_row(r) for r in self._all(query)]
        return items, self.count_invoices(owner=owner, chain_id=chain_id, address=address)

    def invoices_after(
        self,
        *,
        owner: str | None = None,
        chain_id: int | None = None,
        address: str | None = None,
        after: str | None = None,
        limit: int,
        newest_first: bool = False,
    ) -> list[Invoice] | None:
        where = self._invoice_filter(owner, chain_id, address)
        if after is not None:
            bound = self._c.execute(
                select(invoices.c.seq).where(invoices.c.guid == after)
            ).scalar_one_or_none()
            if bound is None:
                return None
            where.append(invoices.c.seq < bound if newest_first else invoices.c.seq > bound)
        order = invoices.c.seq.desc() if newest_first else invoices.c.seq
        query = select(invoices).where(*where).order_by(order).limit(limit)
        return [invoice_from_row(r) for r in self._all(query)]

    def count_invoices(
        self, *, owner: str | None = None, chain_id: int | None = None, address: str | None = None
    ) -> int:
        if owner is not None and address is None:
            return self._counted(owner, INVOICES, chain_id)
        return self._count(invoices, *self._invoice_filter(owner, chain_id, address))

    def due_for_expiry(self, now: int, limit: int) -> list[str]:
        query = (
            select(invoices.c.guid)
            .where(invoices.c.status.in_(_OPEN_STATUSES), invoices.c.deadline < now)
            .order_by(invoices.c.deadline, invoices.c.guid)
            .limit(limit)
        )
        return list(self._c.execute(query).scalars())

    # -- transactions ---------------------------------------------------------------------
    def _count_transaction(self, tx: Transaction, delta: int) -> None:
        row_key = f"{tx.tx_hash}:{tx.log_index}:{tx.token}"
        self._add_count(tx.owner, TRANSACTIONS, tx.chain_id, row_key, delta)

    def insert_transaction(self, tx: Transaction) -> bool:
        row = transaction_row(tx)
        if self._insert_new(transactions, row, _TRANSFER_KEY):
            if not tx.reorged:
                self._count_transaction(tx, 1)
            return True
        return self._revive(tx, row)

    def _revive(self, tx: Transaction, row: Mapping[str, Any]) -> bool:
        """Known already: only a reorged row gives way, and the WHERE decides that in the
        same statement that replaces it (a concurrent revival finds it revived). The
        flagged row was no longer counted; the revived one is."""
        replaced = self._c.execute(
            update(transactions)
            .where(*self._transfer(*tx.key), transactions.c.reorged.is_(True))
            .values(row)
        )
        if replaced.rowcount > 0 and not tx.reorged:
            self._count_transaction(tx, 1)
        return replaced.rowcount > 0

    def insert_transactions(self, records: Sequence[Transaction]) -> list[bool]:
        if len(records) < 2:
            return [self.insert_transaction(record) for record in records]
        # All new is the watcher's case: one executemany, no RETURNING (which costs the
        # driver several times the insert). Any row known already makes the count fall
        # short; then the savepoint undoes the lot and each is decided as one insert.
        rows = [transaction_row(record) for record in records]
        savepoint = self._c.begin_nested()
        # The driver's own executemany (SQLAlchemy would send psycopg a multi-row VALUES
        # and lose the row count, and build each row's parameters through its compiler).
        written = _INSERT_TRANSACTIONS.run_many(self._c, rows)
        if written == len(records):
            savepoint.commit()
            for record in records:  # counted exactly as ``insert_transaction`` counts one
                if not record.reorged:
                    self._count_transaction(record, 1)
            return [True] * len(records)
        savepoint.rollback()
        return [self.insert_transaction(record) for record in records]

    def known_transfers(
        self, keys: Sequence[tuple[int, str, int, str]]
    ) -> set[tuple[int, str, int, str]]:
        wanted = set(keys)
        found: set[tuple[int, str, int, str]] = set()
        hashes_by_chain: dict[int, set[str]] = {}
        for chain_id, tx_hash, _index, _token in wanted:
            hashes_by_chain.setdefault(chain_id, set()).add(tx_hash)
        t = transactions.c
        for chain_id, hashes in hashes_by_chain.items():
            for chunk in _chunks(sorted(hashes)):
                query = select(t.chain_id, t.tx_hash, t.log_index, t.token).where(
                    t.chain_id == chain_id, t.tx_hash.in_(chunk), t.reorged.is_(False)
                )
                found.update(k for k in map(tuple, self._c.execute(query)) if k in wanted)
        return found

    @staticmethod
    def _transfer(chain_id: int, tx_hash: str, log_index: int, token: str) -> list[Any]:
        return [
            transactions.c.chain_id == chain_id,
            transactions.c.tx_hash == tx_hash,
            transactions.c.log_index == log_index,
            transactions.c.token == token,
        ]

    def recorded_deposits(self, chain_id: int, from_block: int) -> list[Transaction]:
        query = (
            select(transactions)
            .where(
                transactions.c.chain_id == chain_id,
                transactions.c.block_number >= from_block,
                transactions.c.type == TxType.DEPOSIT.value,
                transactions.c.reorged.is_(False),
            )
            .order_by(
                transactions.c.block_number.desc(),
                transactions.c.tx_hash,
                transactions.c.log_index,
            )
        )
        return [transaction_from_row(r) for r in self._all(query)]

    def mark_reorged(
        self, chain_id: int, tx_hash: str, log_index: int, token: str
    ) -> Transaction | None:
        flagged = self._c.execute(
            update(transactions)
            .where(
                *self._transfer(chain_id, tx_hash, log_index, token),
                transactions.c.reorged.is_(False),
            )
            .values(reorged=True)
            .returning(*transactions.c)
        ).first()
        if flagged is None:
            return None
        record = transaction_from_row(flagged._mapping)
        self._count_transaction(record, -1)
        return record

    @staticmethod
    def _listed_transactions(owner: str, chain_id: int | None) -> list[ColumnElement[bool]]:
        """The rows GET /transactions shows; ``reorged IS false`` is written exactly as the
        partial index ``ix_paycore_transactions_owner_newest`` says it, so both databases
        see that the index covers the query."""
        where = [transactions.c.owner == owner, transactions.c.reorged.is_(False)]
        if chain_id is not None:
            where.append(transactions.c.chain_id == chain_id)
        return where

    def list_transactions(
        self, owner: str, *, chain_id: int | None = None, offset: int = 0, limit: int = 200
    ) -> tuple[list[Transaction], int]:
        """An offset is skipped in ``ix_paycore_transactions_owner_newest`` alone, and only the
        page's rows are read, by their unique transfer key (as in ``list_invoices``)."""
        t = transactions.c
        where = self._listed_transactions(owner, chain_id)
        newest_first = [t[name].desc() for name in _TX_ORDER]
        page = (
            select(*[t[name] for name in _TRANSFER_KEY])
            .where(*where)
            .order_by(*newest_first)
            .offset(offset)
            .limit(limit)
            .subquery()
        )
        query = (
            select(transactions)
            .join(
                page,
                tuple_(*[t[n] for n in _TRANSFER_KEY])
                == tuple_(*[page.c[n] for n in _TRANSFER_KEY]),
            )
            .order_by(*newest_first)
        )
        items = [transaction_from_row(r) for r in self._all(query)]
        return items, self.count_transactions(owner, chain_id=chain_id)

    def transactions_after(
        self,
        owner: str,
        *,
        chain_id: int | None = None,
        after: TxPosition | None = None,
        limit: int,
        newest_first: bool = True,
    ) -> list[Transaction]:
        t = transactions.c
        where = self._listed_transactions(owner, chain_id)
        if after is not None:
            here = tuple_(*[t[name] for name in _TX_ORDER])
            there = tuple_(
                *[
                    literal(value, t[name].type)
                    for name, value in zip(_TX_ORDER, after, strict=True)
                ]
            )
            where.append(here < there if newest_first else here > there)
        order = [t[name].desc() if newest_first else t[name] for name in _TX_ORDER]
        query = select(transactions).where(*where).order_by(*order).limit(limit)
        return [transaction_from_row(r) for r in self._all(query)]

    def count_transactions(self, owner: str, *, chain_id: int | None = None) -> int:
        return self._counted(owner, TRANSACTIONS, chain_id)

    # -- session keys ---------------------------------------------------------------------
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

    # -- smart-wallet deposit indexes -------------------------------------------------------
    def allocate_wallet_index(self, owner: str, chain_id: int) -> int:
        first = self._insert(wallet_indexes).values(owner=owner, chain_id=chain_id, next_index=1)
        counted = first.on_conflict_do_update(
            index_elements=["owner", "chain_id"],
            set_={"next_index": wallet_indexes.c.next_index + 1},
        ).returning(wallet_indexes.c.next_index)
        next_index: int = self._c.execute(counted).scalar_one()
        return next_index - 1

    # -- proof of work --------------------------------------------------------------------
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

    # -- salt-signed calls ----------------------------------------------------------------
    def remember_signature(self, digest: str, expires_at: int, *, now: int | None = None) -> bool:
        current = self._clock() if now is None else now
        seen = self._insert(seen_signatures).values(digest=digest, expires_at=expires_at)
        unless_live = seen.on_conflict_do_update(
            index_elements=["digest"],
            set_={"expires_at": seen.excluded.expires_at},
            where=seen_signatures.c.expires_at <= current,
        ).returning(seen_signatures.c.digest)
        return self._c.execute(unless_live).first() is not None

    # -- webhooks -------------------------------------------------------------------------
    def get_webhook(self, owner: str) -> WebhookConfig | None:
        row = self._one(select(webhooks).where(webhooks.c.owner == owner))
        return None if row is None else WebhookConfig(**row)

    def put_webhook(self, config: WebhookConfig) -> None:
        self._put(webhooks, plain_row(config))

    def delete_webhook(self, owner: str) -> bool:
        return self._delete(webhooks, webhooks.c.owner == owner)

    # -- merchant profiles ------------------------------------------------------------------
    def get_merchant_profile(self, owner: str) -> MerchantProfile | None:
        row = self._one(select(merchant_profiles).where(merchant_profiles.c.owner == owner))
        return None if row is None else MerchantProfile(**row)

    def put_merchant_profile(self, profile: MerchantProfile) -> None:
        self._put(merchant_profiles, plain_row(profile))

    # -- events ---------------------------------------------------------------------------
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

    # -- webhook deliveries -----------------------------------------------------------------
    def enqueue_delivery(
        self, event_id: int, owner: str, guid: str, webhook_id: str, body: str, now: int
    ) -> int | None:
        d = webhook_deliveries
        values = {
            "webhook_id": literal(webhook_id, d.c.webhook_id.type),
            "event_id": literal(event_id, BigInteger()),
            "owner": webhooks.c.owner,
            "guid": literal(guid, d.c.guid.type),
            "body": literal(body, Text()),
            "status": literal(_PENDING, d.c.status.type),
            "attempts": literal(0, d.c.attempts.type),
            "created_at": literal(now, BigInteger()),
            "next_attempt_at": literal(now, BigInteger()),
            "retry_from": literal(now, BigInteger()),
        }
        source = select(*values.values()).where(webhooks.c.owner == owner, webhooks.c.url != "")
        stmt = insert(d).from_select(list(values), source).returning(d.c.id)
        delivery_id: int | None = self._c.execute(stmt).scalar_one_or_none()
        return delivery_id

    def enqueue_deliveries(self, deliveries: Sequence[NewDelivery]) -> int:
        if len(deliveries) < 2 and all(d.endpoint_id is None for d in deliveries):
            queued = [
                self.enqueue_delivery(d.event_id, d.owner, d.guid, d.webhook_id, d.body, d.now)
                for d in deliveries
            ]
            return sum(1 for delivery_id in queued if delivery_id is not None)
        owners = sorted({d.owner for d in deliveries if d.endpoint_id is None})
        with_url = (
            set(
                self._c.execute(
                    select(webhooks.c.owner).where(
                        webhooks.c.owner.in_(owners), webhooks.c.url != ""
                    )
                ).scalars()
            )
            if owners
            else set()
        )
        rows = [
            {
                "webhook_id": d.webhook_id,
                "event_id": d.event_id,
                "owner": d.owner,
                "guid": d.guid,
                "body": d.body,
                "status": _PENDING,
                "attempts": 0,
                "created_at": d.now,
                "next_attempt_at": d.now,
                "retry_from": d.now,
                "endpoint_id": d.endpoint_id,
            }
            for d in deliveries
            if d.endpoint_id is not None or d.owner in with_url
        ]
        if rows:  # one row at a time, in order: an invoice's deliveries keep their order
            self._c.execute(insert(webhook_deliveries), rows)
        return len(rows)

    def claim_deliveries(
        self,
        now: int,
        lease_ms: int,
        token: str,
        limit: int,
        *,
        skip_owners: Collection[str] = (),
        skip_urls: Collection[str] = (),
    ) -> list[ClaimedDelivery]:
        d = webhook_deliveries
        skipped: list[ColumnElement[bool]] = []  # the capped owners and URLs, passed over
        if skip_owners:
            skipped.append(d.c.owner.not_in(sorted(skip_owners)))
        if skip_urls:
            # The target is the delivery's endpoint when it names one, else the owner's URL.
            urls = sorted(skip_urls)
            e = webhook_endpoints
            owner_at_url = select(webhooks.c.owner).where(webhooks.c.url.in_(urls))
            endpoint_at_url = select(e.c.id).where(e.c.owner == d.c.owner, e.c.url.in_(urls))
            skipped.append(
                or_(
                    and_(d.c.endpoint_id.is_(None), d.c.owner.not_in(owner_at_url)),
                    and_(d.c.endpoint_id.is_not(None), d.c.endpoint_id.not_in(endpoint_at_url)),
                )
            )
        earlier = d.alias("earlier")
        earlier_pending = (
            select(earlier.c.id)
            .where(
                earlier.c.guid == d.c.guid,
                earlier.c.status == _PENDING,
                earlier.c.id < d.c.id,
                earlier.c.endpoint_id.is_not_distinct_from(d.c.endpoint_id),
            )
            .exists()
        )
        due = (
            select(d.c.id)
            .where(
                d.c.status == _PENDING,
                d.c.next_attempt_at <= now,
                or_(d.c.lease_until.is_(None), d.c.lease_until <= now),
                ~earlier_pending,
                *skipped,
            )
            .order_by(d.c.next_attempt_at, d.c.id)
            .limit(limit)
            .with_for_update(skip_locked=True, of=d)
        )
        ids = list(self._c.execute(due).scalars())
        if not ids:
            return []
        leased = self._c.execute(
            update(d)
            .where(d.c.id.in_(ids))
            .values(attempts=d.c.attempts + 1, lease_token=token, lease_until=now + lease_ms)
            .returning(*d.c)
        )
        rows = sorted((r._mapping for r in leased), key=lambda r: ids.index(r["id"]))
        owners = {r["owner"] for r in rows}
        targets: dict[tuple[str, str | None], tuple[str, str]] = {
            (t["owner"], None): (t["url"], t["secret"])
            for t in self._all(select(webhooks).where(webhooks.c.owner.in_(owners)))
        }
        if any(r["endpoint_id"] is not None for r in rows):
            for endpoint in self.webhook_endpoints(sorted(owners)):
                if endpoint.enabled:
                    targets[(endpoint.owner, endpoint.id)] = (endpoint.url, endpoint.secret)
        return [
            claimed_from_row(r, *targets.get((r["owner"], r["endpoint_id"]), ("", "")))
            for r in rows
        ]

    def finish_delivery(
        self, delivery_id: int, token: str, attempt: DeliveryAttempt, settlement: Settlement
    ) -> bool:
        self._c.execute(webhook_attempts.insert().values(attempt_row(attempt)))
        d = webhook_deliveries
        pending = settlement.status is DeliveryStatus.PENDING
        result = self._c.execute(
            update(d)
            .where(d.c.id == delivery_id, d.c.lease_token == token)
            .values(
                status=settlement.status.value,
                next_attempt_at=settlement.next_at if pending else None,
                lease_token=None,
                lease_until=None,
            )
        )
        return result.rowcount == 1

    def list_deliveries(
        self,
        owner: str,
        *,
        status: DeliveryStatus | None = None,
        guid: str | None = None,
        offset: int = 0,
        limit: int = 50,
        endpoint_id: str | None = None,
    ) -> tuple[list[Delivery], int]:
        d = webhook_deliveries
        where = [d.c.owner == owner]
        if status is not None:
            where.append(d.c.status == status.value)
        if guid is not None:
            where.append(d.c.guid == guid)
        if endpoint_id == DEFAULT_ENDPOINT:
            where.append(d.c.endpoint_id.is_(None))
        elif endpoint_id is not None:
            where.append(d.c.endpoint_id == endpoint_id)
        page = [
            delivery_from_row(r)
            for r in self._all(
                select(d).where(*where).order_by(d.c.id.desc()).offset(offset).limit(limit)
            )
        ]
        logs: dict[int, list[DeliveryAttempt]] = {}
        if page:
            a = webhook_attempts
            query = select(a).where(a.c.delivery_id.in_([x.id for x in page])).order_by(a.c.id)
            for row in self._all(query):
                logs.setdefault(row["delivery_id"], []).append(attempt_from_row(row))
        items = [attrs.evolve(x, log=tuple(logs.get(x.id, ()))) for x in page]
        return items, self._count(d, *where)

    def redeliver(self, delivery_id: int, owner: str, now: int) -> Delivery | None:
        d = webhook_deliveries
        row = self._c.execute(
            update(d)
            .where(d.c.id == delivery_id, d.c.owner == owner)
            .values(status=_PENDING, attempts=0, next_attempt_at=now, retry_from=now)
            .returning(*d.c)
        ).first()
        return None if row is None else delivery_from_row(row._mapping)

    def redeliver_failed(self, owner: str, since: int, now: int) -> int:
        d = webhook_deliveries
        result = self._c.execute(
            update(d)
            .where(
                d.c.owner == owner,
                d.c.status == DeliveryStatus.FAILED.value,
                d.c.created_at >= since,
            )
            .values(status=_PENDING, attempts=0, next_attempt_at=now, retry_from=now)
        )
        return int(result.rowcount)

    # -- accounting export ----------------------------------------------------------------
    def export_invoices(
        self,
        owner: str,
        *,
        start: int,
        end: int | None,
        after: tuple[int, str] | None,
        limit: int,
    ) -> list[Invoice]:
        i = invoices.c
        where = [i.owner == owner, i.created_at >= start]
        if end is not None:
            where.append(i.created_at < end)
        if after is not None:
            where.append(_after((i.created_at, i.guid), after))
        query = select(invoices).where(*where).order_by(i.created_at, i.guid).limit(limit)
        return [invoice_from_row(r) for r in self._all(query)]

    def export_transactions(
        self,
        owner: str,
        kind: TxType,
        *,
        start: int,
        end: int | None,
        after: TransferPlace | None,
        limit: int,
    ) -> list[Transaction]:
        t = transactions.c
        place = (t.timestamp, t.chain_id, t.tx_hash, t.log_index, t.token)
        where = [
            t.owner == owner,
            t.type == kind.value,
            t.reorged.is_(False),
            t.timestamp >= start,
        ]
        if end is not None:
            where.append(t.timestamp < end)
        if after is not None:
            where.append(_after(place, after))
        query = select(transactions).where(*where).order_by(*place).limit(limit)
        return [transaction_from_row(r) for r in self._all(query)]

    # -- retention ------------------------------------------------------------------------
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

    # -- legacy poll tokens ---------------------------------------------------------------
    def put_poll_token(self, token: PollToken) -> None:
        self._put(poll_tokens, plain_row(token))

    def get_poll_token(self, token: str) -> PollToken | None:
        row = self._one(select(poll_tokens).where(poll_tokens.c.token == token))
        return None if row is None else PollToken(**row)

    # -- chain watchers -------------------------------------------------------------------
    def claim_chain(
        self, chain_id: int, holder: str, now: int, lease_ms: int
    ) -> ChainCursor | None:
        first = self._insert(chain_cursors).values(
            chain_id=chain_id, holder=holder, lease_until=now + lease_ms
        )
        claimed = first.on_conflict_do_update(
            index_elements=["chain_id"],
            set_={"holder": holder, "lease_until": now + lease_ms},
            where=or_(
                chain_cursors.c.holder.is_(None),
                chain_cursors.c.holder == holder,
                chain_cursors.c.lease_until <= now,
            ),
        ).returning(*chain_cursors.c)
        row = self._c.execute(claimed).first()
        return None if row is None else ChainCursor(**row._mapping)

    def advance_chain(
        self,
        chain_id: int,
        holder: str,
        block_number: int,
        block_hash: str | None,
        now: int,
        lease_ms: int,
    ) -> bool:
        result = self._c.execute(
            update(chain_cursors)
            .where(chain_cursors.c.chain_id == chain_id, chain_cursors.c.holder == holder)
            .values(block_number=block_number, block_hash=block_hash, lease_until=now + lease_ms)
        )
        return result.rowcount == 1

    def release_chain(self, chain_id: int, holder: str) -> None:
        self._c.execute(
            update(chain_cursors)
            .where(chain_cursors.c.chain_id == chain_id, chain_cursors.c.holder == holder)
            .values(holder=None, lease_until=0)
        )

    def get_chain_cursor(self, chain_id: int) -> ChainCursor | None:
        row = self._one(select(chain_cursors).where(chain_cursors.c.chain_id == chain_id))
        return None if row is None else ChainCursor(**row)

    def watched_addresses(self, chain_id: int, deadline_after: int) -> list[str]:
        query = (
            select(invoices.c.address)
            .where(
                invoices.c.chain_id == chain_id,
                or_(
                    invoices.c.status.in_(_OPEN_STATUSES),
                    invoices.c.deadline >= deadline_after,
                ),
            )
            .distinct()
            .order_by(invoices.c.address)
        )
        return list(self._c.execute(query).scalars())

    def earliest_watched(self, chain_id: int, deadline_after: int) -> int | None:
        query = select(func.min(invoices.c.created_at)).where(
            invoices.c.chain_id == chain_id,
            or_(invoices.c.status.in_(_OPEN_STATUSES), invoices.c.deadline >= deadline_after),
        )
        found = self._c.execute(query).scalar()
        return None if found is None else int(found)

    # -- owner management -----------------------------------------------------------------
    def owner_is_known(self, owner: str) -> bool:
        for table in (
            invoices,
            session_keys,
            webhooks,
            webhook_endpoints,
            merchant_profiles,
            app_keys,
            email_settings,
            wallet_indexes,
        ):
            if self._one(select(literal(1)).select_from(table).where(table.c.owner == owner)):
                return True
        return False

    def get_app_key(self, address: str) -> AppKey | None:
        row = self._one(select(app_keys).where(app_keys.c.address == address))
        return None if row is None else AppKey(**row)

    def app_keys_of(self, owner: str) -> list[AppKey]:
        query = (
            select(app_keys)
            .where(app_keys.c.owner == owner)
            .order_by(app_keys.c.added_at, app_keys.c.address)
        )
        return [AppKey(**row) for row in self._all(query)]

    def add_app_key(self, key: AppKey, cap: int) -> AppKeyAdd:
        if self._postgres:
            # Serialises adds for one owner, so two racing adds cannot both pass the count.
            lock = advisory_key(f"paycore.app_keys:{key.owner}")
            self._c.execute(select(func.pg_advisory_xact_lock(lock)))
        existing = self.get_app_key(key.address)
        if existing is not None:
            return AppKeyAdd.EXISTS if existing.owner == key.owner else AppKeyAdd.TAKEN
        if self._count(app_keys, app_keys.c.owner == key.owner) >= cap:
            return AppKeyAdd.FULL
        if self._insert_new(app_keys, plain_row(key), ["address"]):
            return AppKeyAdd.ADDED
        # Another owner's add of the same address committed in between.
        existing = self.get_app_key(key.address)
        return AppKeyAdd.EXISTS if existing and existing.owner == key.owner else AppKeyAdd.TAKEN

    def remove_app_key(self, owner: str, address: str) -> bool:
        return self._delete(app_keys, app_keys.c.address == address, app_keys.c.owner == owner)

    def get_email(self, owner: str, chain_id: int) -> EmailSetting | None:
        e = email_settings
        row = self._one(select(e).where(e.c.owner == owner, e.c.chain_id == chain_id))
        return None if row is None else EmailSetting(**row)

    def emails_of(self, owner: str) -> list[EmailSetting]:
        e = email_settings
        query = select(e).where(e.c.owner == owner).order_by(e.c.chain_id)
        return [EmailSetting(**row) for row in self._all(query)]

    def put_email(self, setting: EmailSetting) -> None:
        self._put(email_settings, plain_row(setting))

    def delete_email(self, owner: str, chain_id: int) -> bool:
        e = email_settings
        return self._delete(e, e.c.owner == owner, e.c.chain_id == chain_id)

    def enable_emails(
        self, owner: str, chain_id: int | None, enabled: bool, now: int
    ) -> list[EmailSetting]:
        e = email_settings
        where = [e.c.owner == owner]
        if chain_id is not None:
            where.append(e.c.chain_id == chain_id)
        # Turning on one already on keeps its stamp; turning one off clears it.
        stamp = (
            case((e.c.enabled.is_(True), e.c.enabled_at), else_=literal(now, BigInteger()))
            if enabled
            else None
        )
        result = self._c.execute(
            update(e).where(*where).values(enabled=enabled, enabled_at=stamp).returning(*e.c)
        )
        changed = [EmailSetting(**row._mapping) for row in result]
        return sorted(changed, key=lambda setting: setting.chain_id)

    def set_wallet_index_disabled(
        self, owner: str, chain_id: int, index: int, disabled: bool, now: int
    ) -> bool:
        d = disabled_indexes
        if disabled:
            row = {"owner": owner, "chain_id": chain_id, "wallet_index": index, "disabled_at": now}
            return self._insert_new(d, row, ["owner", "chain_id", "wallet_index"])
        return self._delete(
            d, d.c.owner == owner, d.c.chain_id == chain_id, d.c.wallet_index == index
        )

    def disabled_wallet_indexes(self, owner: str, chain_id: int) -> list[int]:
        d = disabled_indexes
        query = (
            select(d.c.wallet_index)
            .where(d.c.owner == owner, d.c.chain_id == chain_id)
            .order_by(d.c.wallet_index)
        )
        return list(self._c.execute(query).scalars())

    def claim_notice(self, key: str, now: int) -> bool:
        return self._insert_new(notices, {"key": key, "claimed_at": now}, ["key"])

    # -- payment links ----------------------------------------------------------------------
    def insert_payment_link(self, link: PaymentLink) -> None:
        if not self._insert_new(payment_links, link_row(link), ["id"]):
            raise ValueError(f"payment link {link.id} already exists")

    def get_payment_link(self, link_id: str) -> PaymentLink | None:
        row = self._one(select(payment_links).where(payment_links.c.id == link_id))
        return None if row is None else link_from_row(row)

    def list_payment_links(
        self, owner: str, *, offset: int = 0, limit: int = 50
    ) -> tuple[list[PaymentLink], int]:
        p = payment_links.c
        query = (
            select(payment_links)
            .where(p.owner == owner)
            .order_by(p.created_at.desc(), p.id.desc())
            .offset(offset)
            .limit(limit)
        )
        items = [link_from_row(r) for r in self._all(query)]
        return items, self._count(payment_links, p.owner == owner)

    def disable_payment_link(self, link_id: str, owner: str, now: int) -> PaymentLink | None:
        p = payment_links.c
        row = self._c.execute(
            update(payment_links)
            .where(p.id == link_id, p.owner == owner)
            .values(disabled_at=func.coalesce(p.disabled_at, now))
            .returning(*payment_links.c)
        ).first()
        return None if row is None else link_from_row(row._mapping)

    def use_payment_link(
        self, link_id: str, now: int, *, rate_limit: int, rate_window: int
    ) -> tuple[LinkUse, PaymentLink | None]:
        """One ``UPDATE .. WHERE <every condition> RETURNING``: the check and the count are
        one statement, and on PostgreSQL the row lock queues concurrent uses behind it, each
        re-checking the conditions on the row as the previous one left it."""
        p = payment_links.c
        new_window = p.window_start + rate_window <= now
        used = self._c.execute(
            update(payment_links)
            .where(
                p.id == link_id,
                p.disabled_at.is_(None),
                or_(p.expires_at.is_(None), p.expires_at > now),
                or_(p.max_uses.is_(None), p.uses < p.max_uses),
                or_(new_window, p.window_opens < rate_limit),
            )
            .values(
                uses=p.uses + 1,
                window_start=case((new_window, now), else_=p.window_start),
                window_opens=case((new_window, 1), else_=p.window_opens + 1),
            )
            .returning(*payment_links.c)
        ).first()
        if used is not None:
            return LinkUse.OPENED, link_from_row(used._mapping)
        row = self._one(select(payment_links).where(p.id == link_id))
        if row is None:
            return LinkUse.UNKNOWN, None
        link = link_from_row(row)
        if link.disabled_at is not None:
            return LinkUse.DISABLED, link
        if link.expires_at is not None and now >= link.expires_at:
            return LinkUse.EXPIRED, link
        if link.max_uses is not None and link.uses >= link.max_uses:
            return LinkUse.USED_UP, link
        return LinkUse.BUSY, link

    # -- prices -----------------------------------------------------------------------------
    def put_prices(self, rows: Sequence[StoredPrice]) -> None:
        for row in rows:
            self._put(prices, attrs.asdict(row, recurse=False))

    def get_prices(self, vs_currency: str | None = None) -> list[StoredPrice]:
        query = select(prices).order_by(prices.c.vs_currency, prices.c.token)
        if vs_currency is not None:
            query = query.where(prices.c.vs_currency == vs_currency)
        return [StoredPrice(**row) for row in self._all(query)]

    def get_price(self, token: str, vs_currency: str) -> StoredPrice | None:
        row = self._one(
            select(prices).where(prices.c.token == token, prices.c.vs_currency == vs_currency)
        )
        return None if row is None else StoredPrice(**row)

    def put_quotes(self, quotes: Sequence[LockedQuote]) -> None:
        for quote in quotes:
            self._put(invoice_quotes, attrs.asdict(quote, recurse=False))

    def get_quotes(self, guid: str) -> list[LockedQuote]:
        q = invoice_quotes
        query = select(q).where(q.c.guid == guid).order_by(q.c.token)
        return [LockedQuote(**row) for row in self._all(query)]

    def get_quotes_of(self, guids: Sequence[str]) -> list[LockedQuote]:
        q = invoice_quotes
        found: list[LockedQuote] = []
        for chunk in _chunks(sorted(set(guids))):
            query = select(q).where(q.c.guid.in_(chunk)).order_by(q.c.guid, q.c.token)
            found += [LockedQuote(**row) for row in self._all(query)]
        return found

    def park_deposit(self, parked: ParkedDeposit) -> bool:
        unique = ["chain_id", "tx_hash", "log_index", "token"]
        return self._insert_new(parked_deposits, parked_row(parked), unique)

    def parked_deposits(self, chain_id: int, limit: int) -> list[ParkedDeposit]:
        p = parked_deposits
        query = select(p).where(p.c.chain_id == chain_id).order_by(p.c.id).limit(limit)
        return [parked_from_row(row) for row in self._all(query)]

    def unpark_deposit(self, deposit: Deposit) -> bool:
        p = parked_deposits
        return self._delete(
            p,
            p.c.chain_id == deposit.chain_id,
            p.c.tx_hash == deposit.tx_hash,
            p.c.log_index == deposit.log_index,
            p.c.token == deposit.token,
        )

    def parked_tokens(self) -> list[str]:
        p = parked_deposits
        query = select(p.c.chain_id, p.c.token).distinct()
        return sorted(f"{row['chain_id']}:{row['token']}" for row in self._all(query))
