"""On a SQLite file the invoice read takes the invoice's own row first and makes the joined
read only when a refund or a shown detected transfer joins (``invoice_read._NARROW``). The
two ways must give the same read, ``version`` included, or a poll's ``ETag`` would change
with the way it was read."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from paycore.domain.records import Status
from paycore.storage.invoice_read import InvoiceRead
from paycore.testing.storage_detected import detected
from paycore.testing.storage_records import invoice, refund
from paycore_storage import SqlStorage
from paycore_storage.invoice_read import _READ, read_of_rows, read_on


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqlStorage]:
    found = SqlStorage(f"sqlite:///{tmp_path / 'narrow.sqlite3'}")
    found.migrate()
    yield found
    found.close()


def _both(store: SqlStorage, guid: str) -> tuple[InvoiceRead | None, InvoiceRead | None, int]:
    """The read as ``read_on`` makes it, the joined read alone, and the statements the
    first one sent."""
    dialect = store.engine.dialect
    path = store.engine.url.database
    assert path is not None
    dbapi = sqlite3.connect(path, isolation_level=None)
    try:
        sent: list[str] = []
        dbapi.set_trace_callback(sent.append)
        read = read_on(dialect, dbapi, lambda _error: None, guid)
        dbapi.set_trace_callback(None)
        rows = _READ.raw(dialect, dbapi, lambda _error: None, {"guid": guid})
        joined = read_of_rows(guid, rows, lambda row: _READ.convert(dialect, row))
        return read, joined, len(sent)
    finally:
        dbapi.close()


def _same(read: InvoiceRead | None, joined: InvoiceRead | None) -> None:
    assert read is not None and joined is not None
    assert (read.version, read.status, read.deadline, read.detected) == (
        joined.version, joined.status, joined.deadline, joined.detected,
    )  # fmt: skip
    assert read.invoice() == joined.invoice()


def test_an_invoice_with_nothing_to_join_is_one_narrow_statement_with_the_joined_version(
    store: SqlStorage,
) -> None:
    record = invoice()
    with store.transaction() as tx:
        tx.insert_invoice(record)
    read, joined, sent = _both(store, record.guid)
    _same(read, joined)
    assert sent == 1


def test_refunds_or_shown_transfers_take_the_joined_read(store: SqlStorage) -> None:
    record = invoice(status=Status.PARTIAL_PAID)
    with store.transaction() as tx:
        tx.insert_invoice(record)
        tx.replace_detected(1, [detected(1, guid=record.guid, block=101)])
    read, joined, sent = _both(store, record.guid)
    _same(read, joined)
    assert read is not None and len(read.detected) == 1 and sent == 2
    with store.transaction() as tx:  # paid: its transfers are no longer shown
        tx.update_invoice(attrs.evolve(record, status=Status.PAID))
    read, joined, sent = _both(store, record.guid)
    _same(read, joined)
    assert read is not None and read.detected == () and sent == 1
    with store.transaction() as tx:
        tx.insert_refund(refund(record.guid, 1))
    read, joined, sent = _both(store, record.guid)
    _same(read, joined)
    assert read is not None and len(read.invoice().refunds) == 1 and sent == 2


def test_an_unknown_guid_reads_nothing(store: SqlStorage) -> None:
    read, joined, sent = _both(store, "00000000-0000-4000-8000-00000000dead")
    assert (read, joined, sent) == (None, None, 1)
