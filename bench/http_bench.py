"""Signed requests per second through ``paycore serve``, next to bare apps on the same server.

For each framework (Litestar and Flask, under gunicorn as ``paycore serve`` runs them:
paycore's uvicorn worker class, Flask behind its ASGI front) and each database (a fresh
SQLite file, a fresh PostgreSQL schema), the bench starts ``paycore serve`` and two apps of
``bench/bare_app.py`` under the very same server (``paycore.runtime.serve.gunicorn_server``),
one worker process each, and measures, repetition by repetition, interleaved:

- ``GET /paycore/invoice/{guid}``, session-signed over the URI;
- ``POST /paycore/invoice``, session-signed over the body (one new invoice per request);
- ``GET /paycore/invoice/{guid}`` unsigned (``public``): the checkout page's poll, and the
  same with ``If-None-Match`` naming the current ``ETag`` (``poll``: answered ``304``);

against three servers:

- ``paycore``: every request with a fresh nonce (each client process has its own session
  key and pre-signs its requests before the clock starts);
- ``bare``: the same framework answering the very bytes paycore answered, doing nothing
  else (the ceiling the targets are measured against);
- ``floor``: the least a replay-proof signed request can do on that server and database,
  written straight against the libraries: the key recovered from the signature and the nonce
  recorded by one durable statement (and the POST's body in the same transaction), then the
  same bytes (see ``bare_app.py``). It gets fresh nonces as paycore does. The signed GET
  is also measured against ``floor_with_read``: the same, then the public read's ``SELECT``
  of the invoice it answers, which a signed read cannot skip; the POST against
  ``floor_with_write``: the nonce and the invoice's own row in one transaction, into a copy
  of paycore's invoice table with its B-tree indexes (not the text search's), the row made
  from the body with nothing checked, priced or derived -- what a store of invoices that
  can be listed by owner, address, status and deadline cannot skip. For the public
  read the floor is the same framework answering from one indexed ``SELECT`` of the
  invoice's row on the same driver, autocommitted.

The floor runs sync handlers in the framework's thread pool, as paycore's do. Issue 30 asks
for the floor at the libraries' best, so for Litestar the bench also starts a twin of it
and measures it as one more side, interleaved, with the same client and repetitions (its
signed sides share the sync floor's nonce counters: both spend into one table):

- on PostgreSQL ``bare_app.py --floor-async``: the same work with psycopg's
  ``AsyncConnection`` awaited in async handlers, no thread hop (it has no write floor);
- on a SQLite file ``bare_app.py --floor-inline``: the sync floor's very work run on the
  event loop, no thread hop -- SQLite has no async driver (aiosqlite is sqlite3 in a
  thread), but its fsync is short, and on one core the hop's wake-ups cost more than the
  wait they overlap.

Kind by kind the fastest median is kept as ``floor`` (and as ``floor_with_read`` and
``floor_with_write``). Those lines print every figure and the one kept
(``floor_sync_req_per_s``, ``floor_async_req_per_s`` or ``floor_inline_req_per_s``,
``floor_kept``: ``sync``, ``async`` or ``inline``; with the ``floor_with_read_`` and
``floor_with_write_`` prefixes for the fuller floors). Flask has no event loop of its own:
there only the sync floor runs (``floor_kept``: ``sync``).

The load client is ``--clients`` processes, each on one keep-alive connection, sending
prepared request bytes and reading the answers with a minimal HTTP/1.1 reader (no HTTP
library in the loop). To show it is not the limit, the bench also runs the bare GET with
twice as many client processes (``client_check``): if the client were the limit, the
bare rate would rise with it. It prints each side's CPU per request (the client processes;
the server's whole process tree, gunicorn's arbiter and its worker) as well.

Each line of stdout is one JSON object: figure, value, ceiling, ratio (medians of
``--reps``); progress on stderr.

    python bench/http_bench.py [--seconds 3] [--reps 3] [--clients 4]
                               [--only litestar|flask] [--db sqlite|postgresql]
                               [--kinds get,post,public,poll]
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import http.client
import json
import multiprocessing as mp
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

from coincurve import PrivateKey
from sqlalchemy import create_engine, text

from paycore.auth.signatures import personal_message_hash, public_key_to_address
from paycore_storage import SqlStorage
from paycore_storage.engine import database_url

PREFIX = "/paycore"
HERE = Path(__file__).resolve().parent
DEFAULT_POSTGRES = "postgresql://postgres@127.0.0.1:5432/test"
ETH_1 = "1:0x0000000000000000000000000000000000000000"
DEPOSIT = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"
INVOICE_BODY = json.dumps(
    {
        "value": "49.90",
        "chainId": 1,
        "description": "Order #10042",
        "acceptedTokens": [ETH_1],
        "address": DEPOSIT,
        "data": {"orderId": 10042},
    },
    separators=(",", ":"),
).encode()
#: The ETag paycore answered for an invoice URI, set before the client processes fork.
ETAGS: dict[str, str] = {}
#: Nonces each client process may spend per measured case; more than it can send in time.
POOL = 4000
#: Distinct requests a client cycles through against the bare app (it checks nothing).
BARE_POOL = 64
ENDPOINTS = {
    "get": "GET /invoice/{guid}",
    "post": "POST /invoice",
    "public": "GET /invoice/{guid} (unsigned)",
    "poll": "GET /invoice/{guid} (unsigned, If-None-Match: 304)",
}
KINDS = tuple(ENDPOINTS)
#: Issue 30's targets, against the floor measured in the same run.
TARGETS = {"get": ">= 0.8", "post": ">= 0.8", "public": ">= 0.7", "poll": ">= 0.7"}
#: What each kind answers, and whether it is signed (a fresh nonce per request).
EXPECT = {"get": 200, "post": 201, "public": 200, "poll": 304}
SIGNED = {"get": True, "post": True, "public": False, "poll": False}
_SIGNED_FLOOR = "floor: key recovery and one durable nonce write, nothing else"
FLOOR_NOTES = {
    "get": _SIGNED_FLOOR,
    "post": _SIGNED_FLOOR,
    "public": "floor: one indexed, autocommitted SELECT of the invoice row, nothing else",
    "poll": "floor: the same SELECT, then 304 with no body",
    "get_read": "floor with the read: key recovery, one durable nonce write and one indexed "
    "SELECT of the invoice it answers (one autocommitted statement on the async floor)",
    "post_write": "floor with the write: key recovery, then the nonce and the invoice's row "
    "(its JSON body parsed, a random guid) in one durable transaction, into a copy of "
    "paycore's invoice table with its B-tree indexes",
}
#: What the kept floor's note adds when a twin of the threaded floor won (``faster``).
TWIN_NOTES = {
    "sync": "",
    "async": " (the async floor: psycopg's AsyncConnection awaited in async handlers)",
    "inline": " (the inline floor: the same work on the event loop, no thread hop)",
}


def _log(text: str) -> None:
    print(f"http_bench: {text}", file=sys.stderr, flush=True)


def _emit(line: dict[str, Any]) -> None:
    print(json.dumps(line), flush=True)


# -- signing -------------------------------------------------------------------------------
def _sign(key: PrivateKey, message: str) -> str:
    signature = key.sign_recoverable(personal_message_hash(message), hasher=None)
    return "0x" + signature[:64].hex() + f"{signature[64] + 27:02x}"


def _session_key(index: int) -> PrivateKey:
    return PrivateKey(hashlib.sha256(f"http-bench-key-{index}".encode()).digest())


def _raw_request(host: str, kind: str, uri: str, key: PrivateKey, nonce: int) -> bytes:
    """One complete HTTP/1.1 request, signed as a client would sign it (``public``: not
    signed at all, as the checkout page sends it)."""
    if kind == "public":
        return f"GET {uri} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()
    if kind == "poll":  # the tag is paycore's, for the invoice as the bench created it
        tag = ETAGS.get(uri, '"*"')
        return f"GET {uri} HTTP/1.1\r\nHost: {host}\r\nIf-None-Match: {tag}\r\n\r\n".encode()
    signed = uri.encode() if kind == "get" else INVOICE_BODY
    digest = hashlib.sha256(signed).hexdigest()
    lines = [
        f"{'GET' if kind == 'get' else 'POST'} {uri} HTTP/1.1",
        f"Host: {host}",
        f"x-session-nonce: {nonce}",
        f"x-session-signature: {_sign(key, f'sess:{nonce}:{digest}')}",
    ]
    body = b""
    if kind == "post":
        lines += ["Content-Type: application/json", f"Content-Length: {len(INVOICE_BODY)}"]
        body = INVOICE_BODY
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


# -- the load client: processes on keep-alive connections ---------------------------------
@dataclass
class Job:
    port: int
    kind: str  # get | post | public
    uri: str
    key_index: int
    first_nonce: int
    count: int  # distinct requests to prepare
    expect: int
    seconds: float
    cycle: bool  # send the prepared requests round and round (the bare app checks nothing)


def _read_answer(sock: socket.socket, buffer: bytearray) -> tuple[int, bool]:
    """Read one response (Content-Length framed) off ``sock``: its status code, and whether
    the server closes the connection after it."""
    while True:
        end = buffer.find(b"\r\n\r\n")
        if end >= 0:
            break
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("server closed the connection")
        buffer += chunk
    head = bytes(buffer[:end]).decode("latin-1")
    status = int(head.split(" ", 2)[1])
    length = None
    close = False
    for line in head.split("\r\n")[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value)
        elif name.strip().lower() == "connection":
            close = value.strip().lower() == "close"
        elif name.strip().lower() == "transfer-encoding":
            raise RuntimeError("chunked answer: the bench client reads Content-Length only")
    if length is None and status in (204, 304):
        length = 0  # no body by definition
    if length is None:
        raise RuntimeError(f"answer without Content-Length: {head[:200]}")
    total = end + 4 + length
    while len(buffer) < total:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("server closed the connection mid-answer")
        buffer += chunk
    del buffer[:total]
    return status, close


def _connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def _client(job: Job, start: Any, results: Any) -> None:
    try:
        _send_all(job, start, results)
    except Exception as error:  # told to the parent, which would otherwise wait in vain
        results.put({"error": f"{type(error).__name__}: {error}"})


def _send_all(job: Job, start: Any, results: Any) -> None:
    key = _session_key(job.key_index)
    host = f"127.0.0.1:{job.port}"
    requests = [
        _raw_request(host, job.kind, job.uri, key, job.first_nonce + i) for i in range(job.count)
    ]
    sock = _connect(job.port)
    buffer = bytearray()
    sock.sendall(f"GET /health HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    _, close = _read_answer(sock, buffer)  # served once before the clock starts
    if close:
        sock.close()
        sock = _connect(job.port)
    start.wait(timeout=600)
    cpu0, began = time.process_time(), time.perf_counter()
    deadline = began + job.seconds
    sent, error, exhausted = 0, None, False
    while time.perf_counter() < deadline:
        if sent >= job.count and not job.cycle:
            exhausted = True
            break
        sock.sendall(requests[sent % job.count])
        status, close = _read_answer(sock, buffer)
        if status != job.expect:
            error = f"status {status}"
            break
        sent += 1
        if close:  # a server that closes after each answer: reconnect
            sock.close()
            sock = _connect(job.port)
    elapsed = time.perf_counter() - began
    cpu = time.process_time() - cpu0
    sock.close()
    results.put(
        {"sent": sent, "elapsed": elapsed, "cpu": cpu, "error": error, "exhausted": exhausted}
    )


def _server_cpu(pid: int) -> float:
    """CPU seconds the process and its live descendants have used (all their threads):
    utime + stime. gunicorn's workers are children of its arbiter."""
    total = 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return 0.0
    total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            children = (task / "children").read_text().split()
        except FileNotFoundError:
            continue
        total += sum(_server_cpu(int(child)) for child in children)
    return total


