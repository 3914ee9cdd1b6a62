"""What only the SQL storage has: migrations, URL handling, the plugin, SQLite's locking and
PostgreSQL's late-commit event order."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pluggy
import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Numeric, create_engine, event, inspect, text
from sqlalchemy.engine import URL
from sqlalchemy.exc import DBAPIError

import paycore.plugins.hookspecs
from paycore.config import Settings
from paycore.domain.records import SessionKey
from paycore.testing.storage_records import OWNER, invoice
from paycore_storage import SqlStorage, migrate
from paycore_storage.auth import _SPEND
from paycore_storage.engine import database_url, handles, make_engine
from paycore_storage.migrations import VERSION_TABLE, alembic_config
from paycore_storage.tables import SEARCH_TEXT_FTS, SEARCH_TEXT_INDEX, metadata

BOTH = pytest.mark.parametrize(
    "sql_url",
    ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)],
    indirect=True,
)
POSTGRES_ONLY = pytest.mark.parametrize(
    "sql_url", [pytest.param("postgresql", marks=pytest.mark.postgres)], indirect=True
)


#: The newest revision: what a migrated database must record, whichever revision that is.
HEAD = ScriptDirectory.from_config(alembic_config()).get_current_head()


def version_rows(url: URL, table: str) -> list[str]:
    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            return list(connection.execute(text(f"SELECT version_num FROM {table}")).scalars())
    finally:
        engine.dispose()


# -- migrations -------------------------------------------------------------------------------


@BOTH
def test_migration_creates_exactly_the_tables_of_tables_py(sql_url: URL) -> None:
    migrate(sql_url)
    engine = make_engine(sql_url)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(
                connection,
                opts={
                    "version_table": VERSION_TABLE,
                    "compare_type": True,
                    # The trigram index is PostgreSQL's alone and kept out of the metadata.
                    "include_name": lambda name, type_, _parent: (
                        (type_ != "table" or name.startswith("paycore_"))
                        and name != SEARCH_TEXT_INDEX
                        and not (name or "").startswith(SEARCH_TEXT_FTS)
                    ),
                },
            )
            assert compare_metadata(context, metadata) == []
            names = set(inspect(connection).get_table_names())
    finally:
        engine.dispose()
    fts = {name for name in names if name.startswith(SEARCH_TEXT_FTS)}
    assert names - fts == {*metadata.tables, VERSION_TABLE}


@BOTH
def test_0006_keeps_the_transactions_recorded_before_it(sql_url: URL) -> None:
    """Rows of a database at 0005 come through the deep-reorg revision unflagged, with no
    block (never re-checked), and listed as before."""
    migrate(sql_url, "0005")
    engine = make_engine(sql_url)
    with engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO paycore_transactions (chain_id, tx_hash, log_index, token, type,"
                " from_address, amount, vs_value, timestamp, owner, guid, counted) VALUES"
                " (1, '0xaa', 0, '0xtoken', 'deposit', '0xfrom', '1', '1', 5, :owner,"
                " 'g', :counted)"
            ),
            {"owner": OWNER, "counted": True},
        )
    engine.dispose()
    migrate(sql_url)
    store = SqlStorage(sql_url)
    try:
        with store.transaction() as tx:
            [row], total = tx.list_transactions(OWNER)
            assert tx.recorded_deposits(1, 0) == []
    finally:
        store.close()
    assert (total, row.tx_hash, row.block_number, row.block_hash, row.reorged) == (
        1,
        "0xaa",
        None,
        None,
        False,
    )


@BOTH
def test_0008_numbers_invoices_counts_rows_and_keeps_queue_positions(sql_url: URL) -> None:
    """A database at 0007: invoices get the sequence of their old listing order, the counts
    match the rows, and a queue still gets exactly the events it had not been handed."""
    migrate(sql_url, "0007")
    engine = make_engine(sql_url)
    invoice_sql = text(
        "INSERT INTO paycore_invoices (guid, created_at, deadline, status, value, token,"
        " chain_id, description, address, owner, accepted_tokens, data, paid_amount,"
        " payments, vs_currency) VALUES (:guid, :created_at, 9, 'init', '1', 't', :chain,"
        " '', '0xaddr', :owner, '[]', '{}', '0', '[]', 'usd')"
    )
    tx_sql = text(
        "INSERT INTO paycore_transactions (chain_id, tx_hash, log_index, token, type,"
        " from_address, amount, vs_value, timestamp, owner, guid, counted, reorged) VALUES"
        " (:chain, :hash, 0, '0xtoken', 'deposit', '0xfrom', '1', '1', 5, :owner, 'g', :t,"
        " :reorged)"
    )
    event_sql = text(
        "INSERT INTO paycore_outbox (seq, owner, guid, payload, created_at)"
        " VALUES (:seq, :owner, 'g', '{}', 1)"
    )
    with engine.begin() as connection:
        # Inserted out of listing order; two share a second, so guid decides between them.
        for guid, created_at, chain in (("c", 20, 1), ("b", 10, 137), ("a", 20, 1)):
            connection.execute(
                invoice_sql,
                {"guid": guid, "created_at": created_at, "chain": chain, "owner": OWNER},
            )
        for n, reorged in enumerate((False, True, False)):
            connection.execute(
                tx_sql,
                {"chain": 1, "hash": f"0x{n}", "owner": OWNER, "t": True, "reorged": reorged},
            )
        # Commit order (seq) and id order disagree for the last two, as they could on
        # PostgreSQL; the queue had been handed seq 1 and 2.
        for seq in (1, 2, 4, 3):
            connection.execute(event_sql, {"seq": seq, "owner": OWNER})
        connection.execute(
            text("INSERT INTO paycore_event_queues VALUES ('key-a', :owner, 2)"), {"owner": OWNER}
        )
    engine.dispose()
    migrate(sql_url)
    store = SqlStorage(sql_url)
    try:
        with store.transaction() as tx:
            listed = [i.guid for i in tx.list_invoices(owner=OWNER)[0]]
            counts = (
                tx.count_invoices(owner=OWNER),
                tx.count_invoices(owner=OWNER, chain_id=1),
                tx.count_transactions(OWNER),
            )
            undelivered = [e.id for e in tx.drain_queue("key-a", 100)]
            newer = tx.add_event(OWNER, "g2", {}, 2)
            tx.insert_invoice(invoice("d"))
        with store.transaction() as tx:
            assert [e.id for e in tx.drain_queue("key-a", 100)] == [newer]
            assert [i.guid for i in tx.list_invoices(owner=OWNER)[0]][-1] == "d"
    finally:
        store.close()
    assert listed == ["b", "a", "c"]
    assert counts == (3, 2, 2)
    assert undelivered == [3, 4]
    assert newer == 5


@BOTH
def test_migrate_is_repeatable_and_leaves_the_host_apps_alembic_alone(sql_url: URL) -> None:
    engine = make_engine(sql_url)
    with engine.begin() as connection:
        connection.execute(text("CREATE TABLE alembic_version (version_num VARCHAR(32))"))
        connection.execute(text("INSERT INTO alembic_version VALUES ('host_app_rev')"))
    engine.dispose()
    migrate(sql_url)
    migrate(str(sql_url.render_as_string(hide_password=False)))
    assert version_rows(sql_url, VERSION_TABLE) == [HEAD]
    assert version_rows(sql_url, "alembic_version") == ["host_app_rev"]


@BOTH
def test_workers_migrating_at_once_upgrade_once(sql_url: URL) -> None:
    barrier = threading.Barrier(4)

    def start(_: int) -> None:
        barrier.wait(timeout=30)
        migrate(sql_url)

    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(start, range(4)))
    assert version_rows(sql_url, VERSION_TABLE) == [HEAD]


@BOTH
def test_auto_migrate_runs_on_first_use_and_can_be_turned_off(sql_url: URL) -> None:
    manual = SqlStorage(sql_url, auto_migrate=False)
    with pytest.raises(DBAPIError), manual.transaction() as tx:
        tx.get_invoice(invoice().guid)
    automatic = SqlStorage(sql_url)
    with automatic.transaction() as tx:
        tx.insert_invoice(invoice())
    with manual.transaction() as tx:
        assert tx.get_invoice(invoice().guid) == invoice()
    manual.close()
    automatic.close()


# -- URLs and the plugin ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "driver"),
    [
        ("postgresql://u@db/shop", "postgresql+psycopg"),
        ("postgres://u@db/shop", "postgresql+psycopg"),
        ("postgresql+psycopg2://u@db/shop", "postgresql+psycopg2"),
        ("sqlite:///paycore.sqlite3", "sqlite"),
    ],
)
def test_urls_map_to_psycopg_3_unless_a_driver_is_named(given: str, driver: str) -> None:
    assert database_url(given).drivername == driver
    assert handles(given)


def test_other_urls_are_left_to_other_plugins() -> None:
    for url in ("memory:", "mysql://u@db/shop", "not a url", ""):
        assert not handles(url)


@pytest.fixture
def plugins() -> pluggy.PluginManager:
    """The plugin manager as an installed paycore sees it: hooks found by entry point."""
    manager = pluggy.PluginManager(paycore.plugins.hookspecs.PROJECT)
    manager.add_hookspecs(paycore.plugins.hookspecs)
    manager.load_setuptools_entrypoints(paycore.plugins.hookspecs.PROJECT)
    return manager


def test_the_entry_point_plugin_answers_for_sql_urls(
    plugins: pluggy.PluginManager, tmp_path: Path
) -> None:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'paycore.sqlite3'}")
    found = plugins.hook.paycore_storage(settings=settings)
    assert isinstance(found, SqlStorage)
    with found.transaction() as tx:
        assert tx.allocate_wallet_index(OWNER, 1) == 0
    found.close()
    assert plugins.hook.paycore_storage(settings=Settings(database_url="memory:")) is None


# -- SQLite -----------------------------------------------------------------------------------


@pytest.fixture
def sqlite_storage(tmp_path: Path) -> Iterator[SqlStorage]:
    store = SqlStorage(f"sqlite:///{tmp_path / 'paycore.sqlite3'}")
    yield store
    store.close()


def test_sqlite_runs_in_wal_with_a_busy_timeout(sqlite_storage: SqlStorage) -> None:
    with sqlite_storage.engine.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert connection.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30_000


def test_sqlite_transactions_take_the_write_lock_up_front(sqlite_storage: SqlStorage) -> None:
    """A reading transaction already holds the lock, so a second one waits for it entirely;
    with a deferred BEGIN both would read, then one would fail when it came to write."""
    inside = threading.Event()
    order: list[str] = []

    def first() -> None:
        with sqlite_storage.transaction() as tx:
            tx.get_invoice(invoice().guid)
            inside.set()
            time.sleep(0.3)
            order.append("first ends")

    def second() -> None:
        assert inside.wait(timeout=30)
        with sqlite_storage.transaction() as tx:
            order.append("second begins")
            tx.get_invoice(invoice().guid)

    with ThreadPoolExecutor(max_workers=2) as pool:
        for future in [pool.submit(first), pool.submit(second)]:
            future.result()
    assert order == ["first ends", "second begins"]


def _spend_key(store: SqlStorage, address: str) -> None:
    with store.transaction() as tx:
        tx.put_session_key(
            SessionKey(address=address, public_key="0x04" + "ab" * 64, owner=OWNER,
                       registered_at=1, expires_at=2**40)
        )  # fmt: skip


@BOTH
def test_nonces_are_spent_on_one_held_connection(sql_url: URL) -> None:
    """The spend keeps its connection between calls (no pool checkout each time), on any
    thread (on PostgreSQL a spend that finds it busy takes a pooled one), and gives it back
    on close; a replay still changes nothing."""
    store = SqlStorage(sql_url)
    address = "0x" + "11" * 20
    _spend_key(store, address)
    spend = store.spend_nonce
    assert spend(address, 5, "aa", window=10, now=1) is not None
    pool = store.engine.pool
    held = pool.checkedout()  # type: ignore[attr-defined]
    assert held == 1
    with ThreadPoolExecutor(max_workers=4) as threads:
        spent = list(threads.map(lambda n: spend(address, n, "bb", window=30, now=1), range(6, 30)))
    assert all(key is not None for key in spent)
    assert pool.checkedout() == held  # type: ignore[attr-defined]
    assert spend(address, 29, "bb", window=10, now=1) is None  # the replay
    assert spend(address, 19, "cc", window=10, now=1) is None  # out of the window
    with store.transaction() as tx:
        key = tx.get_session_key(address)
    assert key is not None and key.last_seen_nonce == 29
    store.close()
    assert pool.checkedout() == 0  # type: ignore[attr-defined]


def test_a_failed_sqlite_spend_gives_its_connection_back(
    sqlite_storage: SqlStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An error inside the spend's transaction leaves nothing open on the held connection:
    it goes back to the pool (which rolls it back), and the next spend works."""
    address = "0x" + "22" * 20
    _spend_key(sqlite_storage, address)
    assert sqlite_storage.spend_nonce(address, 1, "aa", window=10, now=1) is not None
    with monkeypatch.context() as patch:
        patch.setitem(_SPEND, (False, False), ("SELECT * FROM no_such_table",) * 3)
        with pytest.raises(DBAPIError):
            sqlite_storage.spend_nonce(address, 2, "aa", window=10, now=1)
    assert sqlite_storage.engine.pool.checkedout() == 0  # type: ignore[attr-defined]
    assert sqlite_storage.spend_nonce(address, 2, "aa", window=10, now=1) is not None


