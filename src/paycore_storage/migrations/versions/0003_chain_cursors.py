"""Chain watchers: one cursor-and-lease row per chain, and an index for the watched set.

``paycore_chain_cursors`` holds the last block a chain's watcher scanned, its hash (checked
for reorgs) and the lease that keeps one watcher per chain across processes. The
(chain_id, deadline) index serves ``watched_addresses``: the open invoices of a chain and the
ones whose deadline is recent.

As in 0001, types are spelled out here rather than imported from ``tables.py``.

Revision ID: 0003
Revises: 0002
Create Date: 2025-01-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def key(length: int = 255) -> sa.types.TypeEngine[str]:
    """Identifiers compare and sort bytewise on PostgreSQL, as on SQLite."""
    return sa.String(length).with_variant(sa.String(length, collation="C"), "postgresql")


def upgrade() -> None:
    op.create_table(
        "paycore_chain_cursors",
        sa.Column("chain_id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("block_number", sa.BigInteger(), nullable=True),
        sa.Column("block_hash", key(66), nullable=True),
        sa.Column("holder", key(), nullable=True),
        sa.Column("lease_until", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("chain_id", name="pk_paycore_chain_cursors"),
    )
    op.create_index(
        "ix_paycore_invoices_chain_id_deadline", "paycore_invoices", ["chain_id", "deadline"]
    )


def downgrade() -> None:
    op.drop_index("ix_paycore_invoices_chain_id_deadline", table_name="paycore_invoices")
    op.drop_table("paycore_chain_cursors")