def _load(
    pid: int, port: int, kind: str, uri: str, clients: int, seconds: float,
    nonces: list[int] | None, expect: int,
) -> dict[str, float]:  # fmt: skip
    """Run one case; ``nonces`` (the next nonce of each client's key) is None for the bare
    app, whose clients cycle through a few requests."""
    ctx = mp.get_context("fork")
    start = ctx.Barrier(clients + 1)  # released once every client has its requests ready
    results = ctx.Queue()
    jobs = [
        Job(
            port,
            kind,
            uri,
            i,
            first_nonce=nonces[i] if nonces is not None else 1,
            count=POOL if nonces is not None else BARE_POOL,
            expect=expect,
            seconds=seconds,
            cycle=nonces is None,
        )  # fmt: skip
        for i in range(clients)
    ]
    procs = [ctx.Process(target=_client, args=(job, start, results)) for job in jobs]
    for proc in procs:
        proc.start()
    # A client that failed before it was ready broke the barrier; its error is in results.
    with contextlib.suppress(threading.BrokenBarrierError):
        start.wait(timeout=600)
    server0 = _server_cpu(pid)
    outcomes = []
    for _ in procs:
        outcomes.append(results.get(timeout=seconds + 120))
        if outcomes[-1].get("error"):
            start.abort()  # the others may still wait at the barrier
            break
    server = _server_cpu(pid) - server0
    for proc in procs:
        proc.join()
    if nonces is not None:
        for i in range(clients):
            nonces[i] += POOL
    errors = [o["error"] for o in outcomes if o.get("error")]
    if errors:
        raise RuntimeError(f"{kind} on port {port}: {errors[0]}")
    if any(o["exhausted"] for o in outcomes):
        raise RuntimeError(f"a client used all {POOL} pre-signed requests: raise POOL")
    sent = sum(o["sent"] for o in outcomes)
    return {
        "req_per_s": sum(o["sent"] / o["elapsed"] for o in outcomes),
        "client_cpu_ms": 1e3 * sum(o["cpu"] for o in outcomes) / sent,
        "server_cpu_ms": 1e3 * server / sent,
    }


