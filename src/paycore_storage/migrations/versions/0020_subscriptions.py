"""Subscriptions: plans, subscriptions and the periods they are invoiced for.

``paycore_subscription_periods`` has the primary key (subscription_id, idx): a period's
invoice is made in the transaction that inserts its row, so the key is what makes each
period invoiced once, however many workers race (``paycore.storage.subscriptions``). New
tables only, so this revision applies on top of any other that leaves them alone.

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def _key(length: int = 255) -> sa.types.TypeEngine[str]:
    return sa.String(length).with_variant(sa.String(length, collation="C"), "postgresql")


def upgrade() -> None:
    money = sa.Numeric(60, 30).with_variant(sa.String(80), "sqlite")
    op.create_table(
        "paycore_subscription_plans",
        sa.Column("id", _key(64), nullable=False),
        sa.Column("owner", _key(), nullable=False),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("amount", money, nullable=False),
        sa.Column("currency", sa.String(16), nullable=False),
        sa.Column("chain_id", sa.BigInteger, nullable=False),
        sa.Column("accepted_tokens", sa.JSON, nullable=False),
        sa.Column("period_unit", sa.String(8), nullable=False),
        sa.Column("period_count", sa.BigInteger, nullable=False),
        sa.Column("trial_days", sa.BigInteger, nullable=False),
        sa.Column("grace_days", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_paycore_subscription_plans"),
    )
    op.create_index(
        "ix_paycore_subscription_plans_owner_created_at",
        "paycore_subscription_plans",
        ["owner", "created_at"],
    )
    op.create_table(
        "paycore_subscriptions",
        sa.Column("id", _key(64), nullable=False),
        sa.Column("owner", _key(), nullable=False),
        sa.Column("plan_id", _key(64), nullable=False),
        sa.Column("reference", sa.Text, nullable=False),
        sa.Column("email", sa.Text, nullable=True),
        sa.Column("created_at", sa.BigInteger, nullable=False),
        sa.Column("anchor", sa.BigInteger, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("next_index", sa.BigInteger, nullable=False),
        sa.Column("next_issue_at", sa.BigInteger, nullable=False),
        sa.Column("updated_at", sa.BigInteger, nullable=False),
        sa.Column("cancelled_at", sa.BigInteger, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_paycore_subscriptions"),
    )
    op.create_index(
        "ix_paycore_subscriptions_owner_created_at",
        "paycore_subscriptions",
        ["owner", "created_at"],
    )
    op.create_index(
        "ix_paycore_subscriptions_status_next_issue_at",
        "paycore_subscriptions",
        ["status", "next_issue_at"],
    )
    op.create_table(
        "paycore_subscription_periods",
        sa.Column("subscription_id", _key(64), nullable=False),
        sa.Column("idx", sa.BigInteger, nullable=False),
        sa.Column("starts_at", sa.BigInteger, nullable=False),
        sa.Column("ends_at", sa.BigInteger, nullable=False),
        sa.Column("guid", _key(64), nullable=False),
        sa.Column("issued_at", sa.BigInteger, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.PrimaryKeyConstraint("subscription_id", "idx", name="pk_paycore_subscription_periods"),
    )
    op.create_index(
        "ix_paycore_subscription_periods_status_subscription_id_idx",
        "paycore_subscription_periods",
        ["status", "subscription_id", "idx"],
    )


def downgrade() -> None:
    op.drop_index(
        "ix_paycore_subscription_periods_status_subscription_id_idx",
        "paycore_subscription_periods",
    )
    op.drop_table("paycore_subscription_periods")
    op.drop_index("ix_paycore_subscriptions_status_next_issue_at", "paycore_subscriptions")
    op.drop_index("ix_paycore_subscriptions_owner_created_at", "paycore_subscriptions")
    op.drop_table("paycore_subscriptions")
    op.drop_index("ix_paycore_subscription_plans_owner_created_at", "paycore_subscription_plans")
    op.drop_table("paycore_subscription_plans")
