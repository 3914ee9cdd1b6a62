"""Payment links: reusable links that make a fresh invoice each time a buyer opens one.

``paycore_payment_links`` holds one row per link: what every invoice it makes gets (chain,
accepted tokens, description, currency, validity, the merchant's data), its amount (fixed, or
the bounds a buyer chooses within), its optional expiry and use limit, how often it has been
used, when it was disabled, and the per-link rate window (``window_start``,
``window_opens``) that bounds how fast opening it can make invoices. A use, the rate window
and the invoice it makes are written in one transaction (``paycore.storage``:
``use_payment_link``), so the use limit holds under concurrent opens.

As in 0001, types are spelled out here rather than imported from ``tables.py``.

Revision ID: 0010
Revises: 0009
Create Date: 2025-01-08
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def key(length: int = 255) -> sa.types.TypeEngine[str]:
    """Identifiers compare and sort bytewise on PostgreSQL, as on SQLite."""
    return sa.String(length).with_variant(sa.String(length, collation="C"), "postgresql")


#: Exact decimals: NUMERIC(60, 30), text on SQLite (see ``tables.Money``).
MONEY = sa.Numeric(60, 30).with_variant(sa.String(80), "sqlite")


def upgrade() -> None:
    op.create_table(
        "paycore_payment_links",
        sa.Column("id", key(64), nullable=False),
        sa.Column("owner", key(), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("chain_id", sa.BigInteger(), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("accepted_tokens", sa.JSON(), nullable=False),
        sa.Column("token", key(), nullable=False),
        sa.Column("vs_currency", sa.String(16), nullable=False),
        sa.Column("amount", MONEY, nullable=True),
        sa.Column("min_amount", MONEY, nullable=True),
        sa.Column("max_amount", MONEY, nullable=True),
        sa.Column("deadline_secs", sa.BigInteger(), nullable=True),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.Column("expires_at", sa.BigInteger(), nullable=True),
        sa.Column("max_uses", sa.BigInteger(), nullable=True),
        sa.Column("uses", sa.BigInteger(), nullable=False),
        sa.Column("disabled_at", sa.BigInteger(), nullable=True),
        sa.Column("window_start", sa.BigInteger(), nullable=False),
        sa.Column("window_opens", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_paycore_payment_links"),
    )
    op.create_index(
        "ix_paycore_payment_links_owner_created_at",
        "paycore_payment_links",
        ["owner", "created_at"],
    )


def downgrade() -> None:
    op.drop_index("ix_paycore_payment_links_owner_created_at", table_name="paycore_payment_links")
    op.drop_table("paycore_payment_links")
