"""Fair webhook delivery: one merchant's commit-to-delivery p99 while another merchant's
receiver drips its answer, against the same p99 with no dripper (the quiet ceiling's base).

Two merchants share one dispatcher (``run_worker`` on a thread, as ``paycore worker`` runs
it) on real storage: a SQLite file and PostgreSQL (a temporary schema, dropped afterwards).
The honest merchant's receiver answers 200 at once; each of its ``--events`` invoices is
paid at ``--rate`` changes per second and timed from the commit (``record_deposit``
returned) to the arrival at its receiver. Three modes, interleaved rep by rep:

- ``quiet``: the honest merchant alone;
- ``dripping``: the hostile merchant has ``--hostile`` events due first (more than the
  pool's slots) and a receiver that answers ``HTTP/1.1 200 OK`` one byte every ``--drip``
  seconds and never finishes; with a retry schedule of 0.1 s it is back for more as soon as
  each attempt hits its deadline (``webhook_timeout`` = ``--deadline``), the worst case;
- ``uncapped``: the same, with the per-owner and per-URL caps set to the pool size, which
  shows what the caps buy (the total deadline alone still bounds each wait).

Each rep uses fresh owners. Output: the p50/p99 per mode and rep, the medians of the p99s
over ``--reps`` (>= 3), and ``ratio`` = dripping p99 / quiet p99 against the ceiling
``--ceiling`` (2.0): the target is that a dripping receiver costs another merchant at most
twice its quiet p99. Everything stays on 127.0.0.1.

    python bench/webhook_fairness_bench.py [--events N] [--rate R] [--reps 3]
        [--postgres URL] [--only sqlite|postgresql]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import secrets
import select
import socket
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from paycore import Deposit, Gateway, Settings
from paycore.runtime.worker import run_worker
from paycore.webhooks.config import set_webhook
from paycore_storage import SqlStorage

CHAIN = 31337
TOKEN = "0x5FbDB2315678afecb367f032d93F642f64180aa3"
USDC = f"{CHAIN}:{TOKEN}"
PAYER = "0x" + "22" * 20
DEFAULT_POSTGRES = "postgresql://postgres@127.0.0.1:5432/test"
MODES = ("quiet", "dripping", "uncapped")


def _log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


class Receiver:
    """The honest merchant's endpoint: 200 at once, arrival time (monotonic) per guid."""

    def __init__(self) -> None:
        self.arrivals: dict[str, float] = {}
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                at = time.monotonic()
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()
                guid = json.loads(body)["guid"]
                with receiver.lock:
                    receiver.arrivals.setdefault(guid, at)

            def log_message(self, *_args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def wait_for(self, guids: set[str], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if guids <= self.arrivals.keys():
                    return
            time.sleep(0.01)
        raise RuntimeError(f"not every event arrived within {timeout} s")

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Dripper:
    """The hostile merchant's endpoint: ``HTTP/1.1 200 OK`` one byte every ``every`` s, at
    most ``most`` bytes, until the client hangs up. Counts the connections it was sent."""

    def __init__(self, every: float, most: int = 120) -> None:
        self.every = every
        self.most = most
        self.connections = 0
        self.closed = threading.Event()
        self.server = socket.create_server(("127.0.0.1", 0))
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
        answer = (b"HTTP/1.1 200 OK\r\n" * self.most)[: self.most]
        try:
            with conn:
                for byte in answer:
                    readable, _, _ = select.select([conn], [], [], self.every)
                    if (readable and not conn.recv(65536)) or self.closed.is_set():
                        return
                    conn.sendall(bytes([byte]))
        except OSError:
            return

    def close(self) -> None:
        self.closed.set()
        self.server.close()


class Merchant:
    """An owner that makes 10 USD invoices and pays them in full (one event each)."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.owner = "0x" + secrets.token_hex(20)
        self.prefix = secrets.token_hex(4)
        self.made = 0

    def invoices(self, count: int) -> list[str]:
        addresses = []
        for _ in range(count):
            self.made += 1
            invoice = self.gateway.create_invoice(
                self.owner,
                {
                    "value": "10",
                    "chainId": CHAIN,
                    "description": f"bench {self.made}",
                    "acceptedTokens": [USDC],
                    "address": f"0x{self.prefix}{self.made:032x}",
                },
            )
            addresses.append(invoice.address)
        return addresses

    def pay(self, address: str) -> str:
        self.made += 1
        deposit = Deposit(
            CHAIN,
            f"0x{self.prefix}{self.made:056x}",
            0,
            TOKEN,
            PAYER,
            address,
            Decimal(10),
            self.gateway.now(),
        )
        [changed] = self.gateway.record_deposit(deposit)
        return changed.guid


@contextmanager
def sqlite_database() -> Iterator[str]:
    with tempfile.TemporaryDirectory() as folder:
        yield f"sqlite:///{Path(folder) / 'fairness.sqlite3'}"


@contextmanager
def postgres_database(url: str) -> Iterator[str]:
    """A schema of its own on ``url``, dropped afterwards."""
    from sqlalchemy import create_engine, text

    from paycore_storage.engine import database_url

    parsed = database_url(url)
    schema = f"paycore_bench_{uuid.uuid4().hex[:12]}"
    admin = create_engine(parsed)
    with admin.begin() as connection:
        connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    try:
        scoped = parsed.update_query_dict({"options": f"-csearch_path={schema}"})
        yield scoped.render_as_string(hide_password=False)
    finally:
        with admin.begin() as connection:
            connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


def _percentile(samples: list[float], q: int) -> float:
    return statistics.quantiles(samples, n=100, method="inclusive")[q - 1]


def measure(url: str, mode: str, args: argparse.Namespace) -> dict[str, Any]:
    """One rep of one mode on a fresh gateway over the fresh database at ``url``: the honest
    merchant's commit-to-arrival latencies, in ms."""
    pool = args.concurrency
    caps: dict[str, int] = {}
    if mode == "uncapped":
        caps = {"webhook_owner_concurrency": pool, "webhook_url_concurrency": pool}
    settings = Settings(
        database_url=url,
        prices={USDC: "1"},
        webhook_allow_private=True,
        webhook_concurrency=pool,
        webhook_timeout=args.deadline,
        webhook_lease=args.deadline + 10,
        webhook_retry_schedule=(0.1,),
        webhook_retry_every=0.1,
        worker_poll_interval=0.05,
        **caps,
    )
    storage = SqlStorage(url)
    storage.migrate()
    gateway = Gateway(settings, storage=storage, entry_points=False)
    receiver = Receiver()
    dripper = Dripper(args.drip) if mode != "quiet" else None
    stop = threading.Event()
    loops = {"sweep": False, "watch": False, "prices": False, "prune": False, "signals": False}
    worker = threading.Thread(
        target=run_worker, args=(gateway,), kwargs={"stop_event": stop, **loops}
    )
    try:
        honest = Merchant(gateway)
        set_webhook(gateway.storage, honest.owner, receiver.url, allow_private=True)
        addresses = honest.invoices(args.events)
        if dripper is not None:
            hostile = Merchant(gateway)
            set_webhook(gateway.storage, hostile.owner, dripper.url, allow_private=True)
            for address in hostile.invoices(args.hostile):
                hostile.pay(address)
        worker.start()
        if dripper is not None:  # the dripper holds its POSTs before the honest events start
            until = time.monotonic() + 10
            while dripper.connections < 1 and time.monotonic() < until:
                time.sleep(0.01)
            time.sleep(0.2)
        committed: dict[str, float] = {}
        started = time.monotonic()
        for n, address in enumerate(addresses):
            time.sleep(max(0.0, started + n / args.rate - time.monotonic()))
            guid = honest.pay(address)
            committed[guid] = time.monotonic()
        receiver.wait_for(set(committed), timeout=60 + 2 * args.deadline)
        latencies = [(receiver.arrivals[g] - t) * 1000 for g, t in committed.items()]
        return {
            "p50": round(_percentile(latencies, 50), 2),
            "p99": round(_percentile(latencies, 99), 2),
            "max": round(max(latencies), 2),
            "dripper_connections": None if dripper is None else dripper.connections,
        }
    finally:
        stop.set()
        if dripper is not None:
            dripper.close()
        receiver.close()
        if worker.is_alive():
            worker.join(timeout=args.deadline + 10)
        gateway.close()


def fresh_database(name: str, args: argparse.Namespace) -> AbstractContextManager[str]:
    return sqlite_database() if name == "sqlite" else postgres_database(args.postgres)


def bench_backend(name: str, args: argparse.Namespace) -> dict[str, Any]:
    """Every mode once per rep, interleaved, each on a database of its own (no delivery of
    an earlier measurement is left to retry in a later one)."""
    runs: dict[str, list[dict[str, Any]]] = {mode: [] for mode in MODES}
    for rep in range(args.reps):
        for mode in MODES:
            with fresh_database(name, args) as url:
                figures = measure(url, mode, args)
            _log(f"{name} rep {rep + 1} {mode}: {figures}")
            runs[mode].append(figures)
    medians = {mode: statistics.median(r["p99"] for r in runs[mode]) for mode in MODES}
    ratio = medians["dripping"] / medians["quiet"]
    return {
        "runs": runs,
        "median_p99_ms": medians,
        "ratio": round(ratio, 2),
        "ceiling": args.ceiling,
        "within": ratio <= args.ceiling,
        "uncapped_ratio": round(medians["uncapped"] / medians["quiet"], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200, help="honest changes per rep")
    parser.add_argument("--rate", type=float, default=50.0, help="honest changes per second")
    parser.add_argument("--hostile", type=int, default=16, help="hostile events due first")
    parser.add_argument("--drip", type=float, default=1.0, help="seconds between dripped bytes")
    parser.add_argument("--deadline", type=float, default=3.0, help="webhook_timeout, seconds")
    parser.add_argument("--concurrency", type=int, default=Settings().webhook_concurrency)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--ceiling", type=float, default=2.0, help="dripping p99 / quiet p99")
    parser.add_argument(
        "--postgres", default=os.environ.get("PAYCORE_BENCH_POSTGRES_URL", DEFAULT_POSTGRES)
    )
    parser.add_argument("--only", choices=("sqlite", "postgresql"), action="append")
    args = parser.parse_args()
    # Each dripper attempt logs a warning; on stderr they would bury the progress lines.
    logging.getLogger("paycore.webhooks").setLevel(logging.ERROR)
    if args.reps < 3:
        parser.error("--reps must be at least 3 (medians of 3 or more)")
    defaults = Settings()
    results: dict[str, Any] = {
        "bench": "webhook_fairness",
        "events": args.events,
        "rate": args.rate,
        "hostile": args.hostile,
        "drip_s": args.drip,
        "deadline_s": args.deadline,
        "concurrency": args.concurrency,
        "owner_cap": defaults.webhook_owner_concurrency,
        "url_cap": defaults.webhook_url_concurrency,
        "reps": args.reps,
    }
    backends = args.only or ["sqlite", "postgresql"]
    for name in backends:
        results[name] = bench_backend(name, args)
    results["python"] = platform.python_version()
    for name in backends:
        found = results[name]
        _log(
            f"{name}: other merchant's p99 quiet {found['median_p99_ms']['quiet']} ms, "
            f"dripping {found['median_p99_ms']['dripping']} ms: ratio {found['ratio']} "
            f"(ceiling {args.ceiling}); uncapped {found['median_p99_ms']['uncapped']} ms "
            f"(ratio {found['uncapped_ratio']})"
        )
    print(json.dumps(results))


if __name__ == "__main__":
    main()
