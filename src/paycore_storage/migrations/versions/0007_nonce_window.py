"""Session nonces: the replay window (docs/decisions.md, "Session nonces").

``paycore_session_nonces`` remembers each signed message a session key had accepted --
(address, nonce, sha256 of the signed payload) -- while its nonce is within the window below
the key's highest, so concurrent and reordered requests of one key pass and each exact
request passes once.

``paycore_session_keys.nonce_floor``: keys that exist at this upgrade accepted nonces without
any record of which ones, so everything at or below their current last_seen_nonce stays
refused, as it was under the strict rule; keys registered later start at 0.

As in 0001, types are spelled out here rather than imported from ``tables.py``.

Revision ID: 0007_nonce_window
Revises: 0005
Create Date: 2025-01-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def key(length: int = 255) -> sa.types.TypeEngine[str]:
    """Identifiers compare and sort bytewise on PostgreSQL, as on SQLite."""
    return sa.String(length).with_variant(sa.String(length, collation="C"), "postgresql")


def upgrade() -> None:
    op.create_table(
        "paycore_session_nonces",
        sa.Column("address", key(), nullable=False),
        sa.Column("nonce", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("digest", key(64), nullable=False),
        sa.PrimaryKeyConstraint("address", "nonce", "digest", name="pk_paycore_session_nonces"),
    )
    with op.batch_alter_table("paycore_session_keys") as batch:
        batch.add_column(
            sa.Column("nonce_floor", sa.BigInteger(), nullable=False, server_default="0")
        )
    op.execute("UPDATE paycore_session_keys SET nonce_floor = last_seen_nonce")


def downgrade() -> None:
    with op.batch_alter_table("paycore_session_keys") as batch:
        batch.drop_column("nonce_floor")
    op.drop_table("paycore_session_nonces")
