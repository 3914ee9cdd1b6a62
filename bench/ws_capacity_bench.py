"""WebSocket capacity of one ``paycore serve`` process: 5,000 registered merchant sockets.

For each framework (Flask behind its ASGI front, Litestar) and each database (a SQLite file,
PostgreSQL), one ``paycore serve`` process (one worker, its defaults) is started, and each
repetition measures, in this order:

1. **quiet**: with only the probe socket open, 50 plain GETs (the public
   ``GET /paycore/invoice/{guid}``, sequential on one keep-alive connection) and 10 pushes
   to the probe's owner;
2. then ``--sockets`` (5,000) registered merchant sockets are opened (100 owners, 50 each,
   each owner's session key registered once; the sockets come from 40 loopback source
   addresses, as many clients would, within the default per-address caps) and held idle;
3. **loaded**: the same 50 GETs and 10 pushes while they are held, and the worker's
   resident memory against step 1 (``/proc``), per socket;
4. the sockets are closed and the server stopped.

The quiet figures are the ceiling each loaded one is measured against (same server, same
run, interleaved). A push is timed from the moment its change committed in this process (a
second Gateway on the same database, as ``paycore worker`` is: a notifier ahead of every
other stamps it) to the frame decoded by the probe's client; on SQLite the web process's
outbox feed looks every 50 ms, so about half a tick is the floor there.

The client is not the bottleneck: the held sockets sit in one asyncio loop on a thread of
this process and cost it nothing while idle (the server's pings are answered); the GETs and
the probe run on the main thread; this process's CPU share during the loaded GETs is
printed. The open-file limit is raised for this process (``resource.setrlimit``); the
server raises its own.

Output: one JSON line per (framework, database) on stdout: medians over the repetitions of
the GETs' p50/p99, the pushes' p50/max, memory per socket, each with the quiet ceiling and
the ratio, and the issue's targets (p99 GET < 50 ms, median push < 50 ms; the push max is
printed beside it); progress on stderr. Every repetition starts a fresh server, so the
memory before the sockets is a baseline.

    python bench/ws_capacity_bench.py [--sockets 5000] [--reps 3] [--postgres URL]
        [--only sqlite|postgres] [--framework flask|litestar] [--setting NAME=VALUE]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import http.client
import json
import os
import random
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import Future
from decimal import Decimal
from typing import Any

import httpx
from eth_account import Account
from eth_account.messages import encode_defunct
from eth_account.signers.local import LocalAccount
from sqlalchemy import create_engine, make_url, text
from websockets.asyncio.client import ClientConnection as AsyncConnection
from websockets.asyncio.client import connect as async_connect
from websockets.sync.client import ClientConnection, connect

from paycore import NATIVE, Deposit, Gateway, Settings
from paycore.domain.records import Json
from paycore.notify import BaseNotifier

PREFIX = "/paycore"
CHAIN = 31337
ETH = f"{CHAIN}:{NATIVE}"
PAYER = "0x" + "22" * 20
OWNERS = 100
SOURCES = [f"127.0.0.{i}" for i in range(10, 50)]
GETS = 50
PUSHES = 10
TARGET_GET_P99_MS = 50.0
TARGET_PUSH_MS = 50.0


def say(text_: str) -> None:
    print(f"ws_capacity_bench: {text_}", file=sys.stderr, flush=True)


def account(label: str) -> LocalAccount:
    acct: LocalAccount = Account.from_key(hashlib.sha256(label.encode()).digest())
    return acct


def sign(acct: LocalAccount, message: str) -> str:
    return "0x" + bytes(acct.sign_message(encode_defunct(text=message)).signature).hex()


def register_frame(key: LocalAccount, challenge: str, nonce: int) -> str:
    digest = hashlib.sha256(challenge.encode("ascii")).hexdigest()
    signature = sign(key, f"sess:{nonce}:{digest}")
    return json.dumps(
        {"type": "register", "nonce": nonce, "signature": signature, "encryption": "none"}
    )


class Nonces:
    """Strictly increasing millisecond nonces for one key (its sockets register in turn)."""

    def __init__(self) -> None:
        self.last = time.time_ns() // 1_000_000

    def next(self) -> int:
        self.last = max(self.last + 1, time.time_ns() // 1_000_000)
        return self.last


class Stamp(BaseNotifier):
    """Ahead of every other notifier: the moment a change's transaction has committed."""

    name = "ws-capacity-bench-stamp"

    def __init__(self) -> None:
        self.at: dict[str, float] = {}

    def invoice_changed(self, owner: str, payload: Json) -> None:
        self.at[str(payload["guid"])] = time.perf_counter()  # type: ignore[index]