def test_a_sqlite_files_transactions_run_on_the_held_connection(
    sqlite_storage: SqlStorage,
) -> None:
    """Every write of the process takes its turn on the writer lock anyway, so its
    transactions and its spends share the one connection it holds: one checkout, ever. An
    error the transaction rolls back keeps it; one that breaks it gives it back to the pool,
    and the next transaction checks out another."""
    store = sqlite_storage
    address = "0x" + "55" * 20
    _spend_key(store, address)  # migrates, then checks the held connection out
    held = store._writers[os.getpid()][0].dbapi_connection
    checkouts: list[object] = []
    event.listen(store.engine.pool, "checkout", lambda dbapi, *_: checkouts.append(dbapi))
    assert store.spend_nonce(address, 1, "aa", window=10, now=1) is not None
    with store.transaction() as tx:
        assert tx.get_session_key(address) is not None
    assert checkouts == []
    with pytest.raises(RuntimeError), store.transaction() as tx:
        tx.advance_nonce(address, 50)
        raise RuntimeError("the caller failed")
    with store.transaction() as tx:
        key = tx.get_session_key(address)
    assert key is not None and key.last_seen_nonce == 1  # rolled back
    assert checkouts == [] and store.engine.pool.checkedout() == 1  # type: ignore[attr-defined]
    with pytest.raises(RuntimeError), store.transaction() as tx:
        tx.advance_nonce(address, 60)
        tx._c.invalidate()  # as a driver error that broke the connection does
        raise RuntimeError("the connection broke")
    assert store.engine.pool.checkedout() == 0  # type: ignore[attr-defined]
    assert store.spend_nonce(address, 2, "aa", window=10, now=1) is not None
    with store.transaction() as tx:
        key = tx.get_session_key(address)
    assert key is not None and key.last_seen_nonce == 2
    assert len(checkouts) == 1 and checkouts[0] is not held


