"""Latency of GET /ws pushes: from the commit of an invoice change to the frame received.

Each case connects one real WebSocket client (``websockets``' sync client), registers it,
then makes invoice changes one at a time (a confirmed deposit through
``Gateway.record_deposit``), each time waiting for its push before the next. The clock
starts in a notifier placed before the Hub, i.e. after the change's transaction committed,
and stops when the client has the frame decoded. Client and committer live in this
process, so one ``perf_counter`` times both ends even when the server is another process.

Cases:

- ``in-process``: the adapter's real server (werkzeug threaded / uvicorn) in a thread of
  this process, around the gateway that commits; the push goes Hub -> socket directly.
- ``redis``: the web worker is its own process (``paycore serve``) on a shared SQLite file;
  this process commits (and its Hub publishes to Redis). Since the outbox feed, the web
  worker pushes from its outbox read, woken by SQLite's ``data_version``, not from Redis:
  this case now measures that path (``bench/ws_outbox_bench.py`` measures it directly).
- ``ceiling``: a bare ``websockets`` server thread pushing a frame of the same size from a
  queue, no paycore: what the socket and the client cost by themselves.

Output: one JSON object on one line of stdout (milliseconds); progress on stderr.

    python bench/ws_bench.py [--events 1000] [--redis-url redis://127.0.0.1:6379/0]
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import logging
import os
import platform
import queue
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from decimal import Decimal
from importlib.metadata import version
from typing import Any

import httpx
from eth_account import Account
from eth_account.messages import encode_defunct
from eth_account.signers.local import LocalAccount
from websockets.sync.client import ClientConnection, connect
from websockets.sync.server import ServerConnection, serve

from paycore import NATIVE, Deposit, Gateway, Settings
from paycore.domain.records import Json
from paycore.notify import BaseNotifier

PREFIX = "/paycore"
CHAIN = 31337
ETH = f"{CHAIN}:{NATIVE}"
PAYER = "0x" + "22" * 20
WARMUP = 50


def say(text: str) -> None:
    print(f"ws_bench: {text}", file=sys.stderr, flush=True)


def account(label: str) -> LocalAccount:
    acct: LocalAccount = Account.from_key(hashlib.sha256(label.encode()).digest())
    return acct


def sign(acct: LocalAccount, text: str) -> str:
    return "0x" + bytes(acct.sign_message(encode_defunct(text=text)).signature).hex()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_answers(url: str, process: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise SystemExit(f"ws_bench: server exited with {process.returncode}")
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(url, timeout=1).status_code == 200:
                return
        time.sleep(0.05)
    raise SystemExit(f"ws_bench: {url} did not answer within 30 s")


class Stamp(BaseNotifier):
    """A notifier ahead of the Hub: the moment each change is handed to notifiers, which
    is right after its transaction committed."""

    name = "ws-bench-stamp"

    def __init__(self) -> None:
        self.at: dict[str, float] = {}

    def invoice_changed(self, owner: str, payload: Json) -> None:
        self.at[str(payload["guid"])] = time.perf_counter()  # type: ignore[index]


def summary(samples: list[float]) -> dict[str, float | int]:
    ordered = sorted(samples)
    ms = [s * 1000 for s in ordered]

    def pct(p: float) -> float:
        return round(ms[min(len(ms) - 1, int(p * len(ms)))], 3)

    return {
        "n": len(ms),
        "p50": pct(0.50),
        "p90": pct(0.90),
        "p99": pct(0.99),
        "max": round(ms[-1], 3),
        "mean": round(statistics.fmean(ms), 3),
    }


# -- one measured client -------------------------------------------------------------------


def register(conn: ClientConnection, key: LocalAccount) -> None:
    challenge = json.loads(conn.recv(timeout=10))["challenge"]
    nonce = time.time_ns() // 1_000_000  # Date.now() milliseconds; each frame signs its challenge
    digest = hashlib.sha256(challenge.encode("ascii")).hexdigest()
    frame = {"type": "register", "nonce": nonce, "signature": sign(key, f"sess:{nonce}:{digest}")}
    conn.send(json.dumps(frame))
    answer = json.loads(conn.recv(timeout=10))
    if answer.get("type") != "registered":
        raise SystemExit(f"ws_bench: register refused: {answer}")


def measure(
    gateway: Gateway, ws_url: str, key: LocalAccount, owner: str, events: int
) -> list[float]:
    """Commit ``WARMUP + events`` deposits one at a time; the latency of each push."""
    stamp = Stamp()
    gateway.add_notifier(stamp, first=True)
    tag = secrets.token_hex(4)
    total = WARMUP + events
    invoices = [
        gateway.create_invoice(
            owner,
            {
                "description": f"bench {n}",
                "value": "1000",
                "chainId": CHAIN,
                "acceptedTokens": [ETH],
                "address": f"0x{tag}{n:032x}",
            },
        )
        for n in range(total)
    ]
    latencies: list[float] = []
    try:
        with connect(ws_url, open_timeout=10, close_timeout=2) as conn:
            register(conn, key)
            for n, invoice in enumerate(invoices):
                deposit = Deposit(
                    CHAIN,
                    f"0x{tag}{n:056x}",
                    -1,
                    NATIVE,
                    PAYER,
                    invoice.address,
                    Decimal("0.001"),
                    gateway.now(),
                )
                gateway.record_deposit(deposit)
                frame = json.loads(conn.recv(timeout=10))
                arrived = time.perf_counter()
                [event] = frame["events"]
                if event["guid"] != invoice.guid:
                    raise SystemExit("ws_bench: a push arrived out of order")
                if n >= WARMUP:
                    latencies.append(arrived - stamp.at[invoice.guid])
    finally:
        gateway.remove_notifier(stamp)
    return latencies


# -- cases ---------------------------------------------------------------------------------


@contextlib.contextmanager
def served_here(framework: str, gateway: Gateway) -> Iterator[str]:
    """The adapter's host app under its real server, in a thread of this process."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    if framework == "flask":
        from werkzeug.serving import make_server

        from paycore_flask import create_app as flask_app

        server = make_server("127.0.0.1", port, flask_app(gateway=gateway), threaded=True)
        thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        thread.start()
        try:
            wait_answers(base + "/health")
            yield base
        finally:
            server.shutdown()
        return
    import uvicorn

    from paycore_litestar import create_app as litestar_app

    uv = uvicorn.Server(
        uvicorn.Config(litestar_app(gateway=gateway), port=port, log_level="warning")
    )
    thread = threading.Thread(target=uv.run, daemon=True)
    thread.start()
    try:
        wait_answers(base + "/health")
        yield base
    finally:
        uv.should_exit = True
        thread.join(timeout=10)


