"""The payout watch list: hashes a confirm was given before they were mined, which the
worker reads again until mined (docs/payouts.md).

A new table only, so this revision applies on top of any other that leaves it alone.

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def _key(length: int = 255) -> sa.types.TypeEngine[str]:
    return sa.String(length).with_variant(sa.String(length, collation="C"), "postgresql")


def upgrade() -> None:
    op.create_table(
        "paycore_payout_watch",
        sa.Column("batch_id", _key(64), nullable=False),
        sa.Column("tx_hash", _key(), nullable=False),
        sa.Column("added_at", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("batch_id", "tx_hash", name="pk_paycore_payout_watch"),
    )
    op.create_index("ix_paycore_payout_watch_added_at", "paycore_payout_watch", ["added_at"])


def downgrade() -> None:
    op.drop_index("ix_paycore_payout_watch_added_at", "paycore_payout_watch")
    op.drop_table("paycore_payout_watch")