def test_a_forked_process_does_not_spend_on_its_parents_connection(
    sqlite_storage: SqlStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite's connections must not cross a fork: a process other than the one that
    checked the held connection out checks out its own."""
    address = "0x" + "33" * 20
    _spend_key(sqlite_storage, address)
    assert sqlite_storage.spend_nonce(address, 1, "aa", window=10, now=1) is not None
    parent = os.getpid()
    parents = sqlite_storage._writers[parent]
    monkeypatch.setattr("paycore_storage.sql.os.getpid", lambda: parent + 1)
    assert sqlite_storage.spend_nonce(address, 2, "aa", window=10, now=1) is not None
    childs = sqlite_storage._writers[parent + 1]
    assert childs[0].dbapi_connection is not parents[0].dbapi_connection
    assert sqlite_storage._writers[parent] is parents  # kept, never closed by the child


@BOTH
def test_a_pool_of_one_is_not_kept_for_spending(sql_url: URL) -> None:
    """With one pooled connection only, spending a nonce keeps none: a transaction after it
    still finds the pool's connection (it would wait out the pool's timeout otherwise)."""
    store = SqlStorage(sql_url, pool_size=1, max_overflow=0, pool_timeout=2)
    try:
        address = "0x" + "44" * 20
        _spend_key(store, address)
        assert store.spend_nonce(address, 1, "aa", window=10, now=1) is not None
        assert store.engine.pool.checkedout() == 0  # type: ignore[attr-defined]
        with store.transaction() as tx:
            key = tx.get_session_key(address)
        assert key is not None and key.last_seen_nonce == 1
    finally:
        store.close()


@POSTGRES_ONLY
def test_a_held_connection_the_server_closed_is_replaced(sql_url: URL) -> None:
    """The held spending connection is checked before each use as a pooled one is at
    checkout: when the server ended its backend, the next spend takes another."""
    store = SqlStorage(sql_url)
    admin = create_engine(sql_url, isolation_level="AUTOCOMMIT")
    try:
        address = "0x" + "55" * 20
        _spend_key(store, address)
        assert store.spend_nonce(address, 1, "aa", window=10, now=1) is not None
        backend = store._writers[os.getpid()][0].dbapi_connection.info.backend_pid  # type: ignore[union-attr]
        with admin.connect() as connection:
            connection.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": backend})
        deadline = time.monotonic() + 10
        with admin.connect() as connection:
            while connection.execute(
                text("SELECT count(*) FROM pg_stat_activity WHERE pid = :pid"), {"pid": backend}
            ).scalar_one():
                assert time.monotonic() < deadline
                time.sleep(0.05)
        assert store.spend_nonce(address, 2, "aa", window=10, now=1) is not None
        assert store._writers[os.getpid()][0].dbapi_connection.info.backend_pid != backend  # type: ignore[union-attr]
    finally:
        admin.dispose()
        store.close()


def test_in_memory_sqlite_is_one_database_for_every_thread() -> None:
    store = SqlStorage("sqlite://")

    def allocate(_: int) -> int:
        with store.transaction() as tx:
            return tx.allocate_wallet_index(OWNER, 1)

    with ThreadPoolExecutor(max_workers=8) as pool:
        assert sorted(pool.map(allocate, range(8))) == list(range(8))
    store.close()


# -- PostgreSQL -------------------------------------------------------------------------------


@POSTGRES_ONLY
def test_an_event_committed_after_a_newer_one_is_still_delivered(sql_url: URL) -> None:
    """Transaction A writes its event first but commits last. A cursor over insert ids that
    read B's event while A was open would have moved past A's and lost it; the drain holds
    B's back instead, until A has ended, and then hands both out in id order."""
    store = SqlStorage(sql_url)
    with store.transaction() as tx:
        tx.open_queue("key-a", OWNER)
    a_added, b_committed = threading.Event(), threading.Event()

    def slow_writer() -> int:
        with store.transaction() as tx:
            event_id = tx.add_event(OWNER, "guid-a", {"who": "a"}, 1)
            a_added.set()
            assert b_committed.wait(timeout=30)
        return event_id

    with ThreadPoolExecutor(max_workers=1) as pool:
        a = pool.submit(slow_writer)
        assert a_added.wait(timeout=30)
        with store.transaction() as tx:
            b_id = tx.add_event(OWNER, "guid-b", {"who": "b"}, 2)
        with store.transaction() as tx:
            first_drain = [e.id for e in tx.drain_queue("key-a", 100)]
        b_committed.set()
        a_id = a.result()
    with store.transaction() as tx:
        second_drain = [e.id for e in tx.drain_queue("key-a", 100)]
    store.close()
    assert a_id < b_id
    assert first_drain == []
    assert second_drain == [a_id, b_id]


