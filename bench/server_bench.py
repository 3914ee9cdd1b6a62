"""Which production server runs ``paycore serve --workers N``: requests per second of the same
request under each candidate, at 1 and 2 worker processes, next to a bare handler.

Candidates: Flask under gunicorn (``gthread`` workers) and under granian's WSGI interface;
Litestar under uvicorn's own worker processes, under gunicorn with uvicorn's worker class
(``uvicorn-worker``) and under granian's ASGI interface. For each database (a SQLite file
and PostgreSQL, both in one run) and each worker count, every candidate is started at once on
its own port with the apps built here (``flask_app`` / ``litestar_app``: the adapter's
``create_app`` plus one bare route), and then each is measured in turn, ``--reps`` times, so
that a change in the machine's load hits every candidate alike:

- ``paycore``: an unsigned ``GET /paycore/invoice/{guid}`` of one seeded invoice (one storage
  transaction per request, the lazy-expiry read);
- ``bare``: ``GET /bare`` on the same server and the same process, a handler of the same
  framework returning the very bytes the paycore request answers (the ceiling).

The client is ``--clients`` processes, each holding ``--connections`` keep-alive connections
(blocking sockets on threads, raw HTTP/1.1, no parsing beyond Content-Length), so its cost per
request is a fraction of the server's. Its CPU time is reported beside each figure
(``client_cpu``, in cores): on this 2-core machine the client shares the CPU with the
server, so compare ratios measured in the same run, not absolute figures across machines.

Output: JSON lines on stdout (one per database, candidate and worker count, with the median
of the repetitions and ``ratio`` = paycore / bare); progress on stderr.

    python bench/server_bench.py [--seconds 2] [--reps 3] [--only gunicorn,uvicorn]
                                 [--postgres postgresql://postgres@127.0.0.1:5432/test]
"""

# No ``from __future__ import annotations``: Litestar reads the bare handler's return
# annotation at runtime, and its ``Response`` is imported inside ``litestar_app``.
import argparse
import json
import multiprocessing
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

ETH_1 = "1:0x0000000000000000000000000000000000000000"
OWNER = "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359"
DEPOSIT = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"
POSTGRES = "postgresql://postgres@127.0.0.1:5432/test"
HERE = Path(__file__).resolve().parent


def _log(text: str) -> None:
    print(f"server_bench: {text}", file=sys.stderr, flush=True)


# -- the apps the servers load (in each worker process) ----------------------------------------
def _bare_body() -> Callable[[], bytes]:
    """The bytes the bare route answers, read at its first request: the bench writes them
    once the server is up and has answered the paycore request."""
    cache: list[bytes] = []

    def body() -> bytes:
        if not cache:
            cache.append(Path(os.environ["BENCH_BARE_BODY"]).read_bytes())
        return cache[0]

    return body


def flask_app() -> Any:
    """paycore's Flask host app with ``GET /bare`` returning the paycore answer's bytes."""
    from flask import Response

    from paycore_flask import create_app

    app = create_app()
    body = _bare_body()

    @app.get("/bare")
    def bare() -> Response:
        return Response(body(), mimetype="application/json")

    return app


def litestar_app() -> Any:
    """paycore's Litestar host app with ``GET /bare``, a sync handler as paycore's calls are."""
    from litestar import Response, get

    from paycore_litestar import create_app

    body = _bare_body()

    @get("/bare", sync_to_thread=True)
    def bare() -> Response[bytes]:
        return Response(body(), media_type="application/json")

    app = create_app()
    app.register(bare)
    return app


def _servers(port: int, workers: int) -> dict[str, list[str]]:
    bin_dir = Path(sys.executable).parent
    bind = ["--host", "127.0.0.1", "--port", str(port)]
    servers = {
        "flask+gunicorn-gthread": [
            str(bin_dir / "gunicorn"),
            "--workers",
            str(workers),
            "--worker-class",
            "gthread",
            "--threads",
            "8",
            "--bind",
            f"127.0.0.1:{port}",
            "--log-level",
            "warning",
            "server_bench:flask_app()",
        ],
        "flask+granian-wsgi": [
            str(bin_dir / "granian"),
            "--interface",
            "wsgi",
            "--workers",
            str(workers),
            "--blocking-threads",
            "8",
            *bind,
            "--log-level",
            "warning",
            "--factory",
            "server_bench:flask_app",
        ],
        "litestar+uvicorn": [
            sys.executable,
            "-m",
            "uvicorn",
            "--workers",
            str(workers),
            *bind,
            "--log-level",
            "warning",
            "--no-access-log",
            "--factory",
            "server_bench:litestar_app",
        ],
        "litestar+gunicorn-uvicorn": [
            str(bin_dir / "gunicorn"),
            "--workers",
            str(workers),
            "--worker-class",
            "uvicorn_worker.UvicornWorker",
            "--bind",
            f"127.0.0.1:{port}",
            "--log-level",
            "warning",
            "server_bench:litestar_app()",
        ],
        "litestar+granian-asgi": [
            str(bin_dir / "granian"),
            "--interface",
            "asgi",
            "--workers",
            str(workers),
            *bind,
            "--log-level",
            "warning",
            "--factory",
            "server_bench:litestar_app",
        ],
    }
    return servers


