"""Host signals in every deployment shape, on a SQLite file and PostgreSQL, with a handler
that counts its calls: the web process alone (a consumer thread), a separate worker process
(``paycore worker --signals``), and three workers at once, one killed with SIGKILL while a
handler runs. Each change is handled exactly once; the one call a SIGKILL interrupted is the
only one made again, by another worker, after its lease lapsed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from events_helpers import FAST_ENV, Merchant, fast_settings, gateway_on, wait_until
from sqlalchemy.engine import URL

from paycore import Gateway
from paycore_flask.signals import start_signal_thread
from paycore_storage import SqlStorage

HERE = Path(__file__).parent
QUEUE = "signal:shop.count"
LEASE = "4"  # seconds: a killed worker's handler is taken over within about this long

Start = Callable[[str], subprocess.Popen[bytes]]


def calls(path: str) -> list[tuple[str, int, int]]:
    """signal_counter's file as (start|end, event id, pid), whole lines only."""
    if not os.path.exists(path):
        return []
    with open(path) as lines:
        found = [line.split() for line in lines if line.endswith("\n")]
    return [(what, int(event), int(pid)) for what, event, pid in found]


def expected_events(gateway: Gateway, after: int) -> list[int]:
    with gateway.storage.transaction() as tx:
        return [e.id for e in tx.outbox_since(after, 10_000).events]


def queue_position(gateway: Gateway) -> int | None:
    with gateway.storage.transaction() as tx:
        read = tx.read_outbox(QUEUE, 1)
    return None if read is None else read.position


@pytest.fixture
def start_worker(sql_url: URL, tmp_path: Path) -> Iterator[Start]:
    """Starts ``paycore worker --signals signal_counter`` processes on ``sql_url`` that do
    nothing but call the handlers; kills any left at the end."""
    started: list[subprocess.Popen[bytes]] = []

    def start(name: str) -> subprocess.Popen[bytes]:
        env = {
            **os.environ,
            **FAST_ENV,
            "PAYCORE_DATABASE_URL": sql_url.render_as_string(hide_password=False),
            "PAYCORE_SIGNAL_LEASE": LEASE,
            "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
            "SIGNAL_COUNT_FILE": str(tmp_path / "calls.txt"),
            "SIGNAL_HANDLER_SECONDS": "0.2",
        }
        log = open(tmp_path / f"{name}.log", "wb")  # noqa: SIM115 - the child owns it
        command = [sys.executable, "-m", "paycore.runtime.worker", "--signals", "signal_counter"]
        command += ["--no-dispatch", "--no-sweep", "--no-watch", "--no-prices", "--no-prune"]
        process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)


def log_of(tmp_path: Path, name: str) -> str:
    return (tmp_path / f"{name}.log").read_text(errors="replace")


def test_web_process_only(sql_url: URL) -> None:
    """No worker: a consumer thread of the web process (``start_signal_thread``)."""
    gateway = gateway_on(SqlStorage(sql_url), fast_settings(str(sql_url)))
    merchant = Merchant(gateway)
    seen: list[int] = []
    gateway.on(name="shop.count")(lambda event: seen.append(event.id))
    halt = threading.Event()
    thread = start_signal_thread(gateway, halt)
    try:
        wait_until(
            lambda: queue_position(gateway) is not None, timeout=60, what="the queue to open"
        )
        start = queue_position(gateway)
        assert start is not None
        merchant.invoices_paid_in_parts(3, parts=3)
        expected = expected_events(gateway, start)
        wait_until(lambda: len(seen) >= len(expected), timeout=60, what="every event handled")
        time.sleep(0.3)  # a double call would land by now
    finally:
        halt.set()
        thread.join(timeout=10)
    assert len(expected) == 9
    assert seen == expected
    gateway.close()


@pytest.mark.slow  # worker processes, waited on
def test_a_separate_worker_calls_the_handlers_of_the_shops_own_gateway(
    sql_url: URL, start_worker: Start, tmp_path: Path
) -> None:
    """``paycore worker --signals signal_counter``: the module's handler is on a gateway the
    module built itself (``gateway.on``), not on ``paycore.on``; the worker serves it, and
    says so at start."""
    gateway = gateway_on(SqlStorage(sql_url), fast_settings(str(sql_url)))
    merchant = Merchant(gateway)
    worker = start_worker("worker")
    wait_until(lambda: queue_position(gateway) is not None, timeout=60, what="the queue to open")
    start = queue_position(gateway)
    assert start is not None
    merchant.invoices_paid_in_parts(3, parts=3)
    expected = expected_events(gateway, start)
    counts = str(tmp_path / "calls.txt")
    wait_until(
        lambda: len(calls(counts)) >= 2 * len(expected), timeout=60, what="every event handled"
    )
    time.sleep(0.5)
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=30) == 0
    ends = [event for what, event, _pid in calls(counts) if what == "end"]
    assert ends == expected
    assert "signal handlers: 1 served (shop.count)" in log_of(tmp_path, "worker")
    gateway.close()


