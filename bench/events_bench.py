"""Event delivery: how long from an invoice change's commit until a receiver has it, and how
many deliveries per second one dispatcher sustains, against the ceiling of bare POSTs.

Each channel is one section (``SECTIONS``) that gets the same prepared gateway and returns
its own JSON object: ``webhook`` here, ``websocket`` from bench/ws_bench.py. Output: one
JSON object on stdout; progress on stderr.

Webhook section, on real storage (a temporary SQLite file by default, or ``--database-url``;
a PostgreSQL URL gets a temporary schema, dropped afterwards) with a receiver in its own
process on 127.0.0.1 that answers 200 at once and reports arrival times:

- latency: a dispatcher embedded in this process (``run_worker`` on a thread, woken by the
  gateway's notifier); ``--events`` invoices are paid at ``--rate`` changes per second, each
  change timed from the moment ``record_deposit`` returned (the commit is just before) to
  the arrival at the receiver, by the wall clock both processes share. p50/p90/p99/max in
  ms. The rate is an offered load below what one dispatcher sustains, so the figure is the
  path's latency rather than a queue's length (an unpaced producer on SQLite starves the
  dispatcher of the write lock, and latency then only measures the backlog).
- throughput: ``--events`` more changes are committed with no dispatcher running, then one
  dispatcher is started and timed until the receiver has them all: deliveries per second.
- ceiling: the same number of signed POSTs through the same ``delivery.post`` with the same
  concurrency, without storage; ``ratio`` = throughput / ceiling.

    python bench/events_bench.py [--events N] [--rate R] [--database-url URL] [--concurrency C]
"""

from __future__ import annotations

import argparse
import json
import platform
import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from paycore import Deposit, Gateway, Settings
from paycore.runtime.worker import run_worker
from paycore.webhooks.config import new_secret, set_webhook
from paycore.webhooks.delivery import post, signed_headers
from paycore.webhooks.dispatcher import Dispatcher

CHAIN = 31337
TOKEN = "0x5FbDB2315678afecb367f032d93F642f64180aa3"
USDC = f"{CHAIN}:{TOKEN}"
OWNER = "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359"
PAYER = "0x" + "22" * 20


def _log(text: str) -> None:
    print(f"events_bench: {text}", file=sys.stderr, flush=True)


# -- the receiver, in its own process so that it does not share this one's GIL ----------------


