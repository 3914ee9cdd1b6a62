"""Refunds: money sent back to a payer from the owner's wallet (docs/interface.md, POST /refund).

``paycore_refunds`` holds one row per refund -- pending until the watcher sees the owner's
wallet pay it, then confirmed with the withdrawal's transaction, or cancelled by the
merchant -- apart from the invoice's row, which stays as it is. ``seq`` keeps the order
refunds were made in (the order ``Invoice.refunds`` lists them); the (guid, seq) index
serves an invoice's refunds, the (chain_id, status, seq) index the pending refunds of a
chain that the watcher matches withdrawals against.

A new table only: nothing an earlier revision made is touched, so this revision applies
on top of any other that leaves ``paycore_refunds`` alone.

As in 0001, types are spelled out here rather than imported from ``tables.py``.

Revision ID: 0009
Revises: 0007
Create Date: 2025-01-08
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def key(length: int = 255) -> sa.types.TypeEngine[str]:
    """Identifiers compare and sort bytewise on PostgreSQL, as on SQLite."""
    return sa.String(length).with_variant(sa.String(length, collation="C"), "postgresql")


#: Exact decimals: NUMERIC(60, 30), text on SQLite (see ``tables.Money``).
MONEY = sa.Numeric(60, 30).with_variant(sa.String(80), "sqlite")
#: SQLite auto-increments only an INTEGER PRIMARY KEY.
ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "paycore_refunds",
        sa.Column("seq", ID, autoincrement=True, nullable=False),
        sa.Column("id", key(64), nullable=False),
        sa.Column("guid", key(64), nullable=False),
        sa.Column("owner", key(), nullable=False),
        sa.Column("chain_id", sa.BigInteger(), nullable=False),
        sa.Column("token", key(), nullable=False),
        sa.Column("to_address", key(), nullable=False),
        sa.Column("amount", MONEY, nullable=False),
        sa.Column("vs_value", MONEY, nullable=False),
        sa.Column("rate", MONEY, nullable=False),
        sa.Column("rate_source", sa.String(16), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("tx_hash", key(), nullable=True),
        sa.Column("log_index", sa.BigInteger(), nullable=True),
        sa.Column("settled_at", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("seq", name="pk_paycore_refunds"),
        sa.UniqueConstraint("id", name="uq_paycore_refunds_id"),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_paycore_refunds_guid_seq", "paycore_refunds", ["guid", "seq"])
    op.create_index(
        "ix_paycore_refunds_chain_id_status_seq", "paycore_refunds", ["chain_id", "status", "seq"]
    )


def downgrade() -> None:
    op.drop_index("ix_paycore_refunds_chain_id_status_seq", table_name="paycore_refunds")
    op.drop_index("ix_paycore_refunds_guid_seq", table_name="paycore_refunds")
    op.drop_table("paycore_refunds")
