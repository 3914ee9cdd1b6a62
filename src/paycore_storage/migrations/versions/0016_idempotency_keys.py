"""Idempotency keys: the first answer to a creating write, kept so a retry gets it again.

One row per (owner, endpoint, key), written in the transaction of the write it answers
(``paycore.storage.idempotency``). A new table only.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    def key(length: int = 255) -> sa.types.TypeEngine[str]:
        return sa.String(length).with_variant(sa.String(length, collation="C"), "postgresql")

    op.create_table(
        "paycore_idempotency_keys",
        sa.Column("scope", key(), primary_key=True),
        sa.Column("route", key(64), primary_key=True),
        sa.Column("key", key(), primary_key=True),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("status", sa.Integer, nullable=False),
        sa.Column("content_type", sa.String(100), nullable=False),
        sa.Column("body", sa.LargeBinary, nullable=False),
    )
    op.create_index(
        "ix_paycore_idempotency_keys_created_at", "paycore_idempotency_keys", ["created_at"]
    )


def downgrade() -> None:
    op.drop_index("ix_paycore_idempotency_keys_created_at", "paycore_idempotency_keys")
    op.drop_table("paycore_idempotency_keys")
