"""Commit-to-frame latency of GET /ws pushes read from the outbox, with no Redis.

The web process is ``paycore serve --framework litestar`` (its own process, as deployed);
this process plays ``paycore worker``: a Gateway on the same database commits invoice
changes (a confirmed deposit through ``Gateway.record_deposit``) one at a time, each time
waiting for its push before the next, and a real WebSocket client (``websockets``' sync
client) registered on the web process receives it. The clock starts when the change's
transaction has committed (a notifier ahead of every other one, on the committing gateway)
and stops when the client has the frame decoded; client and committer share this
process's ``perf_counter``.

Backends, interleaved in one run, each repetition measuring paycore then its ceiling:

- ``sqlite``: a SQLite file; the web process's feed looks at ``PRAGMA data_version`` every
  50 ms. Ceiling: a bare poller of ``data_version`` at the same tick on its own connection
  that reads the new rows of a table another connection inserts into (the tick and the
  read, nothing of paycore).
- ``postgres``: a new schema in ``--postgres`` (default: the test server); the feed
  LISTENs on ``paycore_outbox`` and the commit's ``pg_notify`` wakes it. Ceiling: a raw
  psycopg LISTEN / NOTIFY round trip (an insert with NOTIFY committed on one connection,
  the notification received on another, which then reads the new rows).

Each commit, in both, comes after a random pause of up to one SQLite tick, so commits do not
fall in step with the tick.

Output: one JSON line per backend on stdout (milliseconds): ``figure`` and ``ceiling`` are
medians over the repetitions of each one's p50 and p99, ``ratio`` is figure / ceiling;
progress on stderr.

    python bench/ws_outbox_bench.py [--events 200] [--reps 3] [--postgres URL] [--only sqlite]
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

import httpx
import psycopg
from eth_account import Account
from eth_account.messages import encode_defunct
from eth_account.signers.local import LocalAccount
from sqlalchemy import create_engine, make_url, text
from websockets.sync.client import ClientConnection, connect

from paycore import NATIVE, Deposit, Gateway, Settings
from paycore.domain.records import Json
from paycore.notify import BaseNotifier

PREFIX = "/paycore"
CHAIN = 31337
ETH = f"{CHAIN}:{NATIVE}"
PAYER = "0x" + "22" * 20
TARGET_P99_MS = 250.0
TICK = 0.05  # the SQLite feed's tick (paycore_storage.outbox_signal.SQLITE_TICK)


def say(text_: str) -> None:
    print(f"ws_outbox_bench: {text_}", file=sys.stderr, flush=True)


def account(label: str) -> LocalAccount:
    acct: LocalAccount = Account.from_key(hashlib.sha256(label.encode()).digest())
    return acct


def sign(acct: LocalAccount, message: str) -> str:
    return "0x" + bytes(acct.sign_message(encode_defunct(text=message)).signature).hex()


def pause() -> None:
    """A random pause before each commit, so that commits do not fall in step with the
    SQLite tick (each one waits for the previous push, which came right after a look)."""
    time.sleep(random.uniform(0, TICK))


def pct(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1000


class Stamp(BaseNotifier):
    """Ahead of every other notifier: the moment a change's transaction has committed."""

    name = "ws-outbox-bench-stamp"

    def __init__(self) -> None:
        self.at: dict[str, float] = {}

    def invoice_changed(self, owner: str, payload: Json) -> None:
        self.at[str(payload["guid"])] = time.perf_counter()  # type: ignore[index]


# -- the web process -------------------------------------------------------------------------
@contextlib.contextmanager
def web_process(database: str, workdir: str) -> Iterator[str]:
    with socketless_port() as port:
        pass
    command = [sys.executable, "-m", "paycore.runtime.cli", "serve", "--framework", "litestar"]
    command += ["--port", str(port), "--database-url", database]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAYCORE_REDIS")}
    env["PAYCORE_PRICES"] = json.dumps({ETH: "2000"})
    log = open(os.path.join(workdir, f"web-{port}.log"), "wb")  # noqa: SIM115 - child owns it
    process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    log.close()
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"ws_outbox_bench: the web process did not start ({database})")
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(base + "/health", timeout=1).status_code == 200:
                    break
            time.sleep(0.05)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=15)


@contextlib.contextmanager
def socketless_port() -> Iterator[int]:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


