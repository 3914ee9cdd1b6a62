"""Revision 0019 (invoice search): invoices stored before it are found by their text after
it, and PostgreSQL has the trigram index the search relies on. Revision 0023: SQLite's FTS5
table takes invoices in batches, and a search still finds every invoice its ``LIKE`` does,
in the index or not yet."""

from __future__ import annotations

import re
from pathlib import Path

import attrs
import pytest
from revisions import downgrade
from sqlalchemy import text
from sqlalchemy.engine import URL

from paycore.domain.records import Invoice
from paycore.storage.search import InvoiceFilter
from paycore.testing.storage_records import OWNER, invoice
from paycore_storage import SqlStorage, migrate
from paycore_storage.engine import make_engine
from paycore_storage.rows import invoice_row
from paycore_storage.tables import SEARCH_TEXT_FTS, SEARCH_TEXT_INDEX, SEARCH_TEXT_INDEXED, invoices

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


# -- SQLite's text index in batches (revision 0023) --------------------------------------------
BATCH = 64  # the revision's


def _mug(n: int) -> Invoice:
    return attrs.evolve(
        invoice(f"00000000-0000-4000-8000-{n:012d}", created_at=1_700_000_000 + n),
        description=f"Mug {n}",
        data={"orderId": f"ORD-{n:04d}"},
    )


def _add(store: SqlStorage, numbers: range) -> None:
    with store.transaction() as tx:
        for n in numbers:
            tx.insert_invoice(_mug(n))


def _search(store: SqlStorage, text_: str) -> list[str]:
    with store.transaction() as tx:
        found = tx.search_invoices(InvoiceFilter(OWNER, text=text_), after=None, limit=500)
    assert found is not None
    return sorted(i.guid for i in found)


def _by_like(store: SqlStorage, text_: str) -> list[str]:
    """The rule a search answers by: the owner's invoices whose text holds ``text_``."""
    with store.engine.connect() as connection:
        rows = connection.execute(
            text(
                "SELECT guid FROM paycore_invoices"
                " WHERE owner = :owner AND instr(search_text, :t) > 0"
            ),
            {"owner": OWNER, "t": text_.lower()},
        )
        return sorted(row[0] for row in rows)


def _indexed(store: SqlStorage) -> tuple[int, list[int]]:
    """The mark, and the seqs the FTS5 table finds for the text every mug has."""
    with store.engine.connect() as connection:
        upto = connection.execute(text(f"SELECT upto FROM {SEARCH_TEXT_INDEXED}")).scalar_one()
        seqs = connection.execute(
            text(f"SELECT rowid FROM {SEARCH_TEXT_FTS} WHERE {SEARCH_TEXT_FTS} MATCH '\"mug\"'")
        )
        return upto, sorted(row[0] for row in seqs)


def _integrity_check(store: SqlStorage) -> None:
    """FTS5's own check of the index against the invoices (raises when they differ):
    meaningful when every invoice is in it (the mark at the newest)."""
    with store.engine.begin() as connection:
        fts = SEARCH_TEXT_FTS
        check = f"INSERT INTO {fts}({fts}, rank) VALUES ('integrity-check', 1)"
        connection.execute(text(check))


def _seq_of(store: SqlStorage, n: int) -> int:
    with store.engine.connect() as connection:
        return int(
            connection.execute(
                text("SELECT seq FROM paycore_invoices WHERE guid = :g"),
                {"g": f"00000000-0000-4000-8000-{n:012d}"},
            ).scalar_one()
        )


def test_sqlite_text_index_takes_invoices_in_batches_and_search_finds_them_all(
    tmp_path: Path,
) -> None:
    store = SqlStorage(f"sqlite:///{tmp_path / 'search.sqlite3'}")
    try:
        _add(store, range(1, BATCH))
        assert _indexed(store) == (0, [])  # none in the index yet: the LIKE finds them
        assert _search(store, "ord-0007") == _by_like(store, "ord-0007") != []
        _add(store, range(BATCH, 2 * BATCH + 22))  # two batches, then 21 more one by one
        upto, seqs = _indexed(store)
        assert upto == 2 * BATCH and seqs == list(range(1, 2 * BATCH + 1))
        for n in (1, BATCH, BATCH + 1, 2 * BATCH, 2 * BATCH + 1, 2 * BATCH + 21):
            assert _search(store, f"ord-{n:04d}") == _by_like(store, f"ord-{n:04d}") != []
        assert len(_search(store, "mug")) == 2 * BATCH + 21
    finally:
        store.close()


def test_sqlite_text_index_drops_and_rewrites_only_the_invoices_it_holds(
    tmp_path: Path,
) -> None:
    """An FTS5 'delete' of a row the index does not hold would corrupt it: the triggers
    touch the index for an invoice in it, and leave a newer one to its batch."""
    store = SqlStorage(f"sqlite:///{tmp_path / 'search.sqlite3'}")
    try:
        _add(store, range(1, BATCH + 11))
        rewritten = [_seq_of(store, 5), _seq_of(store, BATCH + 5)]  # held, newer
        dropped = [_seq_of(store, 6), _seq_of(store, BATCH + 6)]
        assert _indexed(store)[0] == BATCH
        with store.engine.begin() as connection:
            for seq in rewritten:
                connection.execute(
                    text("UPDATE paycore_invoices SET search_text = :t WHERE seq = :s"),
                    {"t": f"kettle {seq}", "s": seq},
                )
            for seq in dropped:
                connection.execute(text("DELETE FROM paycore_invoices WHERE seq = :s"), {"s": seq})
        for text_ in ("kettle", "mug 5", "mug 6", f"mug {BATCH + 5}", f"mug {BATCH + 6}", "mug"):
            assert _search(store, text_) == _by_like(store, text_)
        _add(store, range(BATCH + 11, 2 * BATCH + 1))  # the next batch: the mark at the newest
        assert _indexed(store)[0] == _seq_of(store, 2 * BATCH)
        _integrity_check(store)
        assert _search(store, "kettle") == _by_like(store, "kettle") != []
    finally:
        store.close()


def _fts_triggers(url: str) -> dict[str, str]:
    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            rows = connection.execute(
                text("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'")
            )
            return {name: re.sub(r"\s+", " ", sql) for name, sql in rows}
    finally:
        engine.dispose()


def test_0023_marks_the_indexed_invoices_and_its_downgrade_indexes_the_rest(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'search.sqlite3'}"
    migrate(url, "0022")
    row_by_row = _fts_triggers(url)
    store = SqlStorage(url, auto_migrate=False)
    try:
        _add(store, range(1, 4))  # indexed row by row, as 0019 left it
    finally:
        store.close()
    migrate(url)
    store = SqlStorage(url)
    try:
        assert _indexed(store) == (3, [1, 2, 3])
        _add(store, range(4, 14))  # not in the index yet
        assert _search(store, "mug 1") == _by_like(store, "mug 1") != []
    finally:
        store.close()
    downgrade(url, "0022")
    assert _fts_triggers(url) == row_by_row
    store = SqlStorage(url, auto_migrate=False)
    try:
        with store.engine.connect() as connection:
            tables = {row[0] for row in connection.execute(text("SELECT name FROM sqlite_master"))}
        assert SEARCH_TEXT_INDEXED not in tables
        _add(store, range(14, 16))
        _integrity_check(store)  # every invoice is in the index again, the new ones too
        with store.engine.connect() as connection:
            found = connection.execute(
                text(f"SELECT count(*) FROM {SEARCH_TEXT_FTS} WHERE {SEARCH_TEXT_FTS} MATCH 'mug'")
            ).scalar_one()
        assert found == 15
    finally:
        store.close()
