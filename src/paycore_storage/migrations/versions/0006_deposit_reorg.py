"""Deep reorgs: each deposit keeps its block, and a flag once a reorg replaced it.

``paycore_transactions`` gains ``block_number`` and ``block_hash`` (the block a deposit was
found in; NULL for withdrawals and for rows older than this revision, which are therefore
never re-checked) and ``reorged`` (the block was replaced and the deposit taken back out of
its invoice). The (chain_id, block_number) index serves ``recorded_deposits``: the deposits
of a chain's recent blocks, which a watcher re-checks when it finds a block replaced.

As in 0001, types are spelled out here rather than imported from ``tables.py``.

Revision ID: 0006_deposit_reorg
Revises: 0005
Create Date: 2025-01-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def key(length: int = 255) -> sa.types.TypeEngine[str]:
    """Identifiers compare and sort bytewise on PostgreSQL, as on SQLite."""
    return sa.String(length).with_variant(sa.String(length, collation="C"), "postgresql")


def upgrade() -> None:
    with op.batch_alter_table("paycore_transactions") as batch:
        batch.add_column(sa.Column("block_number", sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column("block_hash", key(66), nullable=True))
        batch.add_column(
            sa.Column("reorged", sa.Boolean(), nullable=False, server_default=sa.false())
        )
    op.create_index(
        "ix_paycore_transactions_chain_id_block_number",
        "paycore_transactions",
        ["chain_id", "block_number"],
    )


def downgrade() -> None:
    op.drop_index(
        "ix_paycore_transactions_chain_id_block_number", table_name="paycore_transactions"
    )
    with op.batch_alter_table("paycore_transactions") as batch:
        batch.drop_column("reorged")
        batch.drop_column("block_hash")
        batch.drop_column("block_number")
