"""Owner management: app keys, e-mail notification settings, disabled wallet indexes and
the once-only notice log.

``paycore_app_keys`` is keyed by the key's address, so one address acts for one owner at
most and a salt-signed call names its owner by its signer alone. ``paycore_notices`` lets
several processes agree that a deposit's e-mail went out once.

As in 0001, types are spelled out here rather than imported from ``tables.py``.

Revision ID: 0004
Revises: 0003
Create Date: 2025-01-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def key(length: int = 255) -> sa.types.TypeEngine[str]:
    """Identifiers compare and sort bytewise on PostgreSQL, as on SQLite."""
    return sa.String(length).with_variant(sa.String(length, collation="C"), "postgresql")


def upgrade() -> None:
    op.create_table(
        "paycore_app_keys",
        sa.Column("address", key(), nullable=False),
        sa.Column("owner", key(), nullable=False),
        sa.Column("added_at", sa.BigInteger(), nullable=False),
        sa.Column("added_by", key(), nullable=False),
        sa.PrimaryKeyConstraint("address", name="pk_paycore_app_keys"),
    )
    op.create_index("ix_paycore_app_keys_owner_added_at", "paycore_app_keys", ["owner", "added_at"])
    op.create_table(
        "paycore_email_settings",
        sa.Column("owner", key(), nullable=False),
        sa.Column("chain_id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("email", sa.String(320), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("updated_at", sa.BigInteger(), nullable=False),
        sa.Column("enabled_at", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("owner", "chain_id", name="pk_paycore_email_settings"),
    )
    op.create_table(
        "paycore_disabled_indexes",
        sa.Column("owner", key(), nullable=False),
        sa.Column("chain_id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("wallet_index", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("disabled_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint(
            "owner", "chain_id", "wallet_index", name="pk_paycore_disabled_indexes"
        ),
    )
    op.create_table(
        "paycore_notices",
        sa.Column("key", key(), nullable=False),
        sa.Column("claimed_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("key", name="pk_paycore_notices"),
    )


def downgrade() -> None:
    op.drop_table("paycore_notices")
    op.drop_table("paycore_disabled_indexes")
    op.drop_table("paycore_email_settings")
    op.drop_index("ix_paycore_app_keys_owner_added_at", table_name="paycore_app_keys")
    op.drop_table("paycore_app_keys")
