"""A database outage under load: both adapters answer 503 with ``Retry-After`` (never 500),
the logs get a handful of lines instead of a traceback per request, and once the database
is back the servers answer again and the worker picks up where it stopped.

Everything is real: ``paycore serve`` under werkzeug (Flask) and uvicorn (Litestar),
``paycore worker``, and a private PostgreSQL server stopped with ``pg_ctl stop -m
immediate`` (a crash, as the connections see it) and started again.
"""

from __future__ import annotations

import json
import os
import secrets
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from ops_helpers import PrivatePostgres, Process, Receiver, serve, wait_until

from paycore import Gateway, Settings
from paycore.webhooks.config import set_webhook
from paycore_storage import SqlStorage

pytestmark = pytest.mark.postgres

CHAIN = 31337
ETH = f"{CHAIN}:0x0000000000000000000000000000000000000000"
OWNER = "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359"
RETRY_AFTER = 3
#: The outage lasts this long (seconds), under a steady stream of requests.
OUTAGE = 6.0
LOG_INTERVAL = 10.0


def _env(url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAYCORE_")}
    env.update(
        {
            "PAYCORE_DATABASE_URL": url,
            "PAYCORE_AUTH_MODE": "soft",  # a claimed owner may create invoices: write load
            "PAYCORE_PRICES": json.dumps({ETH: "2000"}),
            "PAYCORE_WEBHOOK_ALLOW_PRIVATE": "1",
            "PAYCORE_WEBHOOK_RETRY_SCHEDULE": "0.2,0.5",
            "PAYCORE_WEBHOOK_RETRY_EVERY": "1",
            "PAYCORE_WORKER_POLL_INTERVAL": "0.1",
            "PAYCORE_WORKER_SWEEP_INTERVAL": "0.2",
            "PAYCORE_WORKER_BACKOFF_MAX": "1",
            "PAYCORE_PRICE_REFRESH_INTERVAL": "0.5",
            "PAYCORE_STORAGE_RETRY_AFTER": str(RETRY_AFTER),
            "PAYCORE_OUTAGE_LOG_INTERVAL": str(LOG_INTERVAL),
        }
    )
    return env


def _invoice(deadline_secs: int = 3600) -> dict[str, Any]:
    return {
        "owner": OWNER,
        "value": "10",
        "description": "outage test",
        "chainId": CHAIN,
        "acceptedTokens": [ETH],
        "address": "0x" + secrets.token_hex(20),
        "deadlineSecs": deadline_secs,
    }


class Load:
    """Requests to every base URL from a few threads until stopped; every answer kept."""

    def __init__(self, bases: dict[str, str], guid: str) -> None:
        self.bases = bases
        self.guid = guid
        self.answers: list[tuple[str, int, str | None]] = []  # framework, status, retry-after
        self.lock = threading.Lock()
        self.halt = threading.Event()
        self.threads = [threading.Thread(target=self._run, args=(i,)) for i in range(3)]

    def _run(self, n: int) -> None:
        with httpx.Client(timeout=15) as client:
            i = n
            while not self.halt.is_set():
                for framework, base in self.bases.items():
                    i += 1
                    if i % 3 == 0:
                        answer = client.post(base + "/invoice", json=_invoice())
                    elif i % 3 == 1:
                        answer = client.get(f"{base}/invoice/{self.guid}")
                    else:
                        answer = client.get(base + "/invoices", params={"owner": OWNER})
                    with self.lock:
                        self.answers.append(
                            (framework, answer.status_code, answer.headers.get("retry-after"))
                        )
                time.sleep(0.01)

    def __enter__(self) -> Load:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.halt.set()
        for thread in self.threads:
            thread.join(timeout=60)


@pytest.fixture
def database(private_postgres: PrivatePostgres) -> str:
    url = private_postgres.create_database("outage_" + secrets.token_hex(4))
    store = SqlStorage(url)
    store.migrate()  # once, before several processes would race to
    store.close()
    return url


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver()
    yield found
    found.close()


def _storage_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if "storage unavailable" in line]


