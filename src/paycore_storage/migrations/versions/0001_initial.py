"""Initial paycore schema: invoices, transactions, session keys, wallet indexes, proof-of-work
challenges, seen signatures, webhooks, the event outbox and its queues, poll tokens.

Types are spelled out here rather than imported from ``tables.py`` so that this revision keeps
meaning what it meant when it ran; a test checks the two still agree.

Revision ID: 0001
Revises:
Create Date: 2025-01-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

#: Exact decimals: NUMERIC(60, 30), or text on SQLite (whose NUMERIC would be a float).
MONEY = sa.Numeric(60, 30).with_variant(sa.String(80), "sqlite")
#: 64-bit ids, except where SQLite needs INTEGER to auto-increment.
ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def key(length: int = 255) -> sa.types.TypeEngine[str]:
    """Identifiers compare and sort bytewise on PostgreSQL, as on SQLite."""
    return sa.String(length).with_variant(sa.String(length, collation="C"), "postgresql")


def upgrade() -> None:
    op.create_table(
        "paycore_invoices",
        sa.Column("guid", key(64), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("deadline", sa.BigInteger(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("value", MONEY, nullable=False),
        sa.Column("token", key(), nullable=False),
        sa.Column("chain_id", sa.BigInteger(), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("address", key(), nullable=False),
        sa.Column("owner", key(), nullable=False),
        sa.Column("accepted_tokens", sa.JSON(), nullable=False),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.Column("paid_amount", MONEY, nullable=False),
        sa.Column("payments", sa.JSON(), nullable=False),
        sa.Column("vs_currency", sa.String(16), nullable=False),
        sa.PrimaryKeyConstraint("guid", name="pk_paycore_invoices"),
    )
    op.create_index(
        "ix_paycore_invoices_owner_created_at", "paycore_invoices", ["owner", "created_at"]
    )
    op.create_index(
        "ix_paycore_invoices_chain_id_address_created_at",
        "paycore_invoices",
        ["chain_id", "address", "created_at"],
    )
    op.create_index(
        "ix_paycore_invoices_status_deadline", "paycore_invoices", ["status", "deadline"]
    )

    op.create_table(
        "paycore_transactions",
        sa.Column("id", ID, autoincrement=True, nullable=False),
        sa.Column("chain_id", sa.BigInteger(), nullable=False),
        sa.Column("tx_hash", key(), nullable=False),
        sa.Column("log_index", sa.BigInteger(), nullable=False),
        sa.Column("token", key(), nullable=False),
        sa.Column("type", sa.String(16), nullable=False),
        sa.Column("from_address", key(), nullable=False),
        sa.Column("to_address", key(), nullable=True),
        sa.Column("amount", MONEY, nullable=False),
        sa.Column("vs_value", MONEY, nullable=False),
        sa.Column("timestamp", sa.BigInteger(), nullable=False),
        sa.Column("owner", key(), nullable=False),
        sa.Column("guid", key(64), nullable=True),
        sa.Column("counted", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_paycore_transactions"),
        sa.UniqueConstraint(
            "chain_id", "tx_hash", "log_index", "token", name="uq_paycore_transactions_transfer"
        ),
    )
    op.create_index(
        "ix_paycore_transactions_owner_timestamp", "paycore_transactions", ["owner", "timestamp"]
    )

    op.create_table(
        "paycore_session_keys",
        sa.Column("address", key(), nullable=False),
        sa.Column("public_key", sa.String(255), nullable=False),
        sa.Column("owner", key(), nullable=False),
        sa.Column("registered_at", sa.BigInteger(), nullable=False),
        sa.Column("expires_at", sa.BigInteger(), nullable=False),
        sa.Column("last_seen_nonce", sa.BigInteger(), nullable=False),
        sa.Column("encryption_public_key", sa.String(255), nullable=True),
        sa.PrimaryKeyConstraint("address", name="pk_paycore_session_keys"),
    )
    op.create_index(
        "ix_paycore_session_keys_owner_registered_at",
        "paycore_session_keys",
        ["owner", "registered_at"],
    )

    op.create_table(
        "paycore_wallet_indexes",
        sa.Column("owner", key(), nullable=False),
        sa.Column("chain_id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("next_index", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("owner", "chain_id", name="pk_paycore_wallet_indexes"),
    )

    op.create_table(
        "paycore_pow_challenges",
        sa.Column("challenge", key(), nullable=False),
        sa.Column("address", key(), nullable=False),
        sa.Column("difficulty", sa.Integer(), nullable=False),
        sa.Column("expires_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("challenge", name="pk_paycore_pow_challenges"),
    )

    op.create_table(
        "paycore_seen_signatures",
        sa.Column("digest", key(), nullable=False),
        sa.Column("expires_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("digest", name="pk_paycore_seen_signatures"),
    )

    op.create_table(
        "paycore_webhooks",
        sa.Column("owner", key(), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("secret", sa.String(255), nullable=False),
        sa.PrimaryKeyConstraint("owner", name="pk_paycore_webhooks"),
    )

    op.create_table(
        "paycore_outbox",
        sa.Column("id", ID, autoincrement=True, nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=True),
        sa.Column("owner", key(), nullable=False),
        sa.Column("guid", key(64), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_paycore_outbox"),
        sa.UniqueConstraint("seq", name="uq_paycore_outbox_seq"),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_paycore_outbox_owner_seq", "paycore_outbox", ["owner", "seq"])

    op.create_table(
        "paycore_event_queues",
        sa.Column("consumer", key(), nullable=False),
        sa.Column("owner", key(), nullable=False),
        sa.Column("last_seq", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("consumer", name="pk_paycore_event_queues"),
    )

    op.create_table(
        "paycore_poll_tokens",
        sa.Column("token", key(), nullable=False),
        sa.Column("owner", key(), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("token", name="pk_paycore_poll_tokens"),
    )


def downgrade() -> None:
    for table in (
        "paycore_poll_tokens",
        "paycore_event_queues",
        "paycore_outbox",
        "paycore_webhooks",
        "paycore_seen_signatures",
        "paycore_pow_challenges",
        "paycore_wallet_indexes",
        "paycore_session_keys",
        "paycore_transactions",
        "paycore_invoices",
    ):
        op.drop_table(table)
