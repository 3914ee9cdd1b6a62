"""Worker processes (``python -m paycore.runtime.worker``) on a shared SQLite file or PostgreSQL:
killed mid-delivery and restarted, and two at once -- nothing lost, nothing doubled."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from events_helpers import FAST_ENV, Merchant, Receiver, gateway_on, wait_until
from sqlalchemy.engine import URL

from paycore.gateway import Gateway
from paycore.webhooks.log import list_deliveries
from paycore.webhooks.records import DeliveryStatus
from paycore_storage import SqlStorage

pytestmark = pytest.mark.slow  # real worker processes, waited on

Start = Callable[..., subprocess.Popen[bytes]]


@pytest.fixture
def start_worker(tmp_path: Path) -> Iterator[Start]:
    """Starts workers on a URL with the fast retry settings; kills any left at the end."""
    started: list[subprocess.Popen[bytes]] = []

    def start(
        url: URL, name: str, *extra: str, env_extra: dict[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        env = {**os.environ, **FAST_ENV, **(env_extra or {})}
        env.pop("PAYCORE_DATABASE_URL", None)
        log = open(tmp_path / f"{name}.log", "wb")  # noqa: SIM115 - the child owns it
        command = [sys.executable, "-m", "paycore.runtime.worker", "--database-url"]
        command += [url.render_as_string(hide_password=False), "--no-sweep", *extra]
        process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)


def worker_log(tmp_path: Path, name: str) -> str:
    return (tmp_path / f"{name}.log").read_text(errors="replace")


def wait_started(tmp_path: Path, name: str) -> None:
    wait_until(lambda: "worker started" in worker_log(tmp_path, name), what=f"{name} to start")


def settled(gateway: Gateway, owner: str, expected: int) -> bool:
    items, total, _, _ = list_deliveries(gateway, owner, status=DeliveryStatus.DELIVERED)
    return total == expected


def collapse_repeats(sequence: list[int]) -> list[int]:
    """A redelivered event repeats in place; order is about distinct events."""
    return [x for i, x in enumerate(sequence) if i == 0 or sequence[i - 1] != x]


def test_killed_mid_delivery_then_restarted_loses_nothing(
    sql_url: URL, receiver: Receiver, start_worker: Start, tmp_path: Path
) -> None:
    """SIGKILL while POSTs are in flight: their leases lapse and a new worker sends them
    again with the same webhook-id. Every event arrives; only the in-flight ones twice."""
    gateway = gateway_on(SqlStorage(sql_url))
    merchant = Merchant(gateway)
    receiver.secret = merchant.endpoint(receiver.url)  # every type: 3 events an invoice
    receiver.slow_seconds = 1.0
    receiver.mode = "slow"
    guids = merchant.invoices_paid_in_parts(4, parts=3)

    first = start_worker(sql_url, "first")
    wait_until(lambda: receiver.in_flight >= 1, what="a POST in flight")
    first.send_signal(signal.SIGKILL)
    assert first.wait(timeout=30) == -signal.SIGKILL
    in_flight_at_kill = {r.webhook_id for r in receiver.snapshot()}

    receiver.mode = "up"
    second = start_worker(sql_url, "second")
    wait_until(lambda: settled(gateway, merchant.owner, 12), timeout=60, what="12 delivered")
    second.send_signal(signal.SIGTERM)
    assert second.wait(timeout=30) == 0, worker_log(tmp_path, "second")

    items, _, _, _ = list_deliveries(gateway, merchant.owner)
    ids = receiver.accepted_ids()
    assert set(ids) == {d.webhook_id for d in items}
    assert {i for i, n in ids.items() if n > 1} <= in_flight_at_kill
    assert all(r.verified for r in receiver.snapshot())
    order = {guid: collapse_repeats(seen) for guid, seen in receiver.order_by_invoice().items()}
    assert order == {guid: [1, 2, 3] for guid in guids}
    gateway.close()


def test_two_workers_share_the_work_without_double_delivery(
    sql_url: URL, receiver: Receiver, start_worker: Start, tmp_path: Path
) -> None:
    """Two dispatcher processes drain one queue while events keep coming: each webhook-id
    is accepted exactly once, each invoice in order, and both workers did some of it."""
    gateway = gateway_on(SqlStorage(sql_url))
    merchant = Merchant(gateway)
    receiver.secret = merchant.endpoint(receiver.url)  # every type: 3 events an invoice
    # Slow enough that one worker cannot drain the queue before the other's first poll,
    # even on a loaded machine: the test is about sharing.
    receiver.slow_seconds = 0.05
    receiver.mode = "slow"
    # A lease that lapses while its POST is still being finished is a redelivery by design
    # (at-least-once); on a loaded machine 3 s can lapse, so this test's lease is long: it
    # checks that two claimants never share a live lease.
    long_lease = {"PAYCORE_WEBHOOK_LEASE": "60"}
    workers = [
        start_worker(sql_url, name, "--log-level", "DEBUG", env_extra=long_lease)
        for name in ("a", "b")
    ]
    for name in ("a", "b"):
        wait_started(tmp_path, name)

    guids: list[str] = []
    for _ in range(5):
        guids += merchant.invoices_paid_in_parts(10, parts=3)
    wait_until(lambda: settled(gateway, merchant.owner, 150), timeout=90, what="150 delivered")
    time.sleep(0.5)  # a double delivery would land now
    for process in workers:
        process.send_signal(signal.SIGTERM)
    for process, name in zip(workers, ("a", "b"), strict=True):
        assert process.wait(timeout=30) == 0, worker_log(tmp_path, name)

    ids = receiver.accepted_ids()
    assert len(ids) == 150 and set(ids.values()) == {1}
    assert len(receiver.snapshot()) == 150  # no failed attempt either
    assert receiver.order_by_invoice() == {guid: [1, 2, 3] for guid in guids}
    shares = [worker_log(tmp_path, name).count(" delivered to ") for name in ("a", "b")]
    assert sum(shares) == 150 and min(shares) > 0, shares
    gateway.close()


def test_worker_refuses_a_database_url_no_plugin_handles(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "paycore.runtime.worker", "--database-url", "nosuch://x"],
        capture_output=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if k != "PAYCORE_DATABASE_URL"},
    )
    assert result.returncode == 2 and b"no storage plugin handles" in result.stderr


class DrippingReceiver:
    """A webhook target that never finishes its answer: one byte every 1.5 s, each read
    within ``webhook_timeout`` (2 s), so only the attempt's total deadline ends the POST."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.connections = 0
        self.hung_up = 0  # connections the worker closed while the drip went on
        self.closed = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.getsockname()[1]}/hook"

    def _serve(self) -> None:
        while not self.closed.is_set():
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._drip, args=(conn,), daemon=True).start()

    def _drip(self, conn: socket.socket) -> None:
        with conn:
            conn.recv(65536)
            for byte in b"HTTP/1.1 200 OK\r\n" * 100:
                if self.closed.wait(1.5):
                    return
                try:
                    conn.sendall(bytes([byte]))
                except OSError:
                    self.hung_up += 1
                    return

    def close(self) -> None:
        self.closed.set()
        self.server.close()


