"""Host-signal leases: one consumer at a time runs a handler's queue.

One row per handler queue (``signal:<name>``): the holder running it and until when (unix
ms). A new table only, so this revision applies on top of any other that leaves it alone.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    key = sa.String(255).with_variant(sa.String(255, collation="C"), "postgresql")
    op.create_table(
        "paycore_signal_leases",
        sa.Column("consumer", key, primary_key=True),
        sa.Column("holder", key, nullable=True),
        sa.Column("lease_until", sa.BigInteger, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("paycore_signal_leases")