def pct(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1000


# -- the server ------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def serve(
    framework: str, database: str, workdir: str, settings: dict[str, str]
) -> Iterator[tuple[str, int]]:
    """``paycore serve`` with its defaults but ``settings`` (``PAYCORE_*`` variables);
    yields the base URL and the worker's pid."""
    port = free_port()
    command = [sys.executable, "-m", "paycore.runtime.cli", "serve", "--framework", framework]
    command += ["--port", str(port), "--database-url", database]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAYCORE_")}
    env.update(settings)
    log = open(os.path.join(workdir, f"serve-{framework}-{port}.log"), "wb")  # noqa: SIM115
    process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    log.close()
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"ws_capacity_bench: {framework} did not start ({database})")
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(base + "/health", timeout=1).status_code == 200:
                    break
            time.sleep(0.05)
        with open(f"/proc/{process.pid}/task/{process.pid}/children") as children:
            [worker] = [int(pid) for pid in children.read().split()]
        yield base, worker
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise SystemExit("ws_capacity_bench: no VmRSS")


def register_key(base: str, owner: LocalAccount, key: LocalAccount) -> None:
    pub = "0x04" + key._key_obj.public_key.to_bytes().hex()
    body = {"ownerAddress": owner.address, "publicKey": pub, "signature": sign(owner, pub)}
    answer = httpx.post(base + PREFIX + "/auth/register-pubkey", json=body, timeout=10)
    if answer.status_code != 200:
        raise SystemExit(f"ws_capacity_bench: register-pubkey: {answer.text}")