def test_sigterm_during_a_post_that_never_ends_exits_in_time_and_loses_nothing(
    sql_url: URL, receiver: Receiver, start_worker: Start, tmp_path: Path
) -> None:
    """The bound a supervisor relies on: exit within webhook_timeout (2 s) + 5 s of SIGTERM
    even while a receiver drips its answer for ever -- the POST's total deadline ends it
    (not the shutdown bound), the attempt is logged as a timeout, and the next worker
    delivers it once the owner's endpoint answers."""
    gateway = gateway_on(SqlStorage(sql_url))
    merchant = Merchant(gateway)
    dripping = DrippingReceiver()
    try:
        merchant.webhook(dripping.url)
        merchant.invoices_paid_in_parts(1, parts=1)
        first = start_worker(sql_url, "first")
        wait_until(lambda: dripping.connections >= 1, what="a POST in flight")
        time.sleep(1.0)  # well inside the POST
        sent = time.monotonic()
        first.send_signal(signal.SIGTERM)
        assert first.wait(timeout=30) == 0, worker_log(tmp_path, "first")
        assert time.monotonic() - sent < 2.0 + 5.0, worker_log(tmp_path, "first")
        assert "still busy" not in worker_log(tmp_path, "first")  # the deadline ended it
        wait_until(lambda: dripping.hung_up >= 1, timeout=10, what="the worker to hang up")
    finally:
        dripping.close()
    assert settled(gateway, merchant.owner, 0)
    [delivery], _, _, _ = list_deliveries(gateway, merchant.owner)
    assert [a.error for a in delivery.log] == ["no answer within 2 s"]

    receiver.secret = merchant.webhook(receiver.url)  # the same owner's endpoint, now answering
    start_worker(sql_url, "second")
    wait_until(lambda: settled(gateway, merchant.owner, 1), timeout=60, what="redelivered")
    assert len(receiver.accepted_ids()) == 1
    gateway.close()
