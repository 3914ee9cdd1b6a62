"""The invoice read takes the invoice's JSON columns as the text stored and decodes them
only when the invoice is asked for (``invoice_read._as_text``). psycopg decodes a ``json``
column on every fetch, where a poll answered 304, an ETag's version or an answer already
cached needs none of it; SQLite hands the text over as it is. Either way the decoded
invoice must be the one written, and a driver that decodes must not be reached."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import attrs
import pytest

from paycore.storage.invoice_read import InvoiceRead
from paycore.testing.storage_records import invoice
from paycore_storage import SqlStorage
from paycore_storage.invoice_read import _READ, READ_COLUMNS, read_of_rows, read_on

_T = TypeVar("_T")
SQL_BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
_JSON_NAMES = ("accepted_tokens", "data", "payments", "checkout")


@pytest.fixture(params=SQL_BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlStorage]:
    if request.param == "sqlite":
        found = SqlStorage(f"sqlite:///{tmp_path / 'json.sqlite3'}")
    else:
        found = SqlStorage(request.getfixturevalue("postgres_schema")())
    found.migrate()
    yield found
    found.close()


def _on_pooled(store: SqlStorage, read: Callable[[Any, Any, Any], _T]) -> _T:
    """``read(dialect, dbapi, invalidate)`` on a pooled connection, its transaction ended
    after (nothing written; PostgreSQL opens one for the read)."""
    pooled = store.engine.raw_connection()
    try:
        found = read(store.engine.dialect, pooled.dbapi_connection, pooled.invalidate)
        pooled.commit()
    finally:
        pooled.close()
    return found


def _raw_and_read(store: SqlStorage, guid: str) -> tuple[list[Any], InvoiceRead | None]:
    rows = _on_pooled(store, lambda d, dbapi, drop: _READ.raw(d, dbapi, drop, {"guid": guid}))
    dialect = store.engine.dialect
    return rows, read_of_rows(guid, rows, lambda row: _READ.convert(dialect, row))


@pytest.mark.parametrize("redirect", [None, "https://shop.test/thanks?ü=1"])
def test_the_json_columns_arrive_as_text_and_decode_to_the_record(
    store: SqlStorage, redirect: str | None
) -> None:
    record = attrs.evolve(
        invoice(), data={"ünï": ["ç", 1.5, None, {"deep": True}], "order": 42},
        redirect_url=redirect, language=None if redirect is None else "de",
    )  # fmt: skip
    with store.transaction() as tx:
        tx.insert_invoice(record)
    rows, read = _raw_and_read(store, record.guid)
    names = [column.name for column in READ_COLUMNS]
    for name in _JSON_NAMES:
        value = rows[0][names.index(name)]
        # (no checkout fields: SQL NULL or JSON's null, whichever the column kept)
        assert isinstance(value, str) or (value is None and name == "checkout")
    assert read is not None
    assert read.invoice() == record
    stored = store.read_invoice(record.guid)
    assert stored is not None and stored.invoice() == record


def test_the_version_follows_a_change_inside_the_json(store: SqlStorage) -> None:
    record = invoice()
    with store.transaction() as tx:
        tx.insert_invoice(record)
    before = store.read_invoice(record.guid)
    with store.transaction() as tx:
        tx.update_invoice(attrs.evolve(record, data={**record.data, "order": 43}))
    after = store.read_invoice(record.guid)
    assert before is not None and after is not None
    assert before.version != after.version
    assert after.invoice().data["order"] == 43


def test_read_on_a_pooled_connection_decodes_the_same(store: SqlStorage) -> None:
    """``read_on``, the path of the public read and a signed read's read on SQLite."""
    record = invoice()
    with store.transaction() as tx:
        tx.insert_invoice(record)
    read = _on_pooled(store, lambda d, dbapi, drop: read_on(d, dbapi, drop, record.guid))
    assert read is not None and read.invoice() == record
