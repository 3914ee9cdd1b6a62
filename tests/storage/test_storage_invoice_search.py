"""Revision 0019 (invoice search): invoices stored before it are found by their text after
it, and PostgreSQL has the trigram index the search relies on."""

from __future__ import annotations

import attrs
import pytest
from sqlalchemy import text
from sqlalchemy.engine import URL

from paycore.storage.search import InvoiceFilter
from paycore.testing.storage_records import OWNER, invoice
from paycore_storage import SqlStorage, migrate
from paycore_storage.engine import make_engine
from paycore_storage.rows import invoice_row
from paycore_storage.tables import SEARCH_TEXT_INDEX, invoices

BOTH = pytest.mark.parametrize(
    "sql_url",
    ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)],
    indirect=True,
)


@BOTH
def test_0019_backfills_the_search_text_of_stored_invoices(sql_url: URL) -> None:
    migrate(sql_url, "0018")
    old = [
        attrs.evolve(
            invoice(f"00000000-0000-4000-8000-{n:012d}", created_at=1_700_000_000 + n),
            description=f"Mug {n}",
            data={"orderId": f"ORD-{n}"},
        )
        for n in range(1, 4)
    ]
    engine = make_engine(sql_url)
    try:
        with engine.begin() as connection:
            for record in old:
                row = {k: v for k, v in invoice_row(record).items() if k != "search_text"}
                connection.execute(invoices.insert().values(row))
    finally:
        engine.dispose()
    migrate(sql_url)
    store = SqlStorage(sql_url)
    try:
        with store.transaction() as tx:
            found = tx.search_invoices(InvoiceFilter(OWNER, text="ord-2"), after=None, limit=5)
            mugs = tx.search_invoices(InvoiceFilter(OWNER, text="mug"), after=None, limit=5)
        assert found == [old[1]]
        assert mugs is not None and [i.guid for i in mugs] == [i.guid for i in old[::-1]]
        if sql_url.get_backend_name() == "postgresql":
            with store.engine.connect() as connection:
                definition = connection.execute(
                    text(
                        "SELECT indexdef FROM pg_indexes"
                        " WHERE indexname = :name AND schemaname = current_schema()"
                    ),
                    {"name": SEARCH_TEXT_INDEX},
                ).scalar_one()
            assert "gin" in definition and "gin_trgm_ops" in definition
    finally:
        store.close()