# -- the held sockets: one asyncio loop on a thread ----------------------------------------
class Holder:
    """Opens and holds registered sockets in an event loop of its own thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.held: list[AsyncConnection] = []

    def run(self, coro: Any, timeout: float) -> Any:
        future: Future[Any] = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return future.result(timeout)

    async def _one(self, url: str, source: str, key: LocalAccount, nonces: Nonces) -> None:
        conn = await async_connect(
            url, local_addr=(source, 0), open_timeout=30, ping_interval=None, max_queue=4
        )
        challenge = json.loads(await conn.recv())["challenge"]
        await conn.send(register_frame(key, challenge, nonces.next()))
        answer = json.loads(await asyncio.wait_for(conn.recv(), 30))
        if answer.get("type") != "registered":
            raise SystemExit(f"ws_capacity_bench: register refused: {answer}")
        self.held.append(conn)

    async def _open(self, url: str, keys: list[LocalAccount], count: int) -> None:
        per_key = -(-count // len(keys))

        async def owner_sockets(index: int, key: LocalAccount) -> None:
            nonces = Nonces()
            for j in range(min(per_key, count - index * per_key)):
                source = SOURCES[(index * per_key + j) % len(SOURCES)]
                await self._one(url, source, key, nonces)  # in turn: nonces stay in order

        await asyncio.gather(*(owner_sockets(i, k) for i, k in enumerate(keys)))

    def open(self, url: str, keys: list[LocalAccount], count: int) -> None:
        self.run(self._open(url, keys, count), timeout=600)

    async def _close(self) -> None:
        held, self.held = self.held, []
        await asyncio.gather(*(c.close() for c in held), return_exceptions=True)

    def close(self) -> None:
        self.run(self._close(), timeout=120)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)


# -- the measurements --------------------------------------------------------------------------
def gets(base: str, guid: str) -> list[float]:
    """``GETS`` sequential public reads on one keep-alive connection; seconds each."""
    conn = http.client.HTTPConnection("127.0.0.1", int(base.rsplit(":", 1)[1]), timeout=10)
    samples: list[float] = []
    try:
        for _ in range(GETS):
            started = time.perf_counter()
            conn.request("GET", f"{PREFIX}/invoice/{guid}")
            response = conn.getresponse()
            response.read()
            samples.append(time.perf_counter() - started)
            if response.status != 200:
                raise SystemExit(f"ws_capacity_bench: GET answered {response.status}")
    finally:
        conn.close()
    return samples


def pushes(gateway: Gateway, stamp: Stamp, probe: ClientConnection, owner: str) -> list[float]:
    """``PUSHES`` changes to ``owner``'s invoices (a confirmed deposit each, as the watcher
    records them), each timed from its commit to its frame at the probe. Each on an invoice
    of its own: its first deposit is a status change (partially paid), which a socket is
    pushed by default; a second one to the same invoice is not (docs/interface.md)."""
    samples: list[float] = []
    for _ in range(PUSHES):
        invoice = gateway.create_invoice(
            owner,
            {"description": "capacity bench", "value": "100000000", "chainId": CHAIN,
             "acceptedTokens": [ETH], "address": "0x" + os.urandom(20).hex()},
        )  # fmt: skip
        time.sleep(random.uniform(0, 0.05))  # out of step with the SQLite feed's tick
        deposit = Deposit(
            CHAIN, "0x" + os.urandom(32).hex(), -1, NATIVE, PAYER, invoice.address,
            Decimal("0.001"), gateway.now(),
        )  # fmt: skip
        gateway.record_deposit(deposit)
        committed = stamp.at[invoice.guid]
        frame = json.loads(probe.recv(timeout=10))
        received = time.perf_counter()
        if frame.get("events", [{}])[-1].get("guid") != invoice.guid:
            raise SystemExit(f"ws_capacity_bench: unexpected frame {frame}")
        samples.append(received - committed)
    return samples


def open_probe(base: str, key: LocalAccount, nonces: Nonces) -> ClientConnection:
    probe = connect(base.replace("http://", "ws://", 1) + PREFIX + "/ws", open_timeout=10)
    challenge = json.loads(probe.recv(timeout=10))["challenge"]
    probe.send(register_frame(key, challenge, nonces.next()))
    answer = json.loads(probe.recv(timeout=10))
    if answer.get("type") != "registered":
        raise SystemExit(f"ws_capacity_bench: probe refused: {answer}")
    return probe


def measure(
    base: str,
    worker: int,
    url: str,
    holder: Holder,
    keys: list[LocalAccount],
    gateway: Gateway,
    stamp: Stamp,
    probe: ClientConnection,
    read: tuple[str, str],
    args: argparse.Namespace,
) -> dict[str, float]:
    """One repetition: quiet, then loaded with ``args.sockets`` held, then closed. ``read``:
    the invoice the GETs read and the probe's owner, whose changes are pushed."""
    guid, owner = read
    quiet_gets = gets(base, guid)
    quiet_push = pushes(gateway, stamp, probe, owner)
    before = rss_kib(worker)
    started = time.perf_counter()
    holder.open(url, keys, args.sockets)
    opened_in = time.perf_counter() - started
    time.sleep(1.0)
    after = rss_kib(worker)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    loaded_gets = gets(base, guid)
    client_share = (time.process_time() - cpu0) / (time.perf_counter() - wall0)
    loaded_push = pushes(gateway, stamp, probe, owner)
    held = len(holder.held)
    holder.close()
    if held != args.sockets:
        raise SystemExit(f"ws_capacity_bench: {held} of {args.sockets} held")
    return {
        "quiet_get_p50": pct(quiet_gets, 0.5),
        "quiet_get_p99": pct(quiet_gets, 0.99),
        "get_p50": pct(loaded_gets, 0.5),
        "get_p99": pct(loaded_gets, 0.99),
        "quiet_push_p50": pct(quiet_push, 0.5),
        "quiet_push_max": pct(quiet_push, 1.0),
        "push_p50": pct(loaded_push, 0.5),
        "push_max": pct(loaded_push, 1.0),
        "kib_per_socket": (after - before) / held,
        "client_cpu_share": client_share,
        "open_seconds": opened_in,
    }


