"""Pages that cost one page: a creation sequence for invoices, per-owner row counts, an index
for GET /transactions, and outbox order fixed at insert instead of at commit.

- ``paycore_invoices.seq``: the creation sequence every listing and cursor orders by, and the
  new primary key (``guid`` stays unique). SQLite can only auto-increment an ``INTEGER
  PRIMARY KEY``, so the table is rebuilt on both databases alike; existing rows are numbered
  in their old listing order, (created_at, guid).
- ``paycore_owner_counts``: each owner's invoices and counted (not reorged) transactions per
  chain, filled here from the tables and kept from now on by the inserting transactions.
- ``ix_paycore_transactions_owner_newest``: GET /transactions' order over counted rows.
- ``paycore_outbox.seq`` goes: it was handed out at commit, under one lock every committing
  writer waited on. Queues count event ids instead, which the database hands out at insert,
  and read them only up to a horizon below which every id is settled (``sql.py``).

As in 0001, types are spelled out here rather than imported from ``tables.py``.

Revision ID: 0008
Revises: 0007
Create Date: 2025-01-08
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

#: Exact decimals: NUMERIC(60, 30), or text on SQLite (whose NUMERIC would be a float).
MONEY = sa.Numeric(60, 30).with_variant(sa.String(80), "sqlite")
#: 64-bit ids, except where SQLite needs INTEGER to auto-increment.
ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

INVOICE_COLUMNS = (
    "guid, created_at, deadline, status, value, token, chain_id, description, address, owner,"
    " accepted_tokens, data, paid_amount, payments, vs_currency"
)
OLD_INVOICE_INDEXES = {
    "ix_paycore_invoices_owner_created_at": ["owner", "created_at"],
    "ix_paycore_invoices_chain_id_address_created_at": ["chain_id", "address", "created_at"],
    "ix_paycore_invoices_status_deadline": ["status", "deadline"],
    "ix_paycore_invoices_chain_id_deadline": ["chain_id", "deadline"],
}
NEW_INVOICE_INDEXES = {
    "ix_paycore_invoices_owner_seq": ["owner", "seq"],
    "ix_paycore_invoices_chain_id_address_seq": ["chain_id", "address", "seq"],
    "ix_paycore_invoices_status_deadline": ["status", "deadline"],
    "ix_paycore_invoices_chain_id_deadline": ["chain_id", "deadline"],
}
TX_NEWEST = ["owner", "timestamp", "tx_hash", "log_index", "chain_id", "token"]


def key(length: int = 255) -> sa.types.TypeEngine[str]:
    """Identifiers compare and sort bytewise on PostgreSQL, as on SQLite."""
    return sa.String(length).with_variant(sa.String(length, collation="C"), "postgresql")


def _postgres() -> bool:
    return bool(op.get_bind().dialect.name == "postgresql")


def upgrade() -> None:
    _rebuild_invoices(with_seq=True)
    op.drop_index("ix_paycore_transactions_owner_timestamp", table_name="paycore_transactions")
    op.create_index(
        "ix_paycore_transactions_owner_newest",
        "paycore_transactions",
        TX_NEWEST,
        postgresql_where=sa.text("reorged IS false"),
        sqlite_where=sa.text("reorged IS 0"),
    )
    _count_rows()
    _outbox_order_at_insert()


def _invoice_table(name: str, *, with_seq: bool) -> None:
    columns: list[sa.schema.SchemaItem] = [
        sa.Column("guid", key(64), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("deadline", sa.BigInteger(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("value", MONEY, nullable=False),
        sa.Column("token", key(), nullable=False),
        sa.Column("chain_id", sa.BigInteger(), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("address", key(), nullable=False),
        sa.Column("owner", key(), nullable=False),
        sa.Column("accepted_tokens", sa.JSON(), nullable=False),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.Column("paid_amount", MONEY, nullable=False),
        sa.Column("payments", sa.JSON(), nullable=False),
        sa.Column("vs_currency", sa.String(16), nullable=False),
    ]
    if with_seq:
        columns.insert(0, sa.Column("seq", ID, autoincrement=True, nullable=False))
        columns.append(sa.PrimaryKeyConstraint("seq", name="pk_paycore_invoices"))
        columns.append(sa.UniqueConstraint("guid", name="uq_paycore_invoices_guid"))
    else:
        columns.append(sa.PrimaryKeyConstraint("guid", name="pk_paycore_invoices"))
    op.create_table(name, *columns, sqlite_autoincrement=with_seq)


def _rebuild_invoices(*, with_seq: bool) -> None:
    """Copy the invoices into a table with (or, downgrading, without) ``seq`` as its key,
    numbering them in (created_at, guid) order; the old table's names are freed first."""
    dropped, created = (
        (OLD_INVOICE_INDEXES, NEW_INVOICE_INDEXES)
        if with_seq
        else (NEW_INVOICE_INDEXES, OLD_INVOICE_INDEXES)
    )
    for name in dropped:
        op.drop_index(name, table_name="paycore_invoices")
    op.rename_table("paycore_invoices", "paycore_invoices_old")
    if _postgres():
        op.execute(
            "ALTER TABLE paycore_invoices_old RENAME CONSTRAINT pk_paycore_invoices"
            " TO pk_paycore_invoices_old"
        )
    _invoice_table("paycore_invoices", with_seq=with_seq)
    if with_seq:
        op.execute(
            f"INSERT INTO paycore_invoices (seq, {INVOICE_COLUMNS})"
            f" SELECT row_number() OVER (ORDER BY created_at, guid), {INVOICE_COLUMNS}"
            " FROM paycore_invoices_old"
        )
        if _postgres():
            op.execute(
                "SELECT setval(pg_get_serial_sequence('paycore_invoices', 'seq'),"
                " coalesce(max(seq), 0) + 1, false) FROM paycore_invoices"
            )
    else:
        op.execute(
            f"INSERT INTO paycore_invoices ({INVOICE_COLUMNS})"
            f" SELECT {INVOICE_COLUMNS} FROM paycore_invoices_old"
        )
    op.drop_table("paycore_invoices_old")
    for name, columns in created.items():
        op.create_index(name, "paycore_invoices", columns)


