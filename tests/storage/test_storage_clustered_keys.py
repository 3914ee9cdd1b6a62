"""Revision 0024: on SQLite the session nonces and the owners' counts are stored in their
key's order (``WITHOUT ROWID``), their rows carried over both ways."""

from __future__ import annotations

from pathlib import Path

from revisions import downgrade
from sqlalchemy import text

from paycore_storage import migrate
from paycore_storage.engine import make_engine

TABLES = ("paycore_session_nonces", "paycore_owner_counts")
NONCES = [("0xkey", n, f"{n:064x}") for n in range(1, 6)]
COUNTS = [("0xowner", "invoice", 1, s, 10 + s) for s in range(3)]


def _state(url: str) -> tuple[dict[str, bool], list[tuple[object, ...]], list[tuple[object, ...]]]:
    """Whether each table is clustered, and the rows of both."""
    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            clustered = {
                name: str(sql).rstrip().upper().endswith("WITHOUT ROWID")
                for name, sql in connection.execute(
                    text("SELECT name, sql FROM sqlite_master WHERE type = 'table'")
                )
                if name in TABLES
            }
            nonces = connection.execute(
                text("SELECT address, nonce, digest FROM paycore_session_nonces ORDER BY nonce")
            ).all()
            counts = connection.execute(
                text(
                    "SELECT owner, kind, chain_id, stripe, n FROM paycore_owner_counts"
                    " ORDER BY stripe"
                )
            ).all()
        return clustered, [tuple(r) for r in nonces], [tuple(r) for r in counts]
    finally:
        engine.dispose()


def test_0024_clusters_the_nonces_and_counts_and_keeps_their_rows(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'clustered.sqlite3'}"
    migrate(url, "0023")
    engine = make_engine(url)
    try:
        with engine.begin() as connection:
            connection.execute(
                text("INSERT INTO paycore_session_nonces VALUES (:a, :n, :d)"),
                [{"a": a, "n": n, "d": d} for a, n, d in NONCES],
            )
            connection.execute(
                text("INSERT INTO paycore_owner_counts VALUES (:o, :k, :c, :s, :n)"),
                [{"o": o, "k": k, "c": c, "s": s, "n": n} for o, k, c, s, n in COUNTS],
            )
    finally:
        engine.dispose()
    assert _state(url) == ({name: False for name in TABLES}, NONCES, COUNTS)
    migrate(url)
    assert _state(url) == ({name: True for name in TABLES}, NONCES, COUNTS)
    downgrade(url, "0023")
    assert _state(url) == ({name: False for name in TABLES}, NONCES, COUNTS)
