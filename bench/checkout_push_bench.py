"""Open checkout pages one ``paycore serve`` process holds: polling against the push stream.

A checkout page learns of its invoice's changes in one of two ways:

- ``poll``: ``GET /invoice/{guid}`` every ``--interval`` seconds (2.5, the page's
  fallback), with ``If-None-Match`` (a ``304`` when nothing changed);
- ``stream``: one ``GET /invoice/{guid}/events`` (Server-Sent Events) held open.

For each mode and each number of pages in ``--pages`` (a ladder), the bench starts
``paycore serve`` (one worker process) on a fresh SQLite file or PostgreSQL schema, creates
one invoice per page, opens the pages from ``--clients`` client processes (asyncio, raw
sockets, one keep-alive connection per page), and then, playing ``paycore worker``,
commits ``--changes`` deposits to distinct invoices at ``--rate`` per second through its
own Gateway on the same database. A change's update latency is from its commit to the
moment its page holds the new version (the poll that got the new ETag; the stream message
that carried it). A rung passes when every change arrived and the p99 is under 1 s; the
figure is the largest passing number of pages. For polling the bench also prints the p99
of the poll requests themselves (the server keeping up) -- the update latency of a poll is
bounded below by its interval, so at 2.5 s no number of polling pages passes.

Ceiling: the same changes seen by a page that polls with no interval at all is no fair
floor for pages held; the comparison printed is stream against poll, same server, same
run, interleaved rung by rung. Server CPU per second of holding is printed beside each.

    python bench/checkout_push_bench.py [--pages 250,1000,2000] [--framework litestar]
                                        [--db sqlite|postgresql] [--changes 100]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import platform
import random
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
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


async def _stream_page(port: int, guid: str, until: float, seen: list[Any]) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {PREFIX}/invoice/{guid}/events HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    status, headers = await _read_head(reader)
    if status != 200:
        seen.append((guid, None))  # refused: counted as a page not held
        writer.close()
        return
    chunked = "chunked" in headers.get("transfer-encoding", "")
    messages = 0
    while time.time() < until:
        try:
            line = await asyncio.wait_for(reader.readline(), max(0.1, until - time.time()))
        except TimeoutError:
            break
        if not line:
            break
        if chunked and line.strip() and not line.startswith((b"data", b"id", b"retry", b":")):
            continue  # a chunk-size line
        if line.startswith(b"data: "):
            messages += 1
            if messages > 1:  # the first is the invoice as it was
                seen.append((guid, time.time()))
    writer.close()


def _pages(mode: str, port: int, guids: list[str], interval: float, until: float, out: Any) -> None:
    seen: list[Any] = []
    slow: list[float] = []

    async def main() -> None:
        if mode == "poll":
            tasks = [_poll_page(port, g, interval, until, seen, slow) for g in guids]
        else:
            tasks = [_stream_page(port, g, until, seen) for g in guids]
        results = await asyncio.gather(*tasks, return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:
            seen.append(("error", f"{len(errors)} pages failed: {errors[0]!r}"))

    asyncio.run(main())
    out.put({"seen": seen, "slow": slow})


# -- one rung --------------------------------------------------------------------------------
def _rung(
    mode: str, pid: int, port: int, gateway: Gateway, guids: list[str], addresses: dict[str, str],
    args: argparse.Namespace, tag: str,
) -> dict[str, Any]:  # fmt: skip
    ctx = mp.get_context("fork")
    out = ctx.Queue()
    settle = 4.0 if mode == "stream" else args.interval + 1.0
    duration = settle + args.changes / args.rate + args.interval + 2.0
    until = time.time() + duration
    shares = [guids[i :: args.clients] for i in range(args.clients)]
    procs = [
        ctx.Process(target=_pages, args=(mode, port, share, args.interval, until, out))
        for share in shares
    ]
    for proc in procs:
        proc.start()
    time.sleep(settle)  # every page open (streams) / polling at its phase
    cpu0, t0 = _server_cpu(pid), time.time()
    committed: list[tuple[str, float]] = []
    for n, guid in enumerate(random.sample(guids, min(args.changes, len(guids)))):
        deposit = Deposit(
            CHAIN, f"0x{tag}{n:056x}", -1, NATIVE, PAYER, addresses[guid],
            Decimal("0.0001"), gateway.now(),
        )  # fmt: skip
        gateway.record_deposit(deposit)
        committed.append((guid, time.time()))
        time.sleep(max(0.0, t0 + (n + 1) / args.rate - time.time()))
    held_cpu = _server_cpu(pid) - cpu0
    held_for = time.time() - t0
    results = [out.get(timeout=duration + 120) for _ in procs]
    for proc in procs:
        proc.join()
    seen: dict[str, list[float]] = {}
    refused = 0
    errors = []
    for result in results:
        for guid, when in result["seen"]:
            if guid == "error":
                errors.append(when)
            elif when is None:
                refused += 1
            else:
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

    def pct(values: list[float], q: float) -> float | None:
        return round(values[min(len(values) - 1, int(q * len(values)))], 4) if values else None

    p99 = pct(latencies, 0.99)
    return {
        "pages": len(guids),
        "mode": mode,
        "changes": len(committed),
        "missed": missed,
        "refused": refused,
        "errors": errors[:1],
        "update_p50_s": pct(latencies, 0.5),
        "update_p99_s": p99,
        "poll_request_p99_s": pct(slow, 0.99),
        "server_cpu_share": round(held_cpu / held_for, 3),
        "passes": bool(latencies)
        and not missed
        and not refused
        and not errors
        and p99 is not None
        and p99 < 1.0,
    }


@contextmanager
def _served(framework: str, url: str) -> Iterator[tuple[int, int]]:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAYCORE_")}
    env.update({"PAYCORE_DATABASE_URL": url, "PAYCORE_PRICES": json.dumps({ETH: "2000"})})
    command = [
        sys.executable, "-m", "paycore.runtime.cli", "serve", "--framework", framework,
        "--port", str(port), "--prefix", PREFIX,
    ]  # fmt: skip
    with _process(command, port, env) as pid:
        yield pid, port


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--pages", default="250,1000,2000,4000", help="the ladder of pages")
    parser.add_argument("--framework", choices=("litestar", "flask"), default="litestar")
    parser.add_argument("--db", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--modes", default="poll,stream")
    parser.add_argument("--interval", type=float, default=2.5, help="seconds between polls")
    parser.add_argument("--changes", type=int, default=100, help="changes per rung")
    parser.add_argument("--rate", type=float, default=10.0, help="changes per second")
    parser.add_argument("--clients", type=int, default=2, help="client processes")
    parser.add_argument(
        "--postgres", default=os.environ.get("PAYCORE_BENCH_POSTGRES_URL", DEFAULT_POSTGRES)
    )
    args = parser.parse_args(argv)
    ladder = [int(n) for n in args.pages.split(",")]
    modes = [m.strip() for m in args.modes.split(",")]
    load_before = os.getloadavg()[0]
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
        try:
            rung_no = 0
            for pages in ladder:  # interleaved: each rung runs every mode in turn
                for mode in modes:
                    rung_no += 1
                    with _served(args.framework, url) as (pid, port):
                        row = _rung(
                            mode, pid, port, gateway, guids[:pages], addresses, args,
                            f"{tag}{rung_no:04x}",
                        )  # fmt: skip
                    row.update(
                        {"bench": "checkout_push", "framework": args.framework, "db": args.db,
                         "interval_s": args.interval, "load_1min": round(os.getloadavg()[0], 2)}
                    )  # fmt: skip
                    print(json.dumps(row), flush=True)
                    _log(
                        f"{mode} {pages} pages: p99 {row['update_p99_s']} s, missed "
                        f"{row['missed']}, refused {row['refused']}, cpu {row['server_cpu_share']}"
                    )
        finally:
            gateway.close()
    print(
        json.dumps(
            {"bench": "checkout_push", "figure": "environment", "cpus": os.cpu_count(),
             "python": platform.python_version(),
             "load_average_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)]}
        ),
        flush=True,
    )  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
