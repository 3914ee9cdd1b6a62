"""Revision 0009 (refunds) on a database that already holds invoices: it adds its table and
touches nothing else, and its downgrade takes only that table away."""

from __future__ import annotations

import pytest
from alembic.script import ScriptDirectory
from revisions import downgrade
from sqlalchemy import inspect
from sqlalchemy.engine import URL

from paycore.testing.storage_records import insert_before_0012, invoice
from paycore_storage import SqlStorage, migrate
from paycore_storage.engine import make_engine
from paycore_storage.migrations import alembic_config

BOTH = pytest.mark.parametrize(
    "sql_url",
    ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)],
    indirect=True,
)
#: Whatever 0009 comes after (re-parented when other revisions land before it).
BEFORE = ScriptDirectory.from_config(alembic_config()).get_revision("0009").down_revision


def tables(url: URL) -> set[str]:
    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            return set(inspect(connection).get_table_names())
    finally:
        engine.dispose()


@BOTH
def test_0009_adds_the_refunds_table_and_keeps_what_was_there(sql_url: URL) -> None:
    assert isinstance(BEFORE, str)
    migrate(sql_url, BEFORE)
    before = tables(sql_url)
    assert "paycore_refunds" not in before
    insert_before_0012(sql_url, invoice())
    migrate(sql_url, "0009")
    assert tables(sql_url) == before | {"paycore_refunds"}
    migrate(sql_url)  # today's code reads today's columns (0012 adds one to the invoices)
    store = SqlStorage(sql_url, auto_migrate=False)
    try:
        with store.transaction() as tx:
            assert tx.get_invoice(invoice().guid) == invoice()
            assert tx.refunds_of([invoice().guid]) == []
    finally:
        store.close()

    downgrade(sql_url, BEFORE)
    assert tables(sql_url) == before