def test_an_outage_answers_503_logs_little_and_everything_resumes(
    private_postgres: PrivatePostgres, database: str, receiver: Receiver, tmp_path: Path
) -> None:
    seed = Gateway(Settings(database_url=database, webhook_allow_private=True))
    set_webhook(seed.storage, OWNER, receiver.url, allow_private=True)
    seed.close()
    env = _env(database)
    flask, flask_base = serve("flask", env, tmp_path / "flask.log")
    litestar, litestar_base = serve("litestar", env, tmp_path / "litestar.log")
    worker = Process(["worker", "--no-watch"], env, tmp_path / "worker.log")
    processes = {"flask": flask, "litestar": litestar, "worker": worker}
    bases = {"flask": flask_base, "litestar": litestar_base}
    try:
        wait_until(lambda: "worker started" in worker.output(), what="the worker")
        with httpx.Client(timeout=15) as client:
            created = {
                name: client.post(base + "/invoice", json=_invoice())
                for name, base in bases.items()
            }
            assert {name: a.status_code for name, a in created.items()} == {
                "flask": 201,
                "litestar": 201,
            }, {name: a.text for name, a in created.items()}
            guid = created["flask"].json()["guid"]
            # Due in 3 s, read by nobody: only the worker's sweeper can expire it, and it
            # falls due while the database is down.
            swept = client.post(flask_base + "/invoice", json=_invoice(deadline_secs=3))
            assert swept.status_code == 201, swept.text
            swept_guid = swept.json()["guid"]

        private_postgres.stop("immediate")
        stopped_at = time.time()
        with Load(bases, guid) as load:
            time.sleep(OUTAGE)
        during = list(load.answers)

        private_postgres.start()
        restarted_at = time.time()

        def answering() -> bool:
            with httpx.Client(timeout=15) as client:
                return all(
                    client.get(f"{base}/invoice/{guid}").status_code == 200
                    for base in bases.values()
                )

        wait_until(answering, timeout=30, what="both servers to answer after the restart")
        with Load(bases, guid) as load:
            time.sleep(1.0)
        after = list(load.answers)

        def expired() -> list[dict[str, Any]]:
            return [
                b
                for b in receiver.received()
                if b["guid"] == swept_guid and b["status"] == "expired"
            ]

        wait_until(lambda: bool(expired()), timeout=30, what="the swept invoice's webhook")
        resumed_at = expired()[0]["_at"]
        wait_until(lambda: "storage is back" in worker.output(), what="the worker's recovery line")
    finally:
        codes = {name: p.stop() for name, p in processes.items()}
        outputs = {name: p.output() for name, p in processes.items()}
        if not private_postgres.running:
            private_postgres.start()  # the next test expects it up

    # -- during the outage: 503 + Retry-After, never 500 -----------------------------------
    statuses = Counter((framework, status) for framework, status, _ in during)
    for framework in bases:
        assert statuses[(framework, 503)] >= 20, statuses
    assert {status for _, status, _ in during} <= {503}, statuses
    assert all(retry == str(RETRY_AFTER) for _, _, retry in during), during[:5]
    assert resumed_at > restarted_at > stopped_at

    # -- after it: answers again, no 5xx ---------------------------------------------------
    assert after and {status for _, status, _ in after} <= {200, 201}, Counter(after)

    # -- the logs: a few lines, no tracebacks --------------------------------------------
    for name, output in outputs.items():
        assert "Traceback" not in output, f"{name}:\n{output}"
    for framework in bases:
        lines = _storage_lines(outputs[framework])
        failed = statuses[(framework, 503)]
        # One line per kind of driver error per 10 s interval; the outage spans at most
        # two intervals and meets at most two kinds (refused, dropped mid-query).
        assert 1 <= len(lines) <= 4, (failed, lines)
        assert all("answering 503" in line for line in lines)
        assert len(outputs[framework].splitlines()) <= 10, outputs[framework]
    worker_lines = _storage_lines(outputs["worker"])
    # Three loops (dispatcher, sweeper, refresher), each at most a line per kind and interval.
    assert 3 <= len(worker_lines) <= 12, worker_lines
    for loop in ("webhook dispatcher", "expiry sweep", "price refresher"):
        assert any(f"{loop}: storage unavailable" in line for line in worker_lines), worker_lines
    assert codes["worker"] == 0, outputs["worker"]
