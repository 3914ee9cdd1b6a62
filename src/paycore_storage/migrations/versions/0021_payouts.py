"""Batch payouts: a batch per merchant request, a row per recipient with its own state.

New tables only, so this revision applies on top of any other that leaves them alone.

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def _key(length: int = 255) -> sa.types.TypeEngine[str]:
    return sa.String(length).with_variant(sa.String(length, collation="C"), "postgresql")


def upgrade() -> None:
    money = sa.Numeric(60, 30).with_variant(sa.String(80), "sqlite")
    op.create_table(
        "paycore_payout_batches",
        sa.Column("id", _key(64), nullable=False),
        sa.Column("owner", _key(), nullable=False),
        sa.Column("chain_id", sa.BigInteger, nullable=False),
        sa.Column("contract", _key(), nullable=False),
        sa.Column("calls", sa.Text, nullable=False),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_paycore_payout_batches"),
    )
    op.create_index(
        "ix_paycore_payout_batches_owner_created_at",
        "paycore_payout_batches",
        ["owner", "created_at"],
    )
    op.create_table(
        "paycore_payouts",
        sa.Column("batch_id", _key(64), nullable=False),
        sa.Column("line", sa.BigInteger, nullable=False),
        sa.Column("to_address", _key(), nullable=False),
        sa.Column("token", _key(), nullable=False),
        sa.Column("amount", money, nullable=False),
        sa.Column("value", sa.String(80), nullable=False),
        sa.Column("reference", sa.String(255), nullable=False),
        sa.Column("call", sa.BigInteger, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("tx_hash", _key(), nullable=True),
        sa.Column("updated_at", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("batch_id", "line", name="pk_paycore_payouts"),
    )


def downgrade() -> None:
    op.drop_table("paycore_payouts")
    op.drop_index("ix_paycore_payout_batches_owner_created_at", "paycore_payout_batches")
    op.drop_table("paycore_payout_batches")