@pytest.mark.slow  # worker processes, waited on
def test_a_web_thread_and_two_workers_share_one_handler(
    sql_url: URL, start_worker: Start, tmp_path: Path
) -> None:
    """The web process runs a consumer thread with the same handler (by name) as two worker
    processes: each change is handled once, by whichever holds the lease."""
    gateway = gateway_on(SqlStorage(sql_url), fast_settings(str(sql_url)))
    merchant = Merchant(gateway)
    counts = str(tmp_path / "calls.txt")

    def count(event: object) -> None:
        for what in ("start", "end"):
            line = f"{what} {event.id} {os.getpid()}\n".encode()  # type: ignore[attr-defined]
            fd = os.open(counts, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            os.write(fd, line)
            os.close(fd)
            time.sleep(0.05)

    gateway.on(name="shop.count")(count)
    halt = threading.Event()
    thread = start_signal_thread(gateway, halt)
    workers = [start_worker("a"), start_worker("b")]
    try:
        for name in ("a", "b"):
            wait_until(
                lambda name=name: "signal handlers: 1 served" in log_of(tmp_path, name),
                timeout=60,
                what=f"worker {name} to start",
            )
        wait_until(
            lambda: queue_position(gateway) is not None, timeout=60, what="the queue to open"
        )
        start = queue_position(gateway)
        assert start is not None
        merchant.invoices_paid_in_parts(5, parts=3)
        expected = expected_events(gateway, start)
        wait_until(
            lambda: sum(1 for c in calls(counts) if c[0] == "end") >= len(expected),
            timeout=60,
            what="every event handled",
        )
        time.sleep(0.5)
    finally:
        halt.set()
        thread.join(timeout=10)
        for worker in workers:
            worker.send_signal(signal.SIGTERM)
            assert worker.wait(timeout=30) == 0
    log = calls(counts)
    assert [event for what, event, _pid in log if what == "end"] == expected
    assert [event for what, event, _pid in log if what == "start"] == expected
    assert len(expected) == 15
    gateway.close()


@pytest.mark.slow  # worker processes, waited on
def test_three_workers_one_killed_mid_handler(
    sql_url: URL, start_worker: Start, tmp_path: Path
) -> None:
    gateway = gateway_on(SqlStorage(sql_url), fast_settings(str(sql_url)))
    merchant = Merchant(gateway)
    workers = {p.pid: p for p in (start_worker(f"w{n}") for n in range(3))}
    wait_until(lambda: queue_position(gateway) is not None, timeout=60, what="the queue to open")
    start = queue_position(gateway)
    assert start is not None
    counts = str(tmp_path / "calls.txt")
    merchant.invoices_paid_in_parts(4, parts=3)

    def mid_handler() -> tuple[int, int] | None:
        """(event, pid) of a call that has started and not ended, if any."""
        open_calls: dict[tuple[int, int], int] = Counter()
        for what, event, pid in calls(counts):
            open_calls[(event, pid)] += 1 if what == "start" else -1
        running = [key for key, n in open_calls.items() if n > 0]
        return running[0] if running else None

    wait_until(lambda: len(calls(counts)) >= 4, timeout=60, what="a few calls")
    wait_until(lambda: mid_handler() is not None, timeout=30, what="a call in progress")
    found = mid_handler()
    assert found is not None
    interrupted, victim = found
    workers[victim].send_signal(signal.SIGKILL)
    assert workers[victim].wait(timeout=30) == -signal.SIGKILL
    merchant.invoices_paid_in_parts(2, parts=3)  # more changes while two workers remain
    expected = expected_events(gateway, start)
    assert len(expected) == 18

    def ended() -> list[int]:
        return [event for what, event, _pid in calls(counts) if what == "end"]

    wait_until(lambda: len(ended()) >= len(expected), timeout=90, what="every event handled")
    time.sleep(0.5)
    for pid, process in workers.items():
        if pid != victim:
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=30) == 0, log_of(tmp_path, "w0")
    log = calls(counts)
    # The victim's last call is the one the SIGKILL cut short (in its handler, almost
    # always, as it was caught there; or in the position's move right after): the only
    # call that may be made again, once, by a surviving worker.
    cut_short = [event for what, event, pid in log if what == "start" and pid == victim][-1]
    started = Counter(event for what, event, _pid in log if what == "start")
    ends = ended()
    assert {event: n for event, n in started.items() if n != 1} in ({cut_short: 2}, {})
    assert {event: n for event, n in Counter(ends).items() if n != 1} in ({cut_short: 2}, {})
    # Every change completed, in order.
    assert [event for n, event in enumerate(ends) if event not in ends[:n]] == expected
    if ("end", cut_short, victim) not in log:  # killed inside the handler
        assert started[cut_short] == 2 and Counter(ends)[cut_short] == 1
        [(_what, _event, finisher)] = [c for c in log if c[:2] == ("end", cut_short)]
        assert finisher != victim and cut_short == interrupted
    gateway.close()


