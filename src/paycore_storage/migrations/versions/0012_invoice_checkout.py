"""Where the checkout page leads a payer: an invoice's redirectUrl, cancelUrl and
redirectAutomatically, in one nullable JSON column of ``paycore_invoices``.

Why one JSON column and not three: the three are read and written together, only by the
invoice's own row, never filtered on; NULL (every row before this revision) means none set.

A column added, nothing rewritten: rows written before read back with no return links.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("paycore_invoices", sa.Column("checkout", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("paycore_invoices") as batch:
        batch.drop_column("checkout")