@POSTGRES_ONLY
def test_a_rolled_back_writer_stops_holding_events_back(sql_url: URL) -> None:
    """Ids a rolled-back transaction took stay unused; once it has ended, the events after
    them go out, and a queue opened while it was open still gets them."""
    store = SqlStorage(sql_url)
    with store.transaction() as tx:
        tx.open_queue("key-a", OWNER)
    a_added, b_committed = threading.Event(), threading.Event()

    def doomed_writer() -> None:
        with pytest.raises(RuntimeError), store.transaction() as tx:
            tx.add_event(OWNER, "guid-a", {"who": "a"}, 1)
            a_added.set()
            assert b_committed.wait(timeout=30)
            raise RuntimeError("rolled back")

    with ThreadPoolExecutor(max_workers=1) as pool:
        a = pool.submit(doomed_writer)
        assert a_added.wait(timeout=30)
        with store.transaction() as tx:
            b_id = tx.add_event(OWNER, "guid-b", {"who": "b"}, 2)
        with store.transaction() as tx:
            tx.open_queue("key-late", OWNER)  # B's event is not settled: it is still ahead
            held_back = tx.drain_queue("key-a", 100)
        b_committed.set()
        a.result()
    with store.transaction() as tx:
        after = [e.id for e in tx.drain_queue("key-a", 100)]
        late = [e.id for e in tx.drain_queue("key-late", 100)]
    store.close()
    assert held_back == []
    assert after == [b_id] and late == [b_id]