def register_key(base: str, owner: LocalAccount, key: LocalAccount) -> None:
    pub = "0x04" + key._key_obj.public_key.to_bytes().hex()
    body = {"ownerAddress": owner.address, "publicKey": pub, "signature": sign(owner, pub)}
    answer = httpx.post(base + PREFIX + "/auth/register-pubkey", json=body, timeout=10)
    if answer.status_code != 200:
        raise SystemExit(f"ws_outbox_bench: register-pubkey: {answer.text}")


def open_socket(base: str, key: LocalAccount) -> ClientConnection:
    conn = connect(base.replace("http://", "ws://", 1) + PREFIX + "/ws", open_timeout=10)
    challenge = json.loads(conn.recv(timeout=10))["challenge"]
    nonce = time.time_ns() // 1_000_000
    digest = hashlib.sha256(challenge.encode("ascii")).hexdigest()
    conn.send(
        json.dumps(
            {"type": "register", "nonce": nonce, "signature": sign(key, f"sess:{nonce}:{digest}")}
        )
    )
    answer = json.loads(conn.recv(timeout=10))
    if answer.get("type") != "registered":
        raise SystemExit(f"ws_outbox_bench: register refused: {answer}")
    return conn


def paycore_case(
    gateway: Gateway, stamp: Stamp, conn: ClientConnection, owner: str, n: int
) -> list[float]:
    samples: list[float] = []
    for _ in range(n):
        # A fresh invoice each time: its first deposit is a status change, which a socket is
        # pushed (a further part payment is not, unless the socket lists its type).
        invoice = gateway.create_invoice(
            owner,
            {
                "description": "bench",
                "value": "100000000",
                "chainId": CHAIN,
                "acceptedTokens": [ETH],
                "address": "0x" + os.urandom(20).hex(),
            },
        )
        pause()
        deposit = Deposit(
            CHAIN, "0x" + os.urandom(32).hex(), -1, NATIVE, PAYER, invoice.address,
            Decimal("0.001"), gateway.now(),
        )  # fmt: skip
        gateway.record_deposit(deposit)
        committed = stamp.at[invoice.guid]
        frame = json.loads(conn.recv(timeout=10))
        received = time.perf_counter()
        if frame.get("events", [{}])[-1].get("guid") != invoice.guid:
            raise SystemExit(f"ws_outbox_bench: unexpected frame {frame}")
        samples.append(received - committed)
    return samples


# -- ceilings --------------------------------------------------------------------------------
def sqlite_ceiling(path: str, n: int) -> list[float]:
    """A row committed on one connection, seen by a data_version poller at the feed's tick
    that then reads the new rows: the feed's wait and read with nothing of paycore."""
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("CREATE TABLE IF NOT EXISTS bench_ceiling (id INTEGER PRIMARY KEY, n INTEGER)")
    seen: list[float] = []
    go = threading.Event()
    done = threading.Event()

    def poll() -> None:
        reader = sqlite3.connect(path, isolation_level=None)
        last = reader.execute("PRAGMA data_version").fetchone()[0]
        position = 0
        go.set()
        while not done.is_set():
            now_version = reader.execute("PRAGMA data_version").fetchone()[0]
            if now_version != last:
                last = now_version
                rows = reader.execute(
                    "SELECT id, n FROM bench_ceiling WHERE id > ? ORDER BY id", (position,)
                ).fetchall()
                if rows:
                    position = rows[-1][0]
                    seen.append(time.perf_counter())
            time.sleep(TICK)
        reader.close()

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    go.wait()
    samples: list[float] = []
    for i in range(n):
        pause()
        before = len(seen)
        writer.execute("INSERT INTO bench_ceiling (n) VALUES (?)", (i,))
        committed = time.perf_counter()
        while len(seen) == before:
            time.sleep(0.0005)
        samples.append(seen[-1] - committed)
    done.set()
    thread.join()
    writer.close()
    return samples


def postgres_ceiling(conninfo: str, n: int) -> list[float]:
    """A row and a NOTIFY committed on one connection; LISTEN on another, which then reads
    the new rows: the feed's wait and read with nothing of paycore."""
    listener = psycopg.connect(conninfo, autocommit=True)
    listener.execute("LISTEN paycore_bench_ceiling")
    sender = psycopg.connect(conninfo, autocommit=True)
    table = f"bench_ceiling_{uuid.uuid4().hex[:8]}"
    sender.execute(f"CREATE TABLE {table} (id BIGSERIAL PRIMARY KEY, n INTEGER)")
    samples: list[float] = []
    position = 0
    for i in range(n):
        pause()
        with sender.transaction():
            sender.execute(f"INSERT INTO {table} (n) VALUES (%s)", (i,))
            sender.execute("NOTIFY paycore_bench_ceiling")
        committed = time.perf_counter()
        for _note in listener.notifies(timeout=5, stop_after=1):
            pass
        rows = listener.execute(
            f"SELECT id, n FROM {table} WHERE id > %s ORDER BY id", (position,)
        ).fetchall()
        position = rows[-1][0]
        samples.append(time.perf_counter() - committed)
    sender.execute(f"DROP TABLE {table}")
    listener.close()
    sender.close()
    return samples


