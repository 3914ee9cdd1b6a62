"""Prices: the persisted price table, rates locked at invoice creation, parked deposits.

``paycore_prices`` holds the last good price of each (token, vsCurrency), written by the
worker's refresher and read by every process, so GET /prices and the valuation of deposits
agree across processes. ``paycore_invoice_quotes`` keeps the rates an invoice locked at
creation (``Settings.rate_lock``). ``paycore_parked_deposits`` keeps deposits that await a
fresh price, so a watcher can move past their block instead of holding its chain.

As in 0001, types are spelled out here rather than imported from ``tables.py``.

Revision ID: 0005
Revises: 0004
Create Date: 2025-01-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
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
        "paycore_prices",
        sa.Column("token", key(), nullable=False),
        sa.Column("vs_currency", key(16), nullable=False),
        sa.Column("price", MONEY, nullable=False),
        sa.Column("fetched_at", sa.BigInteger(), nullable=False),
        sa.Column("source", sa.String(64), nullable=False),
        sa.Column("checked_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("token", "vs_currency", name="pk_paycore_prices"),
    )
    op.create_table(
        "paycore_invoice_quotes",
        sa.Column("guid", key(64), nullable=False),
        sa.Column("token", key(), nullable=False),
        sa.Column("vs_currency", key(16), nullable=False),
        sa.Column("price", MONEY, nullable=False),
        sa.Column("fetched_at", sa.BigInteger(), nullable=False),
        sa.Column("source", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("guid", "token", name="pk_paycore_invoice_quotes"),
    )
    op.create_table(
        "paycore_parked_deposits",
        sa.Column("id", ID, autoincrement=True, nullable=False),
        sa.Column("chain_id", sa.BigInteger(), nullable=False),
        sa.Column("tx_hash", key(), nullable=False),
        sa.Column("log_index", sa.BigInteger(), nullable=False),
        sa.Column("token", key(), nullable=False),
        sa.Column("from_address", key(), nullable=False),
        sa.Column("to_address", key(), nullable=False),
        sa.Column("amount", MONEY, nullable=False),
        sa.Column("timestamp", sa.BigInteger(), nullable=False),
        sa.Column("block_number", sa.BigInteger(), nullable=False),
        sa.Column("block_hash", key(66), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("parked_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_paycore_parked_deposits"),
        sa.UniqueConstraint(
            "chain_id",
            "tx_hash",
            "log_index",
            "token",
            name="uq_paycore_parked_deposits_transfer",
        ),
    )
    op.create_index(
        "ix_paycore_parked_deposits_chain_id_id", "paycore_parked_deposits", ["chain_id", "id"]
    )


def downgrade() -> None:
    op.drop_index("ix_paycore_parked_deposits_chain_id_id", table_name="paycore_parked_deposits")
    op.drop_table("paycore_parked_deposits")
    op.drop_table("paycore_invoice_quotes")
    op.drop_table("paycore_prices")
