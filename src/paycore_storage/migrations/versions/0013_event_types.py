"""Event types: each outbox row names the change it announces (``paycore.domain.changes``).

``paycore_outbox.type`` is ``invoice.paid``, ``invoice.overpaid``, ``invoice.late_payment``
and so on, so webhooks and host signals can tell a first payment from a second one although
both carry an Invoice record with status ``paid``. Nullable: rows written before this
revision have none and read as ``invoice.updated``. A column added only, so this revision
applies on top of any other that leaves ``paycore_outbox`` alone.

Revision ID: 0013
Revises: 0011
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("paycore_outbox") as batch:
        batch.add_column(sa.Column("type", sa.String(64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("paycore_outbox") as batch:
        batch.drop_column("type")