# -- servers -------------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _call(
    port: int, method: str, uri: str, body: bytes = b"", headers: dict[str, str] | None = None
) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request(method, uri, body=body, headers=headers or {})
        answer = connection.getresponse()
        return answer.status, answer.read()
    finally:
        connection.close()


@contextmanager
def _process(command: list[str], port: int, env: dict[str, str]) -> Iterator[int]:
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
                raise RuntimeError(f"{command[:4]} exited with {proc.returncode}: {err}")
            try:
                if _call(port, "GET", "/health")[0] == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{command[:4]} did not come up within 60 s")
            time.sleep(0.1)
        yield proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextmanager
def _database(name: str, server: str) -> Iterator[str]:
    """A fresh, migrated database: a SQLite file, or a PostgreSQL schema dropped after."""
    if name == "sqlite":
        with tempfile.TemporaryDirectory(prefix="paycore-http-bench-") as folder:
            url = f"sqlite:///{Path(folder) / 'bench.sqlite3'}"
            store = SqlStorage(url)
            store.migrate()
            store.close()
            yield url
        return
    admin_url = database_url(server)
    schema = f"paycore_bench_{uuid.uuid4().hex[:12]}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    url = admin_url.update_query_dict({"options": f"-csearch_path={schema}"})
    try:
        store = SqlStorage(url)
        store.migrate()
        store.close()
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


