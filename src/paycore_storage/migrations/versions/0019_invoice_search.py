"""Invoice search: a ``search_text`` column (the lowercased description and ``data`` values,
``paycore.storage.search.search_text``), filled in for every stored invoice; an index by
(owner, status, created_at, seq) for status filters and one by (owner, created_at, seq,
...) that GET /stats reads alone (both order a search: by creation time, then creation
order); on PostgreSQL a trigram GIN index on ``search_text`` (pg_trgm), so that a
``LIKE '%text%'`` finds an order id among a million invoices by the index.

pg_trgm is created in ``public`` when it is not installed yet; when it cannot be (no right
to, no such schema), the revision goes on without that index: searches give the same rows,
by a scan of the owner's invoices (docs/performance.md, "Invoice search"). On SQLite the
same index is an FTS5 table with the trigram tokenizer, kept by triggers.

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-28
"""

from __future__ import annotations

import logging

import sqlalchemy as sa
from alembic import op

from paycore.storage.search import search_text

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

log = logging.getLogger("paycore.storage")

TABLE = "paycore_invoices"
TRGM_INDEX = "ix_paycore_invoices_search_text_trgm"
STATUS_INDEX = "ix_paycore_invoices_owner_status_created_at_seq"
CREATED_INDEX = "ix_paycore_invoices_owner_created_stats"
#: Rows filled in per statement while backfilling: bounded memory on any table size.
BATCH = 5000


def upgrade() -> None:
    bind = op.get_bind()
    op.add_column(TABLE, sa.Column("search_text", sa.Text, nullable=False, server_default=""))
    _backfill(bind)
    op.create_index(STATUS_INDEX, TABLE, ["owner", "status", "created_at", "seq"])
    op.create_index(
        CREATED_INDEX,
        TABLE,
        [
            "owner",
            "created_at",
            "seq",
            "status",
            "chain_id",
            "token",
            "vs_currency",
            "paid_amount",
        ],
    )
    if bind.dialect.name == "postgresql":
        _trigram_index(bind)
    elif bind.dialect.name == "sqlite":
        _fts_index(bind)


def _backfill(bind: sa.Connection) -> None:
    """Every stored invoice's search text, computed by the same function new invoices use,
    in batches by ``seq``."""
    table = sa.table(
        TABLE,
        sa.column("seq", sa.BigInteger),
        sa.column("description", sa.Text),
        sa.column("data", sa.JSON),
        sa.column("search_text", sa.Text),
    )
    after = -1
    while True:
        rows = bind.execute(
            sa.select(table.c.seq, table.c.description, table.c.data)
            .where(table.c.seq > after)
            .order_by(table.c.seq)
            .limit(BATCH)
        ).all()
        if not rows:
            return
        bind.execute(
            table.update()
            .where(table.c.seq == sa.bindparam("row_seq"))
            .values(search_text=sa.bindparam("text")),
            [{"row_seq": seq, "text": search_text(desc, data)} for seq, desc, data in rows],
        )
        after = rows[-1][0]


def _trigram_schema(bind: sa.Connection) -> str | None:
    found = bind.execute(
        sa.text(
            "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace"
            " WHERE e.extname = 'pg_trgm'"
        )
    ).scalar()
    return None if found is None else str(found)


def _trigram_index(bind: sa.Connection) -> None:
    schema = _trigram_schema(bind)
    if schema is None:
        try:
            with bind.begin_nested():
                bind.execute(sa.text("CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public"))
        except sa.exc.DBAPIError as error:
            log.warning(
                "pg_trgm is not available (%s): invoice text search runs without its index",
                str(error.orig).splitlines()[0] if error.orig else type(error).__name__,
            )
        schema = _trigram_schema(bind)
    if schema is None:
        return
    quoted = bind.dialect.identifier_preparer.quote_schema(schema)
    bind.execute(
        sa.text(
            f"CREATE INDEX {TRGM_INDEX} ON {TABLE} USING gin (search_text {quoted}.gin_trgm_ops)"
        )
    )


#: SQLite's trigram index: an FTS5 table over ``search_text`` (its rowid the invoice's
#: ``seq``), kept by triggers, so no statement that writes invoices needs to know of it.
FTS = "paycore_invoices_text"
_FTS_DDL = [
    f"CREATE VIRTUAL TABLE {FTS} USING fts5(search_text, content='{TABLE}',"
    " content_rowid='seq', tokenize='trigram')",
    f"INSERT INTO {FTS}({FTS}) VALUES ('rebuild')",
    f"CREATE TRIGGER {FTS}_insert AFTER INSERT ON {TABLE} BEGIN"
    f" INSERT INTO {FTS}(rowid, search_text) VALUES (new.seq, new.search_text); END",
    f"CREATE TRIGGER {FTS}_delete AFTER DELETE ON {TABLE} BEGIN"
    f" INSERT INTO {FTS}({FTS}, rowid, search_text) VALUES ('delete', old.seq, old.search_text);"
    " END",
    # An invoice's text is fixed at creation; an update that writes it again changes nothing.
    f"CREATE TRIGGER {FTS}_update AFTER UPDATE OF search_text ON {TABLE}"
    " WHEN old.search_text IS NOT new.search_text BEGIN"
    f" INSERT INTO {FTS}({FTS}, rowid, search_text) VALUES ('delete', old.seq, old.search_text);"
    f" INSERT INTO {FTS}(rowid, search_text) VALUES (new.seq, new.search_text); END",
]


def _fts_index(bind: sa.Connection) -> None:
    for statement in _FTS_DDL:
        bind.execute(sa.text(statement))


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for trigger in ("insert", "delete", "update"):
            op.execute(sa.text(f"DROP TRIGGER IF EXISTS {FTS}_{trigger}"))
        op.execute(sa.text(f"DROP TABLE IF EXISTS {FTS}"))
    op.execute(sa.text(f"DROP INDEX IF EXISTS {TRGM_INDEX}"))
    op.drop_index(CREATED_INDEX, TABLE)
    op.drop_index(STATUS_INDEX, TABLE)
    with op.batch_alter_table(TABLE) as batch:
        batch.drop_column("search_text")