@POSTGRES_ONLY
def test_money_is_numeric_60_30_on_postgres(sql_url: URL) -> None:
    migrate(sql_url)
    engine = create_engine(sql_url)
    try:
        with engine.connect() as connection:
            columns = {
                c["name"]: c["type"]
                for c in inspect(connection).get_columns("paycore_transactions")
            }
    finally:
        engine.dispose()
    amount = columns["amount"]
    assert isinstance(amount, Numeric)
    assert (amount.precision, amount.scale) == (60, 30)


@POSTGRES_ONLY
def test_a_connection_the_server_closed_is_replaced_without_a_ping_per_checkout(
    sql_url: URL, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No ``SELECT 1`` before each transaction: a pooled connection whose backend the server
    ended is noticed at checkout by its readable socket and replaced, so the next
    transaction succeeds instead of failing (or answering 503) once."""
    store = SqlStorage(sql_url, pool_size=1, max_overflow=0)
    pings: list[object] = []
    monkeypatch.setattr(store.engine.dialect, "do_ping", lambda conn: pings.append(conn))
    try:
        with store.transaction() as tx:
            tx.insert_invoice(invoice())
        with store.engine.connect() as connection:
            backend = connection.exec_driver_sql("SELECT pg_backend_pid()").scalar_one()
        # Autocommit: pg_stat_activity is a snapshot per transaction, so each look must be
        # a transaction of its own to see the backend go.
        admin = create_engine(sql_url, isolation_level="AUTOCOMMIT")
        try:
            with admin.connect() as connection:
                ended = connection.execute(
                    text("SELECT pg_terminate_backend(:pid)"), {"pid": backend}
                ).scalar_one()
            assert ended is True
            deadline = time.monotonic() + 10
            with admin.connect() as connection:  # until the server has closed it
                while connection.execute(
                    text("SELECT count(*) FROM pg_stat_activity WHERE pid = :pid"),
                    {"pid": backend},
                ).scalar_one():
                    assert time.monotonic() < deadline
                    time.sleep(0.05)
        finally:
            admin.dispose()
        for _ in range(3):
            with store.transaction() as tx:
                assert tx.get_invoice(invoice().guid) == invoice()
        with store.engine.connect() as connection:
            assert connection.exec_driver_sql("SELECT pg_backend_pid()").scalar_one() != backend
        assert pings == []
    finally:
        store.close()