# -- the database and the seeded invoice -------------------------------------------------------
@contextmanager
def _database(kind: str, tmp: Path, postgres: str) -> Iterator[str]:
    if kind == "sqlite":
        yield f"sqlite:///{tmp / 'bench.sqlite3'}"
        return
    from sqlalchemy import create_engine, text

    from paycore_storage.engine import database_url

    parsed = database_url(postgres)
    admin = create_engine(parsed)
    schema = f"bench_server_{uuid.uuid4().hex[:12]}"
    with admin.begin() as connection:
        connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    try:
        scoped = parsed.update_query_dict({"options": f"-csearch_path={schema}"})
        yield scoped.render_as_string(hide_password=False)
    finally:
        with admin.begin() as connection:
            connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


def _seed(url: str) -> str:
    from paycore import Gateway, Settings

    gateway = Gateway(Settings(database_url=url, prices={ETH_1: "3000"}))
    try:
        fields = {
            "value": "49.90",
            "chainId": 1,
            "description": "Order #10042",
            "acceptedTokens": [ETH_1],
            "address": DEPOSIT,
        }
        return gateway.create_invoice(OWNER, fields).guid
    finally:
        gateway.close()


@contextmanager
def _server(command: list[str], env: dict[str, str], port: int) -> Iterator[None]:
    proc = subprocess.Popen(
        command,
        env=env,
        cwd=HERE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while _get(port, "/health")[0] != 200:
            if proc.poll() is not None:
                err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
                raise RuntimeError(f"{command[0]} exited with {proc.returncode}: {err[-2000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{command[0]} did not come up within 60 s")
            time.sleep(0.2)
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()


# -- the client --------------------------------------------------------------------------------
def _get(port: int, path: str) -> tuple[int, bytes]:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
            sock.sendall(f"GET {path} HTTP/1.1\r\nHost: b\r\nConnection: close\r\n\r\n".encode())
            data = b""
            while chunk := sock.recv(65536):
                data += chunk
    except OSError:
        return 0, b""
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body


def _connection_loop(port: int, path: str, stop_at: float, counts: list[int], i: int) -> None:
    request = f"GET {path} HTTP/1.1\r\nHost: b\r\n\r\n".encode()
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    buffer = b""
    done = 0
    while time.monotonic() < stop_at:
        sock.sendall(request)
        while b"\r\n\r\n" not in buffer:
            chunk = sock.recv(65536)
            if not chunk:
                raise RuntimeError("server closed a keep-alive connection")
            buffer += chunk
        head, _, buffer = buffer.partition(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 200"):
            raise RuntimeError(f"unexpected answer: {head[:80]!r}")
        length = next(
            int(line.split(b":", 1)[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        while len(buffer) < length:
            chunk = sock.recv(65536)
            if not chunk:
                raise RuntimeError("server closed a connection mid-answer")
            buffer += chunk
        buffer = buffer[length:]
        done += 1
    counts[i] = done
    sock.close()


def _client_process(port: int, path: str, connections: int, seconds: float, out: Any) -> None:
    stop_at = time.monotonic() + seconds
    counts = [0] * connections
    threads = [
        threading.Thread(target=_connection_loop, args=(port, path, stop_at, counts, i))
        for i in range(connections)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    out.send((sum(counts), usage.ru_utime + usage.ru_stime))


def _measure(
    port: int, path: str, clients: int, connections: int, seconds: float
) -> dict[str, float]:
    context = multiprocessing.get_context("fork")
    pipes, procs = [], []
    for _ in range(clients):
        receive, send = context.Pipe(duplex=False)
        proc = context.Process(
            target=_client_process, args=(port, path, connections, seconds, send)
        )
        proc.start()
        pipes.append(receive)
        procs.append(proc)
    results = [pipe.recv() for pipe in pipes]
    for proc in procs:
        proc.join()
    return {
        "rps": sum(r[0] for r in results) / seconds,
        "client_cpu": sum(r[1] for r in results) / seconds,
    }


# -- the run -----------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--clients", type=int, default=2, help="client processes")
    parser.add_argument("--connections", type=int, default=4, help="connections per process")
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--databases", default="sqlite,postgresql")
    parser.add_argument("--postgres", default=POSTGRES, help="server for the postgresql rounds")
    parser.add_argument("--only", default="", help="comma-separated substrings of candidates")
    args = parser.parse_args(argv)
    wanted = [w for w in args.only.split(",") if w]
    with tempfile.TemporaryDirectory(prefix="paycore-server-bench-") as tmp_name:
        tmp = Path(tmp_name)
        for kind in args.databases.split(","):
            with _database(kind, tmp, args.postgres) as url:
                guid = _seed(url)
                env = {
                    **{k: v for k, v in os.environ.items() if not k.startswith("PAYCORE_")},
                    "PAYCORE_DATABASE_URL": url,
                    "PAYCORE_PRICES": json.dumps({ETH_1: "3000"}),
                    "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
                }
                for workers in [int(w) for w in args.workers.split(",")]:
                    _run_round(kind, workers, env, f"/paycore/invoice/{guid}", tmp, wanted, args)
    return 0


def _run_round(
    kind: str,
    workers: int,
    env: dict[str, str],
    path: str,
    tmp: Path,
    wanted: list[str],
    args: argparse.Namespace,
) -> None:
    """Every candidate up at once on its own port, measured in turns: a change in the
    machine's load during the round hits them all alike."""
    ports: dict[str, int] = {}
    with ExitStack() as stack:
        for name in _servers(0, workers):
            if wanted and not any(w in name for w in wanted):
                continue
            port = _free_port()
            framework = name.split("+")[0]
            server_env = {**env, "BENCH_BARE_BODY": str(tmp / f"{framework}.json")}
            stack.enter_context(_server(_servers(port, workers)[name], server_env, port))
            ports[name] = port
        for name, port in ports.items():
            status, answer = _get(port, path)
            if status != 200:
                raise RuntimeError(f"{name}: GET {path} answered {status}")
            (tmp / f"{name.split('+')[0]}.json").write_bytes(answer)  # read at the first /bare
        figures: dict[str, dict[str, list[dict[str, float]]]] = {}
        for name, port in ports.items():
            if _get(port, "/bare")[1] != _get(port, path)[1]:
                raise RuntimeError(f"{name}: /bare does not answer the paycore bytes")
            _measure(port, path, args.clients, args.connections, 0.5)  # warm up both
            _measure(port, "/bare", args.clients, args.connections, 0.5)
            figures[name] = {"paycore": [], "bare": []}
        _log(f"{kind} workers={workers}: {', '.join(ports)}")
        for _ in range(args.reps):
            for name, port in ports.items():
                for case, target in (("paycore", path), ("bare", "/bare")):
                    figures[name][case].append(
                        _measure(port, target, args.clients, args.connections, args.seconds)
                    )
    for name, cases in figures.items():
        _report(kind, name, workers, cases, args)


def _report(
    kind: str,
    name: str,
    workers: int,
    figures: dict[str, list[dict[str, float]]],
    args: argparse.Namespace,
) -> None:
    paycore = statistics.median(f["rps"] for f in figures["paycore"])
    bare = statistics.median(f["rps"] for f in figures["bare"])
    line = {
        "bench": "server",
        "database": kind,
        "server": name,
        "workers": workers,
        "request": "GET /paycore/invoice/{guid} (unsigned)",
        "paycore_rps": round(paycore, 1),
        "bare_rps": round(bare, 1),
        "ratio": round(paycore / bare, 3),
        "paycore_reps": [round(f["rps"], 1) for f in figures["paycore"]],
        "bare_reps": [round(f["rps"], 1) for f in figures["bare"]],
        "client_cpu": round(statistics.median(f["client_cpu"] for f in figures["paycore"]), 2),
        "concurrency": args.clients * args.connections,
    }
    print(json.dumps(line), flush=True)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


if __name__ == "__main__":
    raise SystemExit(main())
