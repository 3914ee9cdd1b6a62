"""SQLite's text index written in batches: the FTS5 table of revision 0019 takes the newest
invoices 64 at a time, and a search checks the few not in it yet by its ``LIKE`` alone.

FTS5 turns each transaction's new rows into a segment of its own when it commits, so an
invoice written into it row by row cost every creation a segment: on a SQLite file about
0.1 ms of CPU and 8 of the creation's 18 WAL pages. ``paycore_invoices_text_indexed`` holds
``upto``: every invoice with ``seq <= upto`` is in the index, none above. The insert trigger
fires when an invoice's ``seq`` is ``BATCH`` past it, adds every invoice above it in one
statement and moves it. The delete and update triggers touch the index only for an invoice
in it (an FTS5 ``delete`` of a row it does not hold would corrupt it). A search has always
taken the ``LIKE`` as the rule and the index only to narrow; its candidates are now the
index's matches and the invoices above ``upto`` (fewer than ``BATCH``, found by ``seq``).

PostgreSQL's trigram GIN index is left alone: it has its own pending list.

Revision ID: 0023
Revises: 0022
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None

TABLE = "paycore_invoices"
FTS = "paycore_invoices_text"
#: The high-water mark, named after the FTS5 table whose state it is (as FTS5 names its own).
INDEXED = f"{FTS}_indexed"
#: Invoices added to the index at once; a search checks fewer than this many by ``LIKE``.
BATCH = 64

_UPTO = f"(SELECT upto FROM {INDEXED})"


def _delete_and_update(held: str | None) -> list[str]:
    """The delete and update triggers; ``held``, when given, narrows them to the invoices
    the index holds. Without it they are revision 0019's, written out here, not imported:
    a revision stays as it was released whatever later ones do."""
    when = f" WHEN {held}" if held else ""
    also = f" AND {held}" if held else ""
    return [
        f"CREATE TRIGGER {FTS}_delete AFTER DELETE ON {TABLE}{when} BEGIN"
        f" INSERT INTO {FTS}({FTS}, rowid, search_text)"
        " VALUES ('delete', old.seq, old.search_text); END",
        f"CREATE TRIGGER {FTS}_update AFTER UPDATE OF search_text ON {TABLE}"
        f" WHEN old.search_text IS NOT new.search_text{also} BEGIN"
        f" INSERT INTO {FTS}({FTS}, rowid, search_text)"
        " VALUES ('delete', old.seq, old.search_text);"
        f" INSERT INTO {FTS}(rowid, search_text) VALUES (new.seq, new.search_text); END",
    ]


_BATCHED = [
    f"CREATE TABLE {INDEXED} (id INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),"
    " upto BIGINT NOT NULL)",
    f"INSERT INTO {INDEXED} (id, upto) SELECT 1, COALESCE(MAX(seq), 0) FROM {TABLE}",
    f"CREATE TRIGGER {FTS}_insert AFTER INSERT ON {TABLE}"
    f" WHEN new.seq >= {_UPTO} + {BATCH} BEGIN"
    f" INSERT INTO {FTS}(rowid, search_text) SELECT seq, search_text FROM {TABLE}"
    f" WHERE seq > {_UPTO} AND seq <= new.seq;"
    f" UPDATE {INDEXED} SET upto = new.seq; END",
    *_delete_and_update(f"old.seq <= {_UPTO}"),
]
#: Revision 0019's triggers, row by row, for the way back.
_ROW_BY_ROW = [
    f"CREATE TRIGGER {FTS}_insert AFTER INSERT ON {TABLE} BEGIN"
    f" INSERT INTO {FTS}(rowid, search_text) VALUES (new.seq, new.search_text); END",
    *_delete_and_update(None),
]


def _drop_triggers() -> None:
    for trigger in ("insert", "delete", "update"):
        op.execute(sa.text(f"DROP TRIGGER IF EXISTS {FTS}_{trigger}"))


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    _drop_triggers()
    for statement in _BATCHED:
        op.execute(sa.text(statement))


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    _drop_triggers()
    # The invoices not in the index yet go in before it is kept row by row again.
    op.execute(
        sa.text(
            f"INSERT INTO {FTS}(rowid, search_text) SELECT seq, search_text FROM {TABLE}"
            f" WHERE seq > {_UPTO}"
        )
    )
    op.execute(sa.text(f"DROP TABLE {INDEXED}"))
    for statement in _ROW_BY_ROW:
        op.execute(sa.text(statement))