def register_key(base: str, owner: LocalAccount, key: LocalAccount) -> None:
    pub = "0x04" + key._key_obj.public_key.to_bytes().hex()
    body = {"ownerAddress": owner.address, "publicKey": pub, "signature": sign(owner, pub)}
    answer = httpx.post(base + PREFIX + "/auth/register-pubkey", json=body, timeout=10)
    if answer.status_code != 200:
        raise SystemExit(f"ws_bench: register-pubkey answered {answer.status_code}")


def ws_of(base: str) -> str:
    return base.replace("http://", "ws://", 1) + PREFIX + "/ws"


def in_process(framework: str, events: int) -> list[float]:
    owner, key = account("ws bench owner"), account(f"ws bench key {framework}")
    settings = Settings(database_url="memory://", prices={ETH: "2000"})
    gateway = Gateway(settings, entry_points=False)
    try:
        with served_here(framework, gateway) as base:
            register_key(base, owner, key)
            return measure(gateway, ws_of(base), key, owner.address, events)
    finally:
        gateway.close()


def via_redis(framework: str, events: int, redis_url: str, workdir: str) -> list[float]:
    owner, key = account("ws bench owner"), account(f"ws bench redis key {framework}")
    database = f"sqlite:///{os.path.join(workdir, f'{framework}.sqlite3')}"
    channel = f"paycore:bench:{secrets.token_hex(6)}"
    env = {
        **os.environ,
        "PAYCORE_REDIS_URL": redis_url,
        "PAYCORE_REDIS_CHANNEL": channel,
        "PAYCORE_PRICES": json.dumps({ETH: "2000"}),
    }
    subprocess.run(
        [sys.executable, "-m", "paycore.runtime.cli", "migrate", "--database-url", database],
        check=True,
        capture_output=True,
    )
    port = free_port()
    command = [sys.executable, "-m", "paycore.runtime.cli", "serve", "--framework", framework]
    command += ["--port", str(port), "--database-url", database]
    worker = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    settings = Settings(
        database_url=database, prices={ETH: "2000"}, redis_url=redis_url, redis_channel=channel
    )
    gateway = Gateway(settings)
    try:
        wait_answers(base + "/health", worker)
        register_key(base, owner, key)
        return measure(gateway, ws_of(base), key, owner.address, events)
    finally:
        gateway.close()
        worker.terminate()
        worker.wait(timeout=15)


