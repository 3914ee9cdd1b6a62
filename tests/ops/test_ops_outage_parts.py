"""The parts of outage handling, each on its own: the rate-limited log and the backoff (on a
stepped clock), the storage plugin's mapping of driver errors, and both adapters' 503 in
process against a PostgreSQL URL where nothing listens (a real refused connection).

The whole story under load, with real servers and a PostgreSQL server stopped and started,
is test_ops_storage_outage.py.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from litestar.testing import TestClient
from ops_helpers import free_port

from paycore import Gateway, Settings
from paycore.errors import StorageUnavailable
from paycore.ops.outages import Backoff, LoopGuard, OutageLog
from paycore_flask import create_app as flask_app
from paycore_litestar import create_app as litestar_app
from paycore_storage import SqlStorage

PASSWORD = "Unre4chable-Pw"


class SteppedClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_outage_log_writes_one_line_per_kind_per_interval(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = SteppedClock()
    outages = OutageLog(logging.getLogger("paycore.test"), 10.0, clock=clock)
    with caplog.at_level(logging.INFO, "paycore.test"):
        for _ in range(250):  # 25 s of failures, ten a second, of two kinds
            for kind in ("refused", "dropped"):
                outages.failure(kind, "storage unavailable (%s)", kind)
            clock.now += 0.1
        outages.recovered("refused", "refused: back")
        outages.recovered("refused", "refused: back")  # once only
        outages.recovered("never-failed", "not logged")
    lines = [r.getMessage() for r in caplog.records]
    # t = 0, 10, 20 s for each kind; each later line counts what it held back.
    assert lines.count("storage unavailable (refused)") == 1
    assert lines.count("storage unavailable (refused) [99 more since the last line]") == 2
    assert len([line for line in lines if "(dropped)" in line]) == 3
    assert lines[-1] == "refused: back" and lines.count("refused: back") == 1
    assert all(r.exc_info is None for r in caplog.records)  # no tracebacks


def test_backoff_doubles_to_its_ceiling_with_jitter_below_it() -> None:
    top = Backoff(0.5, 8.0, rng=lambda: 0.0)
    assert [top.next() for _ in range(7)] == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0]
    top.reset()
    assert top.next() == 0.5
    low = Backoff(0.5, 8.0, jitter=0.5, rng=lambda: 0.999)
    waits = [low.next() for _ in range(6)]
    assert all(0.5 * base <= w <= base for w, base in zip(waits, [0.5, 1, 2, 4, 8, 8], strict=True))


def test_loop_guard_backs_off_logs_once_and_reports_recovery(
    caplog: pytest.LogCaptureFixture,
) -> None:
    guard = LoopGuard(
        "test loop", logging.getLogger("paycore.test"), pace=0.1, ceiling=1.0, log_interval=60
    )
    outage = StorageUnavailable("OperationalError", "connection refused")
    with caplog.at_level(logging.INFO, "paycore.test"):
        waits = [guard.failed(outage) for _ in range(8)]
        guard.succeeded()
        guard.succeeded()
    assert max(waits) <= 1.0 and waits[4] > waits[0]
    assert [r.getMessage().split(";")[0] for r in caplog.records] == [
        "test loop: storage unavailable (OperationalError: connection refused)",
        "test loop: storage is back after 8 failed rounds",
    ]
    assert guard.backoff.failures == 0


# -- the storage plugin --------------------------------------------------------------------


def _unreachable_url() -> str:
    return f"postgresql://postgres:{PASSWORD}@127.0.0.1:{free_port()}/paycore"


def test_an_unreachable_postgresql_raises_storage_unavailable() -> None:
    store = SqlStorage(_unreachable_url())
    with pytest.raises(StorageUnavailable) as caught, store.transaction() as tx:
        tx.get_invoice("x")
    assert caught.value.status == 503 and caught.value.kind == "OperationalError"
    assert "Connection refused" in caught.value.detail and PASSWORD not in caught.value.detail
    store.close()


def test_sqlite_bugs_stay_bugs_and_an_unopenable_file_is_an_outage(tmp_path: Path) -> None:
    """sqlite3 names a missing table an OperationalError too; that one is not an outage."""
    store = SqlStorage(f"sqlite:///{tmp_path / 'ok.sqlite3'}")
    with pytest.raises(Exception) as caught, store.transaction() as tx:
        tx._c.exec_driver_sql("SELECT * FROM no_such_table")  # type: ignore[attr-defined]
    assert not isinstance(caught.value, StorageUnavailable)
    store.close()
    gone = SqlStorage(f"sqlite:///{tmp_path / 'missing-dir' / 'db.sqlite3'}")
    outage = pytest.raises(StorageUnavailable, match="storage unavailable, retry later")
    with outage, gone.transaction() as tx:
        tx.get_invoice("x")
    gone.close()


def test_a_sqlite_write_lock_held_elsewhere_is_an_outage_on_every_way_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """BEGIN IMMEDIATE and the nonce statements go to sqlite3 directly, past SQLAlchemy's
    error wrapping: "database is locked" from there must still be a 503, not a 500."""
    monkeypatch.setattr("paycore_storage.engine.SQLITE_BUSY_TIMEOUT", 0.2)
    path = tmp_path / "busy.sqlite3"
    store = SqlStorage(f"sqlite:///{path}")
    store.migrate()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process's writer, holding the lock
    try:
        with pytest.raises(StorageUnavailable) as caught, store.transaction() as tx:
            tx.get_invoice("x")
        assert (caught.value.kind, caught.value.detail) == (
            "OperationalError",
            "database is locked",
        )
        with pytest.raises(StorageUnavailable):
            store.spend_nonce("0x" + "7" * 40, 1, "ab" * 32, window=10, now=1)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
        store.close()


# -- both adapters, in process -------------------------------------------------------------


@pytest.fixture
def down_gateway() -> Iterator[Gateway]:
    # Proof of work on: only then does POST /invoice/challenge write (a row per challenge).
    settings = Settings(database_url=_unreachable_url(), storage_retry_after=7, pow_difficulty=4)
    gateway = Gateway(settings)
    yield gateway
    gateway.close()


def test_both_adapters_answer_503_with_retry_after_and_log_once(
    down_gateway: Gateway, caplog: pytest.LogCaptureFixture
) -> None:
    answers = []
    with caplog.at_level(logging.WARNING):
        flask = flask_app(gateway=down_gateway).test_client()
        for _ in range(10):
            got = flask.get("/paycore/invoice/0b4c1e0e-0000-4000-8000-000000000000")
            answers.append((got.status_code, got.headers.get("retry-after"), got.text))
            got = flask.post("/paycore/invoice/challenge", json={"address": "0x" + "11" * 20})
            answers.append((got.status_code, got.headers.get("retry-after"), got.text))
        with TestClient(litestar_app(gateway=down_gateway)) as litestar:
            for _ in range(10):
                got = litestar.get("/paycore/invoice/0b4c1e0e-0000-4000-8000-000000000000")
                answers.append((got.status_code, got.headers.get("retry-after"), got.text))
    assert set(answers) == {(503, "7", "storage unavailable, retry later")}
    lines = [r for r in caplog.records if r.name == "paycore.api"]
    assert len(lines) == 1 and lines[0].exc_info is None
    assert "storage unavailable (OperationalError:" in lines[0].getMessage()
    assert PASSWORD not in caplog.text
