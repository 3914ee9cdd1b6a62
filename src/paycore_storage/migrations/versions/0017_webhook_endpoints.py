"""Webhook endpoints: several per owner, each with its own URL, secret and event types.

``paycore_webhook_endpoints`` holds an owner's endpoints besides the ``/webhook/set`` URL
(``paycore_webhooks``, left as it is); ``types`` is the space-separated list of event types
the endpoint is sent. ``paycore_webhook_deliveries.endpoint_id`` says which endpoint a
delivery goes to (NULL: the ``/webhook/set`` URL, as every delivery before this revision).
A new table and a nullable column only, so this revision applies on top of any other that
leaves these tables alone.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    owner = sa.String(255).with_variant(sa.String(255, collation="C"), "postgresql")
    key = sa.String(40).with_variant(sa.String(40, collation="C"), "postgresql")
    op.create_table(
        "paycore_webhook_endpoints",
        sa.Column("owner", owner, primary_key=True),
        sa.Column("id", key, primary_key=True),
        sa.Column("url", sa.Text, nullable=False),
        sa.Column("secret", sa.String(255), nullable=False),
        sa.Column("types", sa.Text, nullable=False),
        sa.Column("enabled", sa.Boolean, nullable=False),
        sa.Column("created_at", sa.BigInteger, nullable=False),
    )
    with op.batch_alter_table("paycore_webhook_deliveries") as batch:
        batch.add_column(sa.Column("endpoint_id", key, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("paycore_webhook_deliveries") as batch:
        batch.drop_column("endpoint_id")
    op.drop_table("paycore_webhook_endpoints")
