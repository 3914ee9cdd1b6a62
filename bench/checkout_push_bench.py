"""Open checkout pages one ``paycore serve`` process holds: the push stream, its ceiling, polling.

A checkout page learns of its invoice's changes in one of two ways:

- ``stream``: one ``GET /invoice/{guid}/events`` (Server-Sent Events) held open;
- ``poll``: ``GET /invoice/{guid}`` every ``--interval`` seconds (2.5, the page's
  fallback), with ``If-None-Match`` (a ``304`` when nothing changed).

The ceiling, ``bare``: the same number of streams held by a bare Litestar app under the same
server (``bare_stream_app.py``: a coroutine per stream, one fixed message per change, no
heartbeat, no storage), each change a ``POST /bump/{guid}`` to it.

For each number of pages in ``--pages`` (a ladder), ``--runs`` times, each mode in turn
(interleaved), the bench starts ``paycore serve`` (one worker process, ``--worker-connections``
above the pages) on a fresh SQLite file or PostgreSQL schema holding one invoice per page, or
the bare app; opens the pages from ``--clients`` client processes (one per core by default:
asyncio, raw sockets through ``asyncio.Protocol``, no HTTP parsing beyond the status line and
a count of ``id:`` lines, each stream one connection), gradually (``--open-rate`` a second in
all); measures the server's memory per open stream and its CPU while the pages sit idle
(``--quiet`` seconds); then, playing ``paycore worker``, commits ``--changes`` deposits to
distinct invoices at ``--rate`` a second through its own Gateway on the same database (for
``bare``: bumps), while a thread sends plain ``GET /invoice/{guid}`` requests (``--gets``)
and times them. A change's update latency is from its commit to the moment its page has
the new version's ``id:`` line. A rung passes when every page opened, every change arrived
and the p99 is under 1 s. Printed per rung (JSON lines) and as medians of the runs: the
update p50/p99, missed changes, server CPU share idle and under changes, the client
processes' CPU share, memory per stream, the plain GETs' p99.

    python bench/checkout_push_bench.py [--pages 10000] [--modes stream,bare]
                                        [--db sqlite|postgresql] [--runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.client
import json
import multiprocessing as mp
import os
import platform
import random
import statistics
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path
from typing import Any

from http_bench import _database, _process, _server_cpu

import paycore_storage.plugin
from paycore import NATIVE, Deposit, Gateway, Settings

PREFIX = "/paycore"
CHAIN = 31337
ETH = f"{CHAIN}:{NATIVE}"
PAYER = "0x" + "22" * 20
OWNER = "0x" + "33" * 20
DEFAULT_POSTGRES = "postgresql://postgres@127.0.0.1:5432/test"


def _log(text: str) -> None:
    print(f"checkout_push_bench: {text}", file=sys.stderr, flush=True)


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


# -- the pages: asyncio clients in their own processes -------------------------------------
async def _read_head(reader: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
    lines = head.split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name:
            headers[name.strip().lower()] = value.strip()
    return status, headers


async def _poll_page(
    port: int, guid: str, interval: float, until: float, seen: list[Any], slow: list[float]
) -> None:
    await asyncio.sleep(random.random() * interval)  # pages opened at random phases
    etag = ""
    connection: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
    while time.time() < until:
        began = time.time()
        match = f"If-None-Match: {etag}\r\n" if etag else ""
        request = f"GET {PREFIX}/invoice/{guid} HTTP/1.1\r\nHost: x\r\n{match}\r\n"
        for attempt in (1, 2):  # the server may have closed an idle keep-alive connection
            if connection is None:
                connection = await asyncio.open_connection("127.0.0.1", port)
            reader, writer = connection
            try:
                writer.write(request.encode())
                status, headers = await _read_head(reader)
                length = int(headers.get("content-length", "0"))
                if length:
                    await reader.readexactly(length)
                break
            except (asyncio.IncompleteReadError, ConnectionError):
                writer.close()
                connection = None
                if attempt == 2:
                    raise
        done = time.time()
        slow.append(done - began)
        if status == 200 and headers.get("etag") != etag:
            if etag:
                seen.append((guid, done))
            etag = headers["etag"]
        if headers.get("connection", "").lower() == "close" and connection is not None:
            connection[1].close()
            connection = None
        await asyncio.sleep(max(0.0, interval - (done - began)))
    if connection is not None:
        connection[1].close()


class _Page(asyncio.Protocol):
    """One open stream, read with no HTTP parsing: the status line's code, then a count of
    ``id: `` lines (an SSE message's id; the compact JSON of the data never holds one)."""

    def __init__(self, guid: str, request: bytes, seen: list[Any]) -> None:
        self.guid = guid
        self.request = request
        self.seen = seen
        self.status: bytes | None = None
        self.messages = 0
        self.tail = b""
        self.lost = False
        self.opened = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        typing_transport: Any = transport
        typing_transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        if self.status is None:
            self.status = data[9:12]
            if self.status != b"200":
                self._open(False)
                return
        found = (self.tail + data).count(b"id: ")
        self.tail = data[-3:]
        if not found:
            return
        now = time.time()
        for _ in range(found):
            self.messages += 1
            if self.messages == 1:
                self._open(True)
            else:  # the first is the invoice as it was
                self.seen.append((self.guid, now))

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self._open(False)

    def _open(self, ok: bool) -> None:
        if not self.opened.done():
            self.opened.set_result(ok)


def _cpu_of(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _pages(
    mode: str, port: int, guids: list[str], interval: float, open_rate: float,
    ready: Any, stop: Any, out: Any,
) -> None:  # fmt: skip
    """One client process: its share of the pages, opened ``open_rate`` a second, held
    until ``stop`` is set."""
    seen: list[Any] = []
    slow: list[float] = []

    async def streams() -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        pages: list[_Page] = []
        waits = []
        began = time.time()
        for n, guid in enumerate(guids):
            request = f"GET {PREFIX}/invoice/{guid}/events HTTP/1.1\r\nHost: x\r\n\r\n"
            page = _Page(guid, request.encode(), seen)
            pages.append(page)
            try:
                await loop.create_connection(lambda page=page: page, "127.0.0.1", port)
            except OSError:
                page._open(False)
            waits.append(page.opened)
            pause = began + (n + 1) / open_rate - time.time()
            if pause > 0:
                await asyncio.sleep(pause)
        opened = await asyncio.gather(*waits)
        ready.put({"opened": sum(opened), "pages": len(guids), "open_s": time.time() - began})
        while not stop.is_set():
            await asyncio.sleep(0.2)
        return {
            "refused": sum(1 for ok in opened if not ok),
            "lost": sum(1 for p in pages if p.lost),
        }

    async def polls() -> dict[str, Any]:
        until = time.time() + 10_000
        tasks = [
            asyncio.ensure_future(_poll_page(port, g, interval, until, seen, slow)) for g in guids
        ]
        ready.put({"opened": len(guids), "pages": len(guids), "open_s": 0.0})
        while not stop.is_set():
            await asyncio.sleep(0.2)
        for task in tasks:
            task.cancel()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        errors = [
            r for r in results
            if isinstance(r, BaseException) and not isinstance(r, asyncio.CancelledError)
        ]  # fmt: skip
        return {"refused": 0, "lost": 0, "errors": len(errors)}

    summary = asyncio.run(polls() if mode == "poll" else streams())
    out.put({"seen": seen, "slow": slow, **summary})


def _rss_kb(pid: int) -> int:
    """Resident memory of the process and its children (gunicorn's worker), KiB."""
    total = 0
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
    except FileNotFoundError:
        return 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(FileNotFoundError):
            total += sum(_rss_kb(int(c)) for c in (task / "children").read_text().split())
    return total


def _plain_gets(port: int, guids: list[str], every: float, stop: threading.Event) -> list[float]:
    """Plain ``GET /invoice/{guid}`` on a keep-alive connection, one each ``every`` s."""
    times: list[float] = []
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        while not stop.is_set():
            began = time.perf_counter()
            connection.request("GET", f"{PREFIX}/invoice/{random.choice(guids)}")
            answer = connection.getresponse()
            answer.read()
            times.append(time.perf_counter() - began)
            if answer.status != 200:
                times[-1] = float("inf")
            stop.wait(every)
    finally:
        connection.close()
    return times


# -- one rung --------------------------------------------------------------------------------
def _rung(
    mode: str, pid: int, port: int, gateway: Gateway, guids: list[str], addresses: dict[str, str],
    args: argparse.Namespace, tag: str,
) -> dict[str, Any]:  # fmt: skip
    ctx = mp.get_context("fork")
    out, ready, stop = ctx.Queue(), ctx.Queue(), ctx.Event()
    shares = [guids[i :: args.clients] for i in range(args.clients)]
    rss_before = _rss_kb(pid)
    procs = [
        ctx.Process(
            target=_pages,
            args=(
                mode,
                port,
                share,
                args.interval,
                args.open_rate / args.clients,
                ready,
                stop,
                out,
            ),
        )  # fmt: skip
        for share in shares
    ]
    for proc in procs:
        proc.start()
    opened = [ready.get(timeout=len(guids) / args.open_rate * 4 + 120) for _ in procs]
    open_s = max(o["open_s"] for o in opened)
    if mode == "poll":
        time.sleep(args.interval + 1.0)  # every page polling at its phase
    time.sleep(1.0)
    rss_after = _rss_kb(pid)
    # Quiet: every page open, nothing changing.
    cpu0, clients0, t0 = _server_cpu(pid), sum(_cpu_of(p.pid) for p in procs), time.time()
    time.sleep(args.quiet)
    quiet_for = time.time() - t0
    idle_cpu = (_server_cpu(pid) - cpu0) / quiet_for
    idle_clients = (sum(_cpu_of(p.pid) for p in procs) - clients0) / quiet_for
    # Changes, with plain GETs meanwhile.
    stop_gets = threading.Event()
    gets: list[float] = []
    getter = threading.Thread(
        target=lambda: gets.extend(_plain_gets(port, guids, args.changes / args.rate / args.gets,
                                               stop_gets))
    )  # fmt: skip
    getter.start()
    bumper = http.client.HTTPConnection("127.0.0.1", port, timeout=30) if mode == "bare" else None
    cpu0, clients0, t0 = _server_cpu(pid), sum(_cpu_of(p.pid) for p in procs), time.time()
    committed: list[tuple[str, float]] = []
    for n, guid in enumerate(random.sample(guids, min(args.changes, len(guids)))):
        if bumper is not None:
            at = time.time()
            bumper.request("POST", f"/bump/{guid}")
            bumper.getresponse().read()
        else:
            deposit = Deposit(
                CHAIN, f"0x{tag}{n:056x}", -1, NATIVE, PAYER, addresses[guid],
                Decimal("0.0001"), gateway.now(),
            )  # fmt: skip
            gateway.record_deposit(deposit)
            at = time.time()
        committed.append((guid, at))
        time.sleep(max(0.0, t0 + (n + 1) / args.rate - time.time()))
    held_for = time.time() - t0
    held_cpu = (_server_cpu(pid) - cpu0) / held_for
    held_clients = (sum(_cpu_of(p.pid) for p in procs) - clients0) / held_for
    time.sleep(args.interval + 2.0 if mode == "poll" else 2.0)  # the last changes' way
    stop_gets.set()
    getter.join()
    if bumper is not None:
        bumper.close()
    stop.set()
    results = [out.get(timeout=120) for _ in procs]
    for proc in procs:
        proc.join()
    seen: dict[str, list[float]] = {}
    for result in results:
        for guid, when in result["seen"]:
            seen.setdefault(guid, []).append(when)
    latencies = []
    missed = 0
    for guid, at in committed:
        later = [t for t in seen.get(guid, []) if t >= at]
        if later:
            latencies.append(min(later) - at)
        else:
            missed += 1
    latencies.sort()
    slow = sorted(s for r in results for s in r["slow"])
    gets.sort()
    not_opened = len(guids) - sum(o["opened"] for o in opened)
    p99 = _pct(latencies, 0.99)
    return {
        "pages": len(guids),
        "mode": mode,
        "changes": len(committed),
        "missed": missed,
        "not_opened": not_opened,
        "lost": sum(r["lost"] for r in results),
        "open_s": round(open_s, 2),
        "update_p50_s": _pct(latencies, 0.5),
        "update_p99_s": p99,
        "update_max_s": round(latencies[-1], 4) if latencies else None,
        "over_1s": sum(1 for t in latencies if t >= 1.0),
        "poll_request_p99_s": _pct(slow, 0.99),
        "plain_get_p99_s": _pct(gets, 0.99),
        "plain_gets": len(gets),
        "kib_per_stream": round((rss_after - rss_before) / max(1, len(guids)), 1),
        "server_rss_mib": round(rss_after / 1024, 1),
        "server_cpu_idle": round(idle_cpu, 3),
        "server_cpu_changes": round(held_cpu, 3),
        "client_cpu_idle": round(idle_clients, 3),
        "client_cpu_changes": round(held_clients, 3),
        "passes": bool(latencies)
        and not missed
        and not not_opened
        and p99 is not None
        and p99 < 1.0,
    }


def _pct(values: list[float], q: float) -> float | None:
    return round(values[min(len(values) - 1, int(q * len(values)))], 4) if values else None


@contextmanager
def _served(mode: str, framework: str, url: str, connections: int) -> Iterator[tuple[int, int]]:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAYCORE_")}
    env.update({"PAYCORE_DATABASE_URL": url, "PAYCORE_PRICES": json.dumps({ETH: "2000"})})
    if mode == "bare":
        here = Path(__file__).resolve().parent
        command = [
            sys.executable, str(here / "bare_stream_app.py"), "--port", str(port),
            "--connections", str(connections),
        ]  # fmt: skip
    else:
        command = [
            sys.executable, "-m", "paycore.runtime.cli", "serve", "--framework", framework,
            "--port", str(port), "--prefix", PREFIX, "--worker-connections", str(connections),
        ]  # fmt: skip
    with _process(command, port, env) as pid:
        yield pid, port


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--pages", default="10000", help="the ladder of pages")
    parser.add_argument("--framework", choices=("litestar", "flask"), default="litestar")
    parser.add_argument("--db", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--modes", default="stream,bare", help="stream, bare, poll")
    parser.add_argument("--runs", type=int, default=3, help="runs of each rung (medians)")
    parser.add_argument("--interval", type=float, default=2.5, help="seconds between polls")
    parser.add_argument("--changes", type=int, default=200, help="changes per rung")
    parser.add_argument("--rate", type=float, default=20.0, help="changes per second")
    parser.add_argument("--gets", type=int, default=100, help="plain GETs during the changes")
    parser.add_argument("--quiet", type=float, default=8.0, help="seconds held idle")
    parser.add_argument("--open-rate", type=float, default=1000.0, help="pages opened a second")
    parser.add_argument("--clients", type=int, default=os.cpu_count() or 2, help="processes")
    parser.add_argument(
        "--postgres", default=os.environ.get("PAYCORE_BENCH_POSTGRES_URL", DEFAULT_POSTGRES)
    )
    args = parser.parse_args(argv)
    ladder = [int(n) for n in args.pages.split(",")]
    modes = [m.strip() for m in args.modes.split(",")]
    load_before = os.getloadavg()[0]
    rows: list[dict[str, Any]] = []
    with _database(args.db, args.postgres) as url:
        gateway = Gateway(
            Settings(database_url=url, prices={ETH: "2000"}, checkout_url="http://x/checkout"),
            entry_points=False,
            plugins=[paycore_storage.plugin],
        )
        tag = uuid.uuid4().hex[:8]
        guids: list[str] = []
        addresses: dict[str, str] = {}
        for n in range(max(ladder)):
            invoice = gateway.create_invoice(
                OWNER,
                {"description": f"page {n}", "value": "1000", "chainId": CHAIN,
                 "acceptedTokens": [ETH], "address": f"0x{tag}{n:032x}"},
            )  # fmt: skip
            guids.append(invoice.guid)
            addresses[invoice.guid] = invoice.address
        _log(f"{len(guids)} invoices created")
        try:
            rung_no = 0
            for pages in ladder:
                for run in range(args.runs):  # interleaved: each run runs every mode in turn
                    for mode in modes:
                        rung_no += 1
                        with _served(mode, args.framework, url, pages + 2000) as (pid, port):
                            row = _rung(
                                mode, pid, port, gateway, guids[:pages], addresses, args,
                                f"{tag}{rung_no:04x}",
                            )  # fmt: skip
                        row.update(
                            {"bench": "checkout_push", "run": run + 1,
                             "framework": args.framework if mode != "bare" else "litestar",
                             "db": args.db if mode != "bare" else None,
                             "load_1min": round(os.getloadavg()[0], 2)}
                        )  # fmt: skip
                        rows.append(row)
                        print(json.dumps(row), flush=True)
                        _log(
                            f"{mode} {pages} pages run {run + 1}: p99 {row['update_p99_s']} s, "
                            f"missed {row['missed']}, not opened {row['not_opened']}, cpu idle "
                            f"{row['server_cpu_idle']} / changes {row['server_cpu_changes']}, "
                            f"clients {row['client_cpu_changes']}, "
                            f"{row['kib_per_stream']} KiB/stream, gets p99 "
                            f"{row['plain_get_p99_s']}"
                        )
        finally:
            gateway.close()
    for pages in ladder:
        for mode in modes:
            mine = [r for r in rows if r["pages"] == pages and r["mode"] == mode]
            median = {
                key: _median([r[key] for r in mine])
                for key in ("update_p50_s", "update_p99_s", "plain_get_p99_s", "kib_per_stream",
                            "server_cpu_idle", "server_cpu_changes", "client_cpu_idle",
                            "client_cpu_changes", "open_s", "server_rss_mib")
            }  # fmt: skip
            print(
                json.dumps(
                    {"bench": "checkout_push", "figure": "median", "pages": pages, "mode": mode,
                     "db": args.db, "runs": len(mine),
                     "passed": sum(1 for r in mine if r["passes"]),
                     "missed": [r["missed"] for r in mine],
                     "not_opened": [r["not_opened"] for r in mine], **median}
                ),
                flush=True,
            )  # fmt: skip
    print(
        json.dumps(
            {"bench": "checkout_push", "figure": "environment", "cpus": os.cpu_count(),
             "python": platform.python_version(),
             "load_average_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)]}
        ),
        flush=True,
    )  # fmt: skip
    return 0


def _median(values: list[Any]) -> Any:
    known = [v for v in values if v is not None]
    return round(statistics.median(known), 4) if known else None


if __name__ == "__main__":
    raise SystemExit(main())