def _count_rows() -> None:
    op.create_table(
        "paycore_owner_counts",
        sa.Column("owner", key(), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("chain_id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("stripe", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("n", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint(
            "owner", "kind", "chain_id", "stripe", name="pk_paycore_owner_counts"
        ),
    )
    op.execute(
        "INSERT INTO paycore_owner_counts (owner, kind, chain_id, stripe, n)"
        " SELECT owner, 'invoices', chain_id, 0, count(*) FROM paycore_invoices"
        " GROUP BY owner, chain_id"
    )
    op.get_bind().execute(
        sa.text(
            "INSERT INTO paycore_owner_counts (owner, kind, chain_id, stripe, n)"
            " SELECT owner, 'transactions', chain_id, 0, count(*) FROM paycore_transactions"
            " WHERE reorged = :no GROUP BY owner, chain_id"
        ),
        {"no": False},
    )


def _outbox_order_at_insert() -> None:
    """Queues count event ids from now on; ``seq`` goes. A cursor becomes the id just below
    its owner's oldest event it had not passed (or the newest id when it had passed them
    all): nothing it had not delivered is lost, and where commit order and id order
    disagreed (PostgreSQL only, and only between transactions that overlapped) an event may
    be delivered once more."""
    op.execute(
        "UPDATE paycore_event_queues SET last_seq = coalesce("
        "(SELECT min(o.id) - 1 FROM paycore_outbox o"
        " WHERE o.owner = paycore_event_queues.owner"
        " AND (o.seq > paycore_event_queues.last_seq OR o.seq IS NULL)),"
        " (SELECT coalesce(max(id), 0) FROM paycore_outbox))"
    )
    op.drop_index("ix_paycore_outbox_owner_seq", table_name="paycore_outbox")
    if _postgres():
        op.drop_constraint("uq_paycore_outbox_seq", "paycore_outbox", type_="unique")
        op.drop_column("paycore_outbox", "seq")
    else:
        issued = _issued_ids()
        with op.batch_alter_table(
            "paycore_outbox", recreate="always", table_kwargs={"sqlite_autoincrement": True}
        ) as batch:
            batch.drop_constraint("uq_paycore_outbox_seq", type_="unique")
            batch.drop_column("seq")
        _keep_issued_ids(issued)
    op.create_index("ix_paycore_outbox_owner_id", "paycore_outbox", ["owner", "id"])


def _issued_ids() -> int | None:
    found = op.get_bind().execute(
        sa.text("SELECT seq FROM sqlite_sequence WHERE name = 'paycore_outbox'")
    )
    issued: int | None = found.scalar()
    return issued


def _keep_issued_ids(issued: int | None) -> None:
    """SQLite: the rebuilt table's AUTOINCREMENT counter starts at its largest id; put back
    the old one when it was higher (the newest events had been deleted), so no event id --
    and on SQLite no queue position -- is ever handed out twice."""
    if issued is None:
        return
    bind = op.get_bind()
    params = {"issued": issued}
    updated = bind.execute(
        sa.text("UPDATE sqlite_sequence SET seq = max(seq, :issued) WHERE name = 'paycore_outbox'"),
        params,
    )
    if updated.rowcount == 0:
        bind.execute(
            sa.text("INSERT INTO sqlite_sequence (name, seq) VALUES ('paycore_outbox', :issued)"),
            params,
        )


def downgrade() -> None:
    op.drop_index("ix_paycore_outbox_owner_id", table_name="paycore_outbox")
    issued = None if _postgres() else _issued_ids()
    with op.batch_alter_table(
        "paycore_outbox", table_kwargs={"sqlite_autoincrement": True}
    ) as batch:
        batch.add_column(sa.Column("seq", sa.BigInteger(), nullable=True))
        batch.create_unique_constraint("uq_paycore_outbox_seq", ["seq"])
    if not _postgres():
        _keep_issued_ids(issued)
    # Cursors count ids now, which is what they will count as seq again.
    op.execute("UPDATE paycore_outbox SET seq = id")
    op.create_index("ix_paycore_outbox_owner_seq", "paycore_outbox", ["owner", "seq"])

    op.drop_table("paycore_owner_counts")
    op.drop_index("ix_paycore_transactions_owner_newest", table_name="paycore_transactions")
    op.create_index(
        "ix_paycore_transactions_owner_timestamp", "paycore_transactions", ["owner", "timestamp"]
    )
    _rebuild_invoices(with_seq=False)