def _register(port: int, clients: int) -> None:
    owner = PrivateKey(hashlib.sha256(b"http-bench-owner").digest())
    owner_address = public_key_to_address(owner.public_key.format(compressed=False))
    for i in range(clients):
        public_key = "0x" + _session_key(i).public_key.format(compressed=False).hex()
        body = json.dumps(
            {
                "ownerAddress": owner_address,
                "publicKey": public_key,
                "signature": _sign(owner, public_key),
            }
        ).encode()
        status, answer = _call(
            port, "POST", PREFIX + "/auth/register-pubkey", body,
            {"content-type": "application/json"},
        )  # fmt: skip
        if status != 200:
            raise RuntimeError(f"register-pubkey: {status} {answer[:200]!r}")


def _signed_call(port: int, kind: str, uri: str, nonce: int) -> tuple[int, bytes]:
    key = _session_key(0)
    signed = uri.encode() if kind == "get" else INVOICE_BODY
    headers = {
        "x-session-nonce": str(nonce),
        "x-session-signature": _sign(key, f"sess:{nonce}:{hashlib.sha256(signed).hexdigest()}"),
        "content-type": "application/json",
    }
    if kind == "get":
        return _call(port, "GET", uri, headers=headers)
    return _call(port, "POST", uri, INVOICE_BODY, headers)