# -- the run ---------------------------------------------------------------------------------
def bench_backend(
    name: str,
    database: str,
    ceiling: Callable[[int], list[float]],
    args: argparse.Namespace,
    workdir: str,
) -> dict[str, Any]:
    owner, key = account(f"ws outbox bench owner {name}"), account(f"ws outbox bench key {name}")
    gateway = Gateway(Settings(database_url=database, prices={ETH: "2000"}))
    stamp = Stamp()
    gateway.add_notifier(stamp, first=True)
    gateway.storage.migrate()  # type: ignore[attr-defined]
    figures: list[tuple[float, float]] = []
    ceilings: list[tuple[float, float]] = []
    try:
        with web_process(database, workdir) as base:
            register_key(base, owner, key)
            conn = open_socket(base, key)
            paycore_case(gateway, stamp, conn, owner.address, 20)  # warm up
            for rep in range(args.reps):
                got = paycore_case(gateway, stamp, conn, owner.address, args.events)
                figures.append((pct(got, 0.5), pct(got, 0.99)))
                raw = ceiling(args.events)
                ceilings.append((pct(raw, 0.5), pct(raw, 0.99)))
                (f50, f99), (c50, c99) = figures[-1], ceilings[-1]
                say(
                    f"{name} rep {rep + 1}: p50/p99 {f50:.1f}/{f99:.1f} ms,"
                    f" ceiling {c50:.1f}/{c99:.1f} ms"
                )
            conn.close()
    finally:
        gateway.close()
    p50 = statistics.median(f[0] for f in figures)
    p99 = statistics.median(f[1] for f in figures)
    c50 = statistics.median(c[0] for c in ceilings)
    c99 = statistics.median(c[1] for c in ceilings)
    return {
        "backend": name,
        "figure": {"p50_ms": round(p50, 2), "p99_ms": round(p99, 2)},
        "ceiling": {"p50_ms": round(c50, 2), "p99_ms": round(c99, 2)},
        "ratio": {"p50": round(p50 / c50, 2), "p99": round(p99 / c99, 2)},
        "target_p99_ms": TARGET_P99_MS,
        "meets_target": p99 < TARGET_P99_MS,
        "events": args.events,
        "reps": args.reps,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200, help="changes per repetition")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--postgres", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--only", choices=["sqlite", "postgres"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ws-outbox-bench-") as workdir:
        if args.only in (None, "sqlite"):
            path = os.path.join(workdir, "bench.sqlite3")
            ceiling_path = os.path.join(workdir, "ceiling.sqlite3")
            result = bench_backend(
                "sqlite",
                f"sqlite:///{path}",
                lambda n: sqlite_ceiling(ceiling_path, n),
                args,
                workdir,
            )
            result["ceiling"]["what"] = (
                "PRAGMA data_version poll at 50 ms, then a read of the new rows"
            )
            print(json.dumps(result), flush=True)
        if args.only in (None, "postgres"):
            schema = f"paycore_bench_{uuid.uuid4().hex[:12]}"
            server = make_url(args.postgres)
            admin = create_engine(server.set(drivername="postgresql+psycopg"))
            with admin.begin() as connection:
                connection.execute(text(f'CREATE SCHEMA "{schema}"'))
            url = server.update_query_dict({"options": f"-csearch_path={schema}"})
            try:
                conninfo = server.set(drivername="postgresql").render_as_string(hide_password=False)
                result = bench_backend(
                    "postgres", url.render_as_string(hide_password=False),
                    lambda n: postgres_ceiling(conninfo, n), args, workdir,
                )  # fmt: skip
                result["ceiling"]["what"] = (
                    "raw LISTEN/NOTIFY round trip, then a read of the new rows"
                )
                print(json.dumps(result), flush=True)
            finally:
                with admin.begin() as connection:
                    connection.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
                admin.dispose()


if __name__ == "__main__":
    main()