@pytest.mark.slow  # worker processes, waited on
def test_a_signals_module_that_registers_nothing_is_named_in_a_warning(
    sql_url: URL, tmp_path: Path
) -> None:
    (tmp_path / "empty_shop.py").write_text("def create_app():\n    return None\n")
    env = {
        **os.environ,
        "PAYCORE_DATABASE_URL": sql_url.render_as_string(hide_password=False),
        "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]),
    }
    command = [sys.executable, "-m", "paycore.runtime.worker", "--signals", "empty_shop"]
    command += ["--no-dispatch", "--no-sweep", "--no-watch", "--no-prices", "--no-prune"]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        out = b""
        assert process.stdout is not None
        while b"registered no handler" not in out and time.monotonic() < deadline:
            out += process.stdout.readline()
    finally:
        process.send_signal(signal.SIGTERM)
        rest, _ = process.communicate(timeout=30)
    text = (out + rest).decode()
    assert "signal handlers: 0 served (none)" in text
    [warning] = [line for line in text.splitlines() if "registered no handler" in line]
    assert "--signals empty_shop registered no handler" in warning


LITESTAR_SHOP = """
import os

from litestar import Litestar

from paycore import Settings
from paycore_litestar import PayCoreConfig, PayCorePlugin

plugin = PayCorePlugin(PayCoreConfig(settings=Settings(database_url=os.environ["SHOP_DB"])))
app = Litestar(plugins=[plugin])


@plugin.gateway.on(name="shop.count")
def count(event):
    for what in ("start", "end"):
        line = f"{what} {event.id} {os.getpid()}\\n".encode()
        fd = os.open(os.environ["SIGNAL_COUNT_FILE"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        os.write(fd, line)
        os.close(fd)
"""


@pytest.mark.slow  # a worker process, waited on
def test_litestar_paycore_worker_serves_the_apps_gateway_handlers(
    sql_url: URL, tmp_path: Path
) -> None:
    """``litestar --app shop:app paycore worker``: the app loads first, so a handler on
    the plugin's gateway is served with no ``--signals``."""
    (tmp_path / "litestar_shop.py").write_text(LITESTAR_SHOP)
    gateway = gateway_on(SqlStorage(sql_url), fast_settings(str(sql_url)))
    merchant = Merchant(gateway)
    counts = str(tmp_path / "calls.txt")
    env = {
        **os.environ,
        "SHOP_DB": sql_url.render_as_string(hide_password=False),
        "SIGNAL_COUNT_FILE": counts,
        "PAYCORE_WORKER_POLL_INTERVAL": "0.05",
        "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]),
    }
    command = [sys.executable, "-m", "litestar", "--app", "litestar_shop:app", "paycore"]
    command += ["worker", "--no-dispatch", "--no-sweep", "--no-watch", "--no-prices"]
    command += ["--no-prune"]
    with open(tmp_path / "litestar.log", "wb") as log:
        worker = subprocess.Popen(
            command, cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT
        )
    try:
        wait_until(
            lambda: queue_position(gateway) is not None, timeout=60, what="the queue to open"
        )
        start = queue_position(gateway)
        assert start is not None
        merchant.invoices_paid_in_parts(2, parts=2)
        expected = expected_events(gateway, start)
        wait_until(
            lambda: len(calls(counts)) >= 2 * len(expected), timeout=60, what="every event handled"
        )
        time.sleep(0.5)
    finally:
        worker.send_signal(signal.SIGTERM)
        code = worker.wait(timeout=30)
    text = log_of(tmp_path, "litestar")
    assert code == 0, text
    assert "signal handlers: 1 served (shop.count)" in text
    assert [event for what, event, _pid in calls(counts) if what == "end"] == expected
    assert len(expected) == 4
    gateway.close()