def serve_receiver() -> None:
    """``--receiver`` mode: print ``PORT n``, then ``<webhook-id> <guid> <unix time>`` per
    request, and answer 200 right away."""
    out = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            arrived = time.time()
            guid = json.loads(body)["guid"]
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()
            with out:
                print(self.headers["webhook-id"], guid, repr(arrived), flush=True)

        def log_message(self, *_args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.request_queue_size = 256
    print("PORT", server.server_address[1], flush=True)
    server.serve_forever()


class Receiver:
    """The parent's view of the receiver process: arrival time per invoice guid."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--receiver"], stdout=subprocess.PIPE, text=True
        )
        assert self.process.stdout is not None
        first = self.process.stdout.readline().split()
        self.url = f"http://127.0.0.1:{first[1]}/webhooks"
        self.arrivals: dict[str, float] = {}
        self.count = 0
        self.changed = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            _webhook_id, guid, arrived = line.split()
            with self.changed:
                self.arrivals[guid] = float(arrived)
                self.count += 1
                self.changed.notify_all()

    def wait_for(self, count: int, timeout: float = 600) -> None:
        deadline = time.monotonic() + timeout
        with self.changed:
            while self.count < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RuntimeError(f"receiver got {self.count} of {count} in {timeout} s")
                self.changed.wait(left)

    def close(self) -> None:
        self.process.kill()
        self.process.wait()


# -- shared setup ------------------------------------------------------------------------------


@dataclass
class Context:
    """What every section gets: a gateway on real storage and a merchant to drive it."""

    gateway: Gateway
    events: int
    concurrency: int
    rate: float
    database: str
    made: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def new_invoices(self, count: int) -> list[str]:
        """Deposit addresses of ``count`` new 10 USD invoices (creation emits no event)."""
        addresses = []
        for _ in range(count):
            self.made += 1
            invoice = self.gateway.create_invoice(
                OWNER,
                {
                    "value": "10",
                    "chainId": CHAIN,
                    "description": f"bench {self.made}",
                    "acceptedTokens": [USDC],
                    "address": f"0x{self.made:040x}",
                },
            )
            addresses.append(invoice.address)
        return addresses

    def pay(self, address: str) -> str:
        """Pay an invoice in full: one committed change, one event. Returns its guid."""
        self.made += 1
        deposit = Deposit(
            CHAIN,
            f"0x{self.made:064x}",
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
def bench_database(url: str | None) -> Iterator[tuple[str, str]]:
    """(URL, backend name): a temporary SQLite file, or the given database; PostgreSQL gets
    a schema of its own for the run."""
    if url is None:
        with tempfile.TemporaryDirectory() as folder:
            yield f"sqlite:///{Path(folder) / 'bench.sqlite3'}", "sqlite"
        return
    from sqlalchemy import create_engine, text

    from paycore_storage.engine import database_url

    parsed = database_url(url)
    if parsed.get_backend_name() != "postgresql":
        yield url, parsed.get_backend_name()
        return
    schema = f"paycore_bench_{uuid.uuid4().hex[:12]}"
    admin = create_engine(parsed)
    with admin.begin() as connection:
        connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    try:
        scoped = parsed.update_query_dict({"options": f"-csearch_path={schema}"})
        yield scoped.render_as_string(hide_password=False), "postgresql"
    finally:
        with admin.begin() as connection:
            connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


# -- sections ---------------------------------------------------------------------------------


def _percentiles(samples_ms: list[float]) -> dict[str, float]:
    cuts = statistics.quantiles(samples_ms, n=100, method="inclusive")
    return {
        "p50": round(cuts[49], 2),
        "p90": round(cuts[89], 2),
        "p99": round(cuts[98], 2),
        "max": round(max(samples_ms), 2),
    }


def webhook_section(ctx: Context) -> dict[str, Any]:
    receiver = Receiver()
    try:
        set_webhook(ctx.gateway.storage, OWNER, receiver.url, allow_private=True)
        return {
            **_webhook_latency(ctx, receiver),
            **_webhook_throughput(ctx, receiver),
            "concurrency": ctx.concurrency,
        }
    finally:
        receiver.close()


def _webhook_latency(ctx: Context, receiver: Receiver) -> dict[str, Any]:
    addresses = ctx.new_invoices(ctx.events)
    committed: dict[str, float] = {}
    stop = threading.Event()
    worker = threading.Thread(
        target=run_worker, args=(ctx.gateway,), kwargs={"stop_event": stop, "sweep": False}
    )
    worker.start()
    try:
        _log(f"latency: paying {ctx.events} invoices at {ctx.rate:g}/s, embedded dispatcher")
        started = time.perf_counter()
        for n, address in enumerate(addresses):
            time.sleep(max(0.0, started + n / ctx.rate - time.perf_counter()))
            guid = ctx.pay(address)
            committed[guid] = time.time()
        produced = time.perf_counter() - started
        receiver.wait_for(len(committed))
    finally:
        stop.set()
        worker.join()
    latencies = [(receiver.arrivals[g] - t) * 1000 for g, t in committed.items()]
    figures = _percentiles(latencies)
    _log(f"latency ms: {figures}")
    return {"latency_ms": figures, "offered_changes_per_sec": round(ctx.events / produced)}


def _webhook_throughput(ctx: Context, receiver: Receiver) -> dict[str, Any]:
    _log(f"throughput: committing a backlog of {ctx.events} changes, no dispatcher running")
    before = receiver.count
    for address in ctx.new_invoices(ctx.events):
        ctx.pay(address)
    dispatcher = Dispatcher(ctx.gateway.storage, ctx.gateway.settings)
    thread = threading.Thread(target=dispatcher.run)
    started = time.perf_counter()
    thread.start()
    receiver.wait_for(before + ctx.events)
    elapsed = time.perf_counter() - started
    dispatcher.stop()
    thread.join()
    rate = ctx.events / elapsed
    _log(f"one dispatcher: {ctx.events} in {elapsed:.2f} s = {rate:,.0f}/s")
    ceiling = _bare_posts(ctx, receiver)
    return {
        "deliveries_per_sec": round(rate),
        "bare_posts_per_sec": round(ceiling),
        "ratio": round(rate / ceiling, 3),
    }


def _bare_posts(ctx: Context, receiver: Receiver) -> float:
    """The ceiling: signed POSTs of a typical body through ``delivery.post`` at the same
    concurrency, with no storage at all."""
    secret = new_secret()
    body = json.dumps({"guid": "ceiling", "status": "paid", "pad": "x" * 600})
    before = receiver.count

    def one(_: int) -> None:
        headers = signed_headers(secret, "msg_" + secrets.token_hex(8), int(time.time()), body)
        outcome = post(receiver.url, body.encode(), headers, timeout=10, allow_private=True)
        if not outcome.ok:
            raise RuntimeError(f"bare POST failed: {outcome.error}")

    started = time.perf_counter()
    with ThreadPoolExecutor(ctx.concurrency) as pool:
        list(pool.map(one, range(ctx.events)))
    receiver.wait_for(before + ctx.events)
    elapsed = time.perf_counter() - started
    rate = ctx.events / elapsed
    _log(f"bare POSTs: {ctx.events} in {elapsed:.2f} s = {rate:,.0f}/s")
    return rate


def websocket_section(ctx: Context) -> dict[str, Any]:
    """The WebSocket half: bench/ws_bench.py measures it with its own servers (a socket
    needs a web process); run here as a subprocess so one command prints both halves."""
    script = Path(__file__).with_name("ws_bench.py")
    _log("websocket: running bench/ws_bench.py")
    done = subprocess.run(
        [sys.executable, str(script), "--events", str(ctx.events)],
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


#: Channel name -> section.
SECTIONS: dict[str, Callable[[Context], dict[str, Any]]] = {
    "webhook": webhook_section,
    "websocket": websocket_section,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1000, help="changes per measurement")
    parser.add_argument("--database-url", default=None, help="default: a temporary SQLite file")
    parser.add_argument("--concurrency", type=int, default=Settings().webhook_concurrency)
    parser.add_argument(
        "--rate", type=float, default=100.0, help="changes per second offered for latency"
    )
    parser.add_argument("--only", choices=sorted(SECTIONS), action="append", help="sections")
    parser.add_argument("--receiver", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.receiver:
        serve_receiver()
        return
    with bench_database(args.database_url) as (url, backend):
        settings = Settings(
            database_url=url,
            prices={USDC: "1"},
            webhook_allow_private=True,
            webhook_concurrency=args.concurrency,
        )
        gateway = Gateway(settings, entry_points=True)
        ctx = Context(gateway, args.events, args.concurrency, args.rate, backend)
        results: dict[str, Any] = {"bench": "events", "events": args.events, "database": backend}
        try:
            for name in args.only or list(SECTIONS):
                results[name] = SECTIONS[name](ctx)
        finally:
            gateway.close()
    results["python"] = platform.python_version()
    print(json.dumps(results))


if __name__ == "__main__":
    main()
