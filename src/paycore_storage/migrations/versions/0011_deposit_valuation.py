"""Each recorded transfer keeps the rate it was valued at.

``paycore_transactions`` gains ``rate`` (the price of one whole token), ``rate_source`` (the
price source's name; ``locked:<source>`` for a rate the invoice locked at creation),
``rate_at`` (the unix time that price describes) and ``rate_currency`` (its vsCurrency), so
the accounting export can show, beside each payment's vsValue, the rate and where it came
from. Rows recorded before this revision keep NULL there: their rate was not kept, and
an estimate from vsValue / amount would be rounded, so none is invented.

As in 0001, types are spelled out here rather than imported from ``tables.py``.

Revision ID: 0011
Revises: 0010
Create Date: 2025-01-08
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

#: Exact decimals: NUMERIC(60, 30), text on SQLite (see ``tables.Money``).
MONEY = sa.Numeric(60, 30).with_variant(sa.String(80), "sqlite")


def upgrade() -> None:
    with op.batch_alter_table("paycore_transactions") as batch:
        batch.add_column(sa.Column("rate", MONEY, nullable=True))
        batch.add_column(sa.Column("rate_source", sa.String(64), nullable=True))
        batch.add_column(sa.Column("rate_at", sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column("rate_currency", sa.String(16), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("paycore_transactions") as batch:
        batch.drop_column("rate_currency")
        batch.drop_column("rate_at")
        batch.drop_column("rate_source")
        batch.drop_column("rate")
