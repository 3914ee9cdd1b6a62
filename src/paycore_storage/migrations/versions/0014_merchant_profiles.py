"""Merchant profiles: the name, logo URL and support contact the checkout page shows.

One row per owner (``paycore.merchant``), replaced whole by POST /merchant/profile. A new
table only, so this revision applies on top of any other that leaves it alone.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    owner = sa.String(255).with_variant(sa.String(255, collation="C"), "postgresql")
    op.create_table(
        "paycore_merchant_profiles",
        sa.Column("owner", owner, primary_key=True),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("logo_url", sa.String(500), nullable=True),
        sa.Column("support", sa.String(500), nullable=True),
        sa.Column("updated_at", sa.BigInteger, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("paycore_merchant_profiles")
