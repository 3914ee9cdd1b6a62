"""``paycore serve --workers 2`` as real processes on a SQLite file: both frameworks answer
concurrent requests whose writes every worker sees, no worker inherits a database handle
from the master (each builds its gateway after the fork), and SIGTERM ends every process."""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from adapter_helpers import ETH_1, free_port

pytestmark = pytest.mark.slow  # gunicorn and its workers in subprocesses

OWNER = "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359"


@dataclass
class Served:
    proc: subprocess.Popen[bytes]
    base: str
    database: Path
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # gone meanwhile
            continue
        # pid (comm) state ppid ...: comm may hold spaces, so split after its ")".
        if int(stat.rpartition(")")[2].split()[1]) == pid:
            found.append(int(entry.name))
    return found


def _has_open(pid: int, path: Path) -> bool:
    fd_dir = Path(f"/proc/{pid}/fd")
    try:
        links = [os.readlink(fd_dir / fd) for fd in os.listdir(fd_dir)]
    except OSError:
        return False
    return str(path) in links


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.fixture(params=["flask", "litestar"])
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Served]:
    port = free_port()
    database = tmp_path / "paycore.sqlite3"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAYCORE_")}
    env.update(PAYCORE_PRICES=json.dumps({ETH_1: "2500"}), PAYCORE_AUTH_MODE="soft")
    command = [
        sys.executable,
        "-m",
        "paycore.runtime.cli",
        "serve",
        "--framework",
        request.param,
        "--workers",
        "2",
        "--port",
        str(port),
        "--database-url",
        f"sqlite:///{database}",
    ]
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
    served = Served(proc, f"http://127.0.0.1:{port}", database, log)
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise AssertionError(
                    f"paycore serve exited with {proc.returncode}:\n{served.output()}"
                )
            try:
                if httpx.get(served.base + "/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, served.output()
            time.sleep(0.1)
        yield served
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _invoice() -> dict[str, object]:
    return {
        "owner": OWNER,
        "value": "10",
        "description": "workers",
        "chainId": 1,
        "acceptedTokens": [ETH_1],
        "address": "0x" + secrets.token_hex(20),
    }


def test_two_workers_share_the_database_and_stop_on_sigterm(served: Served) -> None:
    master = served.proc.pid
    workers = _children(master)
    assert len(workers) == 2, served.output()

    def create_then_read(_: int) -> tuple[int, int]:
        with httpx.Client(base_url=served.base + "/paycore", timeout=30) as client:
            made = client.post("/invoice", json=_invoice())
            if made.status_code != 201:
                return made.status_code, 0
            # A new connection: any worker may answer, and each must see the commit.
            read = httpx.get(f"{served.base}/paycore/invoice/{made.json()['guid']}", timeout=30)
            return made.status_code, read.status_code

    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(create_then_read, range(24)))
    assert answers == [(201, 200)] * 24, served.output()

    # The workers opened the database themselves, after the fork; the master never did,
    # so no connection was built before the fork and inherited by both.
    assert not _has_open(master, served.database)
    assert any(_has_open(pid, served.database) for pid in workers)

    served.proc.send_signal(signal.SIGTERM)
    assert served.proc.wait(timeout=40) == 0, served.output()
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(pid) for pid in workers), "a worker outlived its master"
    output = served.output()
    # (The temporary directory's name looks like an API key to the redaction: not compared.)
    assert f"on {served.base}/paycore/ (2 workers, storage sqlite:///" in output
    assert "Traceback" not in output and "Error" not in output, output


def test_an_in_memory_database_is_refused_with_several_workers() -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "paycore.runtime.cli",
            "serve",
            "--workers",
            "2",
            "--database-url",
            "memory://",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "an in-memory database lives in one process" in result.stderr


@pytest.mark.parametrize("framework", ["flask", "litestar"])
def test_a_database_password_never_reaches_the_output(framework: str, tmp_path: Path) -> None:
    """The banner, and the workers' lines about a database they cannot reach, name the URL
    with its password masked (no server needed: nothing listens on the port)."""
    password = "Pg-" + secrets.token_hex(8)
    url = f"postgresql://paycore:{password}@127.0.0.1:{free_port()}/paycore"
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAYCORE_")}
    env["PAYCORE_DATABASE_URL"] = url
    log = tmp_path / "serve.log"
    command = [
        sys.executable,
        "-m",
        "paycore.runtime.cli",
        "serve",
        "--framework",
        framework,
        "--workers",
        "2",
        "--port",
        str(port),
    ]
    with open(log, "wb") as out:
        proc = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, log.read_text()
            try:
                if httpx.get(base + "/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        for _ in range(4):  # several requests, so more than one worker is likely to log
            answer = httpx.get(f"{base}/paycore/invoice/{'0' * 8}-0000-4000-8000-{'0' * 12}")
            assert answer.status_code == 503, answer.text
            assert password not in answer.text
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=40)
    output = log.read_text(errors="replace")
    assert code == 0, output
    assert password not in output
    assert "storage postgresql://paycore:***@127.0.0.1" in output  # the banner
    assert "storage unavailable" in output  # a worker's own line went through redaction