def ceiling(events: int, frame_size: int) -> list[float]:
    """A bare websockets server pushing frames of paycore's size from a queue."""
    outbox: queue.Queue[str] = queue.Queue()
    frame = json.dumps({"pad": "x" * max(0, frame_size - 11)})

    def handler(conn: ServerConnection) -> None:
        while True:
            conn.send(outbox.get())

    port = free_port()
    server = serve(handler, "127.0.0.1", port)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    latencies: list[float] = []
    with connect(f"ws://127.0.0.1:{port}", open_timeout=10) as conn:
        for n in range(WARMUP + events):
            start = time.perf_counter()
            outbox.put(frame)
            conn.recv(timeout=10)
            if n >= WARMUP:
                latencies.append(time.perf_counter() - start)
    server.shutdown()
    return latencies


def push_size() -> int:
    """Bytes of one push frame like the measured ones, for the ceiling's frames."""
    gateway = Gateway(Settings(database_url="memory://", prices={ETH: "2000"}), entry_points=False)
    invoice = gateway.create_invoice(
        account("ws bench owner").address,
        {
            "description": "bench 0",
            "value": "1000",
            "chainId": CHAIN,
            "acceptedTokens": [ETH],
            "address": "0x" + "ab" * 20,
        },
    )
    [changed] = gateway.record_deposit(
        Deposit(CHAIN, "0x" + "11" * 32, -1, NATIVE, PAYER, invoice.address, Decimal("0.001"), 1)
    )
    push = {"ownerAddress": changed.owner, "events": [gateway.invoice_wire(changed)]}
    gateway.close()
    return len(json.dumps(push))


def redis_reachable(url: str) -> str | None:
    import redis

    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=2)
        client.ping()
        client.close()
    except redis.RedisError as exc:
        return str(exc)
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1000, help="measured pushes per case")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--framework", action="append", choices=["flask", "litestar"])
    args = parser.parse_args()
    for noisy in ("httpx", "alembic", "werkzeug"):  # stdout is the report; stderr only progress
        logging.getLogger(noisy).setLevel(logging.WARNING)
    frameworks = args.framework or ["flask", "litestar"]
    size = push_size()
    report: dict[str, Any] = {
        "bench": "ws",
        "unit": "ms",
        "measured": "commit of an invoice change -> its push frame received by the client",
        "events_per_case": args.events,
        "push_frame_bytes": size,
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "websockets": version("websockets"),
            "uvicorn": version("uvicorn"),
            "werkzeug": version("werkzeug"),
        },
        "cases": {},
    }
    cases: dict[str, Any] = report["cases"]
    say(f"ceiling: bare websockets, {args.events} pushes of {size} bytes")
    cases["ceiling/bare-websockets"] = summary(ceiling(args.events, size))
    for framework in frameworks:
        say(f"{framework}: in-process, {args.events} events")
        cases[f"{framework}/in-process"] = summary(in_process(framework, args.events))
    down = redis_reachable(args.redis_url)
    with tempfile.TemporaryDirectory(prefix="ws_bench") as workdir:
        for framework in frameworks:
            if down is not None:
                cases[f"{framework}/redis"] = {"skipped": f"Redis unreachable: {down}"}
                continue
            say(f"{framework}: via Redis to a worker process, {args.events} events")
            cases[f"{framework}/redis"] = summary(
                via_redis(framework, args.events, args.redis_url, workdir)
            )
    print(json.dumps(report))


if __name__ == "__main__":
    main()
