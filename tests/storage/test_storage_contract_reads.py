"""The one-statement invoice read (``paycore.testing.storage_contract_reads``) on every
built-in backend, and what the SQL store promises beyond the contract: the read takes no
write lock (it answers while a writer holds the database) and is one statement."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest
from sqlalchemy import event
from sqlalchemy.engine import URL

from paycore.domain.records import Status
from paycore.testing.storage_contract_reads import *  # noqa: F403 - the suite's tests
from paycore.testing.storage_records import FakeClock, invoice
from paycore_storage import SqlStorage

SQL_BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


@pytest.fixture
def sql_store(sql_url: URL, clock: FakeClock) -> Iterator[SqlStorage]:
    store = SqlStorage(sql_url, clock=clock)
    yield store
    store.close()


@pytest.mark.parametrize("sql_url", SQL_BACKENDS, indirect=True)
def test_read_answers_while_a_writer_holds_the_database(sql_store: SqlStorage) -> None:
    record = invoice()
    with sql_store.transaction() as tx:
        tx.insert_invoice(record)
    before = sql_store.read_invoice(record.guid)
    assert before is not None
    writing, release = threading.Event(), threading.Event()
    failures: list[BaseException] = []

    def writer() -> None:
        try:
            with sql_store.transaction() as tx:
                tx.update_invoice(attrs.evolve(record, status=Status.EXPIRED))
                writing.set()
                assert release.wait(10)
        except BaseException as error:  # reported to the test's thread
            failures.append(error)
            writing.set()

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert writing.wait(10)
        # The writer holds BEGIN IMMEDIATE on SQLite and the process's writer lock, and the
        # row's lock on PostgreSQL: a read must neither wait for it nor see its change.
        answered: list[object] = []
        reader = threading.Thread(
            target=lambda: answered.append(sql_store.read_invoice(record.guid))
        )
        reader.start()
        reader.join(5)
        assert answered, "the read waited for the writer"
        during = answered[0]
        assert during is not None and during.version == before.version
    finally:
        release.set()
        thread.join(10)
    assert not failures
    after = sql_store.read_invoice(record.guid)
    assert after is not None and after.status == Status.EXPIRED
    assert after.version != before.version


def test_sqlite_read_is_one_select_without_begin(tmp_path: Path, clock: FakeClock) -> None:
    store = SqlStorage(f"sqlite:///{tmp_path / 'paycore.sqlite3'}", clock=clock)
    sent: list[str] = []

    @event.listens_for(store.engine, "connect")
    def _trace(dbapi: sqlite3.Connection, _record: object) -> None:
        dbapi.set_trace_callback(sent.append)

    try:
        record = invoice()
        with store.transaction() as tx:
            tx.insert_invoice(record)
        store.engine.pool.dispose()  # the next connection is traced from its start
        assert store.read_invoice(record.guid) is not None
        # A thread reads on a connection of its own, outside the pool (own_readers).
        (reader,) = store._own_readers.held()
        reader.set_trace_callback(sent.append)
        sent.clear()
        read = store.read_invoice(record.guid)
        assert read is not None and read.invoice() == record
        # The invoice with its refunds and (it is open) its detected transfers: one
        # SELECT by index, and no BEGIN.
        assert len(sent) == 1, sent
        assert all(s.lstrip().upper().startswith("SELECT") for s in sent), sent
        with store.transaction() as tx:
            tx.update_invoice(attrs.evolve(record, status=Status.PAID))
        sent.clear()
        assert store.read_invoice(record.guid) is not None
        assert len(sent) == 1, sent  # a settled invoice shows no detected transfers
    finally:
        store.close()
