"""Webhook deliveries and their attempt log: the persisted retry queue behind webhook
dispatch, so a restart or a killed dispatcher loses no delivery.

As in 0001, types are spelled out here rather than imported from ``tables.py``.

Revision ID: 0002
Revises: 0001
Create Date: 2025-01-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

#: 64-bit ids, except where SQLite needs INTEGER to auto-increment.
ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def key(length: int = 255) -> sa.types.TypeEngine[str]:
    """Identifiers compare and sort bytewise on PostgreSQL, as on SQLite."""
    return sa.String(length).with_variant(sa.String(length, collation="C"), "postgresql")


def upgrade() -> None:
    op.create_table(
        "paycore_webhook_deliveries",
        sa.Column("id", ID, autoincrement=True, nullable=False),
        sa.Column("webhook_id", key(64), nullable=False),
        sa.Column("event_id", sa.BigInteger(), nullable=False),
        sa.Column("owner", key(), nullable=False),
        sa.Column("guid", key(64), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("next_attempt_at", sa.BigInteger(), nullable=True),
        sa.Column("retry_from", sa.BigInteger(), nullable=False),
        sa.Column("lease_token", sa.String(64), nullable=True),
        sa.Column("lease_until", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_paycore_webhook_deliveries"),
        sa.UniqueConstraint("webhook_id", name="uq_paycore_webhook_deliveries_webhook_id"),
        sqlite_autoincrement=True,
    )
    op.create_index(
        "ix_paycore_webhook_deliveries_status_next_attempt_at",
        "paycore_webhook_deliveries",
        ["status", "next_attempt_at"],
    )
    op.create_index(
        "ix_paycore_webhook_deliveries_guid_status_id",
        "paycore_webhook_deliveries",
        ["guid", "status", "id"],
    )
    op.create_index(
        "ix_paycore_webhook_deliveries_owner_id", "paycore_webhook_deliveries", ["owner", "id"]
    )

    op.create_table(
        "paycore_webhook_attempts",
        sa.Column("id", ID, autoincrement=True, nullable=False),
        sa.Column("delivery_id", sa.BigInteger(), nullable=False),
        sa.Column("attempted_at", sa.BigInteger(), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("latency_ms", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_paycore_webhook_attempts"),
    )
    op.create_index(
        "ix_paycore_webhook_attempts_delivery_id_id",
        "paycore_webhook_attempts",
        ["delivery_id", "id"],
    )


def downgrade() -> None:
    op.drop_table("paycore_webhook_attempts")
    op.drop_table("paycore_webhook_deliveries")
