"""A host app's own Alembic autogenerate, run on a database that holds paycore's tables next
to the host's: with ``paycore_storage.alembic``'s filter it proposes nothing about paycore's
tables (no drop above all); without it, it would drop every one of them."""

from __future__ import annotations

from typing import Any

import pytest
from alembic.autogenerate import produce_migrations
from alembic.migration import MigrationContext
from alembic.operations import ops
from sqlalchemy import Column, Integer, MetaData, String, Table
from sqlalchemy.engine import URL

from paycore_storage import migrate
from paycore_storage.alembic import PAYCORE_TABLES, include_name, include_object, is_paycore_table
from paycore_storage.engine import make_engine
from paycore_storage.tables import SEARCH_TEXT_FTS
from paycore_storage.tables import metadata as paycore_metadata

BOTH = pytest.mark.parametrize(
    "sql_url",
    ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)],
    indirect=True,
)


def host_metadata(with_new_column: bool) -> MetaData:
    """The shop's own models: an ``orders`` table that refers to invoices by guid."""
    shop = MetaData()
    columns = [
        Column("id", Integer, primary_key=True),
        Column("invoice_guid", String(64), nullable=False),
    ]
    if with_new_column:
        columns.append(Column("note", String(200)))
    Table("orders", shop, *columns)
    return shop


def autogenerate(url: URL, target: MetaData, **options: Any) -> list[Any]:
    """The operations ``alembic revision --autogenerate`` would write, flattened."""
    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(connection, opts=options)
            script = produce_migrations(context, target)
    finally:
        engine.dispose()
    found: list[Any] = []

    def walk(op: Any) -> None:
        found.append(op)
        for inner in getattr(op, "ops", ()):
            walk(inner)

    walk(script.upgrade_ops)
    return found


def table_of(op: Any) -> str | None:
    return getattr(op, "table_name", None)


@BOTH
@pytest.mark.parametrize("hook", ["include_object", "include_name"])
def test_host_autogenerate_leaves_paycore_tables_alone(sql_url: URL, hook: str) -> None:
    migrate(sql_url)
    engine = make_engine(sql_url)
    try:
        with engine.begin() as connection:
            host_metadata(with_new_column=False).create_all(connection)
    finally:
        engine.dispose()

    unfiltered = autogenerate(sql_url, host_metadata(with_new_column=True))
    dropped = {op.table_name for op in unfiltered if isinstance(op, ops.DropTableOp)}
    # SQLite's FTS5 search table (revision 0019) and the tables FTS5 names after it are
    # paycore's too, by their prefix.
    fts = {name for name in dropped if name.startswith(SEARCH_TEXT_FTS)}
    assert dropped - fts == PAYCORE_TABLES  # what the filter is for
    assert all(is_paycore_table(name) for name in fts)

    filtered = {hook: include_object if hook == "include_object" else include_name}
    found = autogenerate(sql_url, host_metadata(with_new_column=True), **filtered)
    assert not [op for op in found if isinstance(op, ops.DropTableOp)]
    assert not [op for op in found if (table_of(op) or "").startswith("paycore_")]
    # The host's own change is still found.
    added = [op for op in found if isinstance(op, ops.AddColumnOp)]
    assert [(op.table_name, op.column.name) for op in added] == [("orders", "note")]


def test_the_table_set_is_every_paycore_table() -> None:
    assert set(paycore_metadata.tables) < PAYCORE_TABLES
    assert "paycore_alembic_version" in PAYCORE_TABLES
    assert all(name.startswith("paycore_") for name in PAYCORE_TABLES)
