"""Detected transfers: mined but not yet ``confirmations`` deep ("payment detected,
confirming"), provisional, never counted (``paycore.domain.detected``).

One row per transfer, keyed as a transaction row is; the watcher replaces a chain's rows
each pass, and a read of an invoice looks its own up by guid. A new table only, so this
revision applies on top of any other that leaves it alone.

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def _key(length: int = 255) -> sa.types.TypeEngine[str]:
    return sa.String(length).with_variant(sa.String(length, collation="C"), "postgresql")


def upgrade() -> None:
    money = sa.Numeric(60, 30).with_variant(sa.String(80), "sqlite")
    op.create_table(
        "paycore_detected_transfers",
        sa.Column("chain_id", sa.BigInteger, nullable=False),
        sa.Column("tx_hash", _key(), nullable=False),
        sa.Column("log_index", sa.BigInteger, nullable=False),
        sa.Column("token", _key(), nullable=False),
        sa.Column("guid", _key(64), nullable=False),
        sa.Column("from_address", _key(), nullable=False),
        sa.Column("to_address", _key(), nullable=False),
        sa.Column("amount", money, nullable=False),
        sa.Column("block_number", sa.BigInteger, nullable=False),
        sa.Column("block_hash", _key(66), nullable=False),
        sa.Column("timestamp", sa.BigInteger, nullable=False),
        sa.Column("confirmations", sa.BigInteger, nullable=False),
        sa.Column("required", sa.BigInteger, nullable=False),
        sa.Column("seen_at", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint(
            "chain_id", "tx_hash", "log_index", "token", name="pk_paycore_detected_transfers"
        ),
    )
    op.create_index(
        "ix_paycore_detected_transfers_guid_block_number",
        "paycore_detected_transfers",
        ["guid", "block_number"],
    )


def downgrade() -> None:
    op.drop_index("ix_paycore_detected_transfers_guid_block_number", "paycore_detected_transfers")
    op.drop_table("paycore_detected_transfers")