def bench_case(framework: str, name: str, database: str, args: argparse.Namespace,
               workdir: str) -> dict[str, Any]:  # fmt: skip
    tag = f"{framework}-{name}"
    gateway = Gateway(Settings(database_url=database, prices={ETH: "2000"}))
    stamp = Stamp()
    gateway.add_notifier(stamp, first=True)
    gateway.storage.migrate()  # type: ignore[attr-defined]
    probe_owner, probe_key = (
        account(f"capacity probe owner {tag}"),
        account(f"capacity probe {tag}"),
    )
    owners = [account(f"capacity owner {tag} {i}") for i in range(OWNERS)]
    keys = [account(f"capacity key {tag} {i}") for i in range(OWNERS)]
    target = gateway.create_invoice(
        probe_owner.address,
        {"description": "read", "value": "20", "chainId": CHAIN, "acceptedTokens": [ETH],
         "address": "0x" + os.urandom(20).hex()},
    )  # fmt: skip
    probe_nonces = Nonces()
    rows: list[dict[str, float]] = []
    holder = Holder()
    registered = False
    try:
        for rep in range(args.reps):
            # A fresh server each repetition: its memory before the sockets is a baseline
            # (a process that held sockets before keeps the freed memory for reuse).
            with serve(framework, database, workdir, args.settings) as (base, worker):
                if not registered:
                    register_key(base, probe_owner, probe_key)
                    for owner, key in zip(owners, keys, strict=True):
                        register_key(base, owner, key)
                    registered = True
                probe = open_probe(base, probe_key, probe_nonces)
                gets(base, target.guid)  # warm up
                pushes(gateway, stamp, probe, probe_owner.address)
                url = base.replace("http://", "ws://", 1) + PREFIX + "/ws"
                row = measure(
                    base,
                    worker,
                    url,
                    holder,
                    keys,
                    gateway,
                    stamp,
                    probe,
                    (target.guid, probe_owner.address),
                    args,
                )
                probe.close()
            rows.append(row)
            say(
                f"{tag} rep {rep + 1}: {args.sockets} sockets held (opened in"
                f" {row['open_seconds']:.1f} s), GET p99 {row['get_p99']:.1f} ms (quiet"
                f" {row['quiet_get_p99']:.1f}), push p50/max {row['push_p50']:.1f}/"
                f"{row['push_max']:.1f} ms (quiet {row['quiet_push_p50']:.1f}/"
                f"{row['quiet_push_max']:.1f}), {row['kib_per_socket']:.0f} KiB/socket,"
                f" client CPU {row['client_cpu_share']:.2f}"
            )
    finally:
        holder.stop()
        gateway.close()

    def med(field: str) -> float:
        return round(statistics.median(r[field] for r in rows), 2)

    return {
        "framework": framework,
        "database": name,
        "sockets": args.sockets,
        "reps": args.reps,
        "get_ms": {"p50": med("get_p50"), "p99": med("get_p99")},
        "get_quiet_ms": {"p50": med("quiet_get_p50"), "p99": med("quiet_get_p99")},
        "get_p99_ratio": round(med("get_p99") / med("quiet_get_p99"), 2),
        "push_ms": {"p50": med("push_p50"), "max": med("push_max")},
        "push_quiet_ms": {"p50": med("quiet_push_p50"), "max": med("quiet_push_max")},
        "push_max_ratio": round(med("push_max") / med("quiet_push_max"), 2),
        "kib_per_socket": med("kib_per_socket"),
        "client_cpu_share": med("client_cpu_share"),
        "open_seconds": med("open_seconds"),
        "targets_ms": {"get_p99": TARGET_GET_P99_MS, "push": TARGET_PUSH_MS},
        # The push target on the median push; the max is printed beside it (on SQLite the
        # feed's 50 ms tick puts the quiet max there too).
        "meets_targets": med("get_p99") < TARGET_GET_P99_MS and med("push_p50") < TARGET_PUSH_MS,
    }


def raise_open_files(wanted: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < wanted:
        ceiling = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (ceiling, hard))
    if resource.getrlimit(resource.RLIMIT_NOFILE)[0] < wanted:
        raise SystemExit(f"ws_capacity_bench: open-file limit below {wanted}: raise ulimit -n")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sockets", type=int, default=5000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--postgres", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--only", choices=["sqlite", "postgres"])
    parser.add_argument("--framework", choices=["flask", "litestar"])
    parser.add_argument(
        "--setting",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a server setting, e.g. ws_recheck_interval=3600 (repeatable)",
    )
    args = parser.parse_args()
    args.settings = {
        "PAYCORE_" + name.strip().upper(): value
        for name, _, value in (item.partition("=") for item in args.setting)
    }
    # The bench registers one session key per socket, all from loopback: the per-address
    # registration limit (30 a minute by default) is off unless a --setting names it.
    args.settings.setdefault("PAYCORE_IP_REGISTRATION_LIMIT", "0")
    raise_open_files(args.sockets + 1024)
    frameworks = [args.framework] if args.framework else ["flask", "litestar"]
    with tempfile.TemporaryDirectory(prefix="ws-capacity-bench-") as workdir:
        for framework in frameworks:
            if args.only in (None, "sqlite"):
                path = os.path.join(workdir, f"{framework}.sqlite3")
                result = bench_case(framework, "sqlite", f"sqlite:///{path}", args, workdir)
                print(json.dumps(result), flush=True)
            if args.only in (None, "postgres"):
                schema = f"paycore_bench_{uuid.uuid4().hex[:12]}"
                server = make_url(args.postgres)
                admin = create_engine(server.set(drivername="postgresql+psycopg"))
                with admin.begin() as connection:
                    connection.execute(text(f'CREATE SCHEMA "{schema}"'))
                url = server.update_query_dict({"options": f"-csearch_path={schema}"})
                try:
                    database = url.render_as_string(hide_password=False)
                    result = bench_case(framework, "postgres", database, args, workdir)
                    print(json.dumps(result), flush=True)
                finally:
                    with admin.begin() as connection:
                        connection.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
                    admin.dispose()


if __name__ == "__main__":
    main()