def _bench_pair(
    framework: str, db: str, url: str, args: argparse.Namespace, folder: Path
) -> list[dict[str, Any]]:
    py = sys.executable
    paycore_port, bare_port, floor_port = _free_port(), _free_port(), _free_port()
    # The floor's twins, at the libraries' best where the threaded one may not be
    # (bare_app.py): on PostgreSQL the async driver, on a SQLite file the loop itself.
    twin_kind = {"postgresql": "async", "sqlite": "inline"}[db] if framework == "litestar" else None
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAYCORE_")}
    env.update(
        {
            "PAYCORE_DATABASE_URL": url,
            "PAYCORE_AUTH_MODE": "strict",
            "PAYCORE_SESSION_KEY_CAP": str(2 * args.clients + 1),
            "PAYCORE_PRICES": json.dumps({ETH_1: "3000"}),
        }
    )
    serve = [
        py, "-m", "paycore.runtime.cli", "serve", "--framework", framework,
        "--port", str(paycore_port), "--prefix", PREFIX,
    ]  # fmt: skip
    rows: list[dict[str, Any]] = []
    with _process(serve, paycore_port, env) as paycore_pid:
        _register(paycore_port, 2 * args.clients)
        nonces = [1] * (2 * args.clients)
        status, created = _signed_call(paycore_port, "post", PREFIX + "/invoice", nonces[0])
        nonces[0] += 1
        if status != 201:
            raise RuntimeError(f"POST /invoice: {status} {created[:200]!r}")
        uri = f"{PREFIX}/invoice/{json.loads(created)['guid']}"
        status, read = _signed_call(paycore_port, "get", uri, nonces[0])
        nonces[0] += 1
        if status != 200:
            raise RuntimeError(f"GET {uri}: {status} {read[:200]!r}")
        public = http.client.HTTPConnection("127.0.0.1", paycore_port, timeout=30)
        public.request("GET", uri)
        answer = public.getresponse()
        answer.read()
        ETAGS[uri] = answer.getheader("etag") or '"*"'
        public.close()
        bodies = folder / f"bodies-{framework}-{db}.json"
        bodies.write_text(json.dumps({"get": read.decode(), "post": created.decode()}))
        bare = [
            py, str(HERE / "bare_app.py"), "--framework", framework,
            "--port", str(bare_port), "--bodies", str(bodies),
        ]  # fmt: skip
        floor = [
            py, str(HERE / "bare_app.py"), "--framework", framework,
            "--port", str(floor_port), "--bodies", str(bodies), "--floor", url,
        ]  # fmt: skip
        # Both floors spend nonces of the same keys into the same table: one counter.
        floor_nonces = [1] * (2 * args.clients)
        with contextlib.ExitStack() as stack:
            bare_pid = stack.enter_context(_process(bare, bare_port, env))
            floor_pid = stack.enter_context(_process(floor, floor_port, env))
            targets = {
                "paycore": (paycore_pid, paycore_port, nonces),
                "bare": (bare_pid, bare_port, None),
                "floor": (floor_pid, floor_port, floor_nonces),
            }
            if twin_kind is not None:
                twin_port = _free_port()
                floor_twin = [*floor, f"--floor-{twin_kind}"]
                floor_twin[floor_twin.index("--port") + 1] = str(twin_port)
                targets[f"floor_{twin_kind}"] = (
                    stack.enter_context(_process(floor_twin, twin_port, env)),
                    twin_port,
                    floor_nonces,  # spent into the sync floor's table: its counters
                )
            # warm-up: connections, prepared statements, caches
            for pid, port, signed in targets.values():
                _load(pid, port, "get", uri, args.clients, 0.5, signed, 200)
            # The signed GET's fuller floor: the nonce, then the invoice's SELECT; the
            # POST's: the nonce and the invoice's row (the async floor has no write).
            read_uri = uri.replace(PREFIX + "/invoice/", PREFIX + "/read/invoice/", 1)
            sides = dict(targets)
            for name in ("floor", "floor_async", "floor_inline"):
                if name in targets:
                    sides[f"{name}_read"] = targets[name]
                    if name != "floor_async":
                        sides[f"{name}_write"] = targets[name]
            samples: dict[tuple[str, str], list[dict[str, float]]] = {}
            for rep in range(args.reps):
                for kind in args.kinds:
                    for side, (pid, port, signed) in sides.items():
                        if side.endswith("_read") and kind != "get":
                            continue
                        if side.endswith("_write") and kind != "post":
                            continue
                        path = PREFIX + "/invoice" if kind == "post" else uri
                        path = read_uri if side.endswith("_read") else path
                        path = PREFIX + "/write/invoice" if side.endswith("_write") else path
                        result = _load(
                            pid, port, kind, path, args.clients, args.seconds,
                            signed if SIGNED[kind] else None, EXPECT[kind],
                        )  # fmt: skip
                        samples.setdefault((kind, side), []).append(result)
                        _log(
                            f"{framework}/{db} rep {rep + 1}: {kind} {side} "
                            f"{result['req_per_s']:.0f} req/s, server "
                            f"{result['server_cpu_ms']:.2f} ms CPU/req"
                        )
            # The client check: twice the client processes against the bare app.
            check = "get" if "get" in args.kinds else "public"
            check_path = uri
            twice = 2 * args.clients
            doubled = [
                _load(bare_pid, bare_port, check, check_path, twice, args.seconds, None, 200)
                for _ in range(args.reps)
            ]
    common = {
        "bench": "http", "framework": framework,
        "server": "gunicorn+uvicorn-worker" if framework == "litestar" else "gunicorn+asgi-front",
        "db": db, "clients": args.clients, "seconds": args.seconds, "reps": args.reps,
        "stat": "median", "server_processes": 1,
    }  # fmt: skip

    def median(kind: str, side: str, field: str) -> float:
        return statistics.median(s[field] for s in samples[(kind, side)])

    def faster(kind: str, side: str, prefix: str) -> tuple[str, str, dict[str, Any]]:
        """The floor kept for ``kind`` -- the fastest of the sync (threaded) side and its
        twins measured here, async or inline -- its side, its name (a ``TWIN_NOTES`` key)
        and every figure with the name kept, for the line."""
        names = {"sync": side}
        for name in ("async", "inline"):
            twin = side.replace("floor", f"floor_{name}", 1)
            if (kind, twin) in samples:
                names[name] = twin
        rates = {name: median(kind, twin, "req_per_s") for name, twin in names.items()}
        kept = max(rates, key=lambda name: rates[name])
        fields = {f"{prefix}_{name}_req_per_s": round(rate, 1) for name, rate in rates.items()}
        return names[kept], kept, {**fields, f"{prefix}_kept": kept}

    for kind in args.kinds:
        ours, ceiling = median(kind, "paycore", "req_per_s"), median(kind, "bare", "req_per_s")
        rows.append(
            {
                **common,
                "endpoint": ENDPOINTS[kind],
                "figure": "req_per_s",
                "value": round(ours, 1),
                "ceiling": "bare_req_per_s",
                "ceiling_value": round(ceiling, 1),
                "ratio": round(ours / ceiling, 3),
                "server_cpu_ms_per_req": round(median(kind, "paycore", "server_cpu_ms"), 3),
                "bare_server_cpu_ms_per_req": round(median(kind, "bare", "server_cpu_ms"), 3),
                "client_cpu_ms_per_req": round(median(kind, "paycore", "client_cpu_ms"), 3),
            }
        )
        side, kept, both = faster(kind, "floor", "floor")
        floor = median(kind, side, "req_per_s")
        rows.append(
            {
                **common,
                "endpoint": ENDPOINTS[kind],
                "figure": "req_per_s",
                "value": round(ours, 1),
                "ceiling": "floor_req_per_s",
                "ceiling_value": round(floor, 1),
                "ratio": round(ours / floor, 3),
                "target": TARGETS[kind],
                "note": FLOOR_NOTES[kind] + TWIN_NOTES[kept],
                "floor_over_bare": round(floor / ceiling, 3),
                "floor_server_cpu_ms_per_req": round(median(kind, side, "server_cpu_ms"), 3),
                **both,
            }
        )
        if kind == "post":
            side, kept, both = faster(kind, "floor_write", "floor_with_write")
            fuller = median(kind, side, "req_per_s")
            rows.append(
                {
                    **common,
                    "endpoint": ENDPOINTS[kind],
                    "figure": "req_per_s",
                    "value": round(ours, 1),
                    "ceiling": "floor_with_write_req_per_s",
                    "ceiling_value": round(fuller, 1),
                    "ratio": round(ours / fuller, 3),
                    "target": TARGETS[kind],
                    "note": FLOOR_NOTES["post_write"] + TWIN_NOTES[kept],
                    "floor_with_write_server_cpu_ms_per_req": round(
                        median(kind, side, "server_cpu_ms"), 3
                    ),
                    **both,
                }
            )
        if kind == "get":
            side, kept, both = faster(kind, "floor_read", "floor_with_read")
            fuller = median(kind, side, "req_per_s")
            rows.append(
                {
                    **common,
                    "endpoint": ENDPOINTS[kind],
                    "figure": "req_per_s",
                    "value": round(ours, 1),
                    "ceiling": "floor_with_read_req_per_s",
                    "ceiling_value": round(fuller, 1),
                    "ratio": round(ours / fuller, 3),
                    "target": TARGETS[kind],
                    "note": FLOOR_NOTES["get_read"] + TWIN_NOTES[kept],
                    "floor_with_read_server_cpu_ms_per_req": round(
                        median(kind, side, "server_cpu_ms"), 3
                    ),
                    **both,
                }
            )
    single = median(check, "bare", "req_per_s")
    double = statistics.median(d["req_per_s"] for d in doubled)
    rows.append(
        {
            **common,
            "endpoint": ENDPOINTS[check] + " (bare)",
            "figure": "client_check",
            "value": round(double, 1),
            "ceiling": f"bare_req_per_s_with_{args.clients}_clients",
            "ceiling_value": round(single, 1),
            "ratio": round(double / single, 3),
            "note": f"bare GET with {2 * args.clients} client processes over "
            f"{args.clients}: near 1 means the server, not the client, was the limit",
            "client_cpu_ms_per_req": round(median(check, "bare", "client_cpu_ms"), 3),
            "bare_server_cpu_ms_per_req": round(median(check, "bare", "server_cpu_ms"), 3),
        }
    )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="duration of each case")
    parser.add_argument("--reps", type=int, default=3, help="repetitions (median; >= 3)")
    parser.add_argument("--clients", type=int, default=4, help="client processes")
    parser.add_argument("--only", choices=("litestar", "flask"), help="one framework")
    parser.add_argument("--db", choices=("sqlite", "postgresql"), help="one database")
    parser.add_argument(
        "--kinds",
        default=",".join(KINDS),
        help=f"comma-separated cases to run, of {','.join(KINDS)}",
    )
    parser.add_argument(
        "--postgres",
        default=os.environ.get("PAYCORE_BENCH_POSTGRES_URL", DEFAULT_POSTGRES),
        help="PostgreSQL server URL (env PAYCORE_BENCH_POSTGRES_URL)",
    )
    args = parser.parse_args(argv)
    if args.reps < 3:
        parser.error("--reps must be at least 3: one repetition's figure is noise")
    args.kinds = tuple(k.strip() for k in args.kinds.split(",") if k.strip())
    if not args.kinds or set(args.kinds) - set(KINDS) or args.kinds == ("post",):
        parser.error(f"--kinds takes some of {','.join(KINDS)}, one of them a GET")
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="paycore-http-bench-") as folder:
        for db in ("sqlite", "postgresql"):
            if args.db not in (None, db):
                continue
            for framework in ("litestar", "flask"):
                if args.only not in (None, framework):
                    continue
                with _database(db, args.postgres) as url:
                    _log(f"{framework}/{db}: starting")
                    for row in _bench_pair(framework, db, url, args, Path(folder)):
                        _emit(row)
    _emit(
        {
            "bench": "http",
            "figure": "environment",
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            # Client, servers and PostgreSQL share these CPUs; a load average above their
            # count means other work competed with the run and the figures are rough.
            "load_average_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],
            **{p: version(p) for p in ("flask", "litestar", "uvicorn", "gunicorn")},
            "note": "one gunicorn worker process each (paycore serve, bare, floor, and for "
            "Litestar the async floor on PostgreSQL, the inline floor on SQLite), the same "
            "server settings for all",
            "elapsed_s": round(time.perf_counter() - started, 1),
        }
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
