"""``paycore serve`` as an outsider meets it: idle sockets and slowloris clients cannot stop
it answering, and the socket caps refuse the excess with 429 / close 4429.

Every server here is the real ``paycore serve`` process (gunicorn, uvicorn's worker, the
Flask app behind its ASGI front or Litestar), on a SQLite file and on PostgreSQL. The idle
upgrades come from 40 loopback source addresses (127.0.0.10-49), as many clients would,
so the per-address caps at their defaults let them in; every connection is loopback, every
wait bounded.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import http.client
import resource
import secrets
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from realtime_helpers import (
    ETH,
    PREFIX,
    Client,
    Clock,
    Merchant,
    Nonces,
    account,
    register_frame,
    registration,
    start_serve_process,
)
from sqlalchemy import URL

import paycore_storage.plugin
from paycore import Gateway, Settings
from paycore.realtime.frames import CLOSE_TOO_MANY

pytestmark = pytest.mark.slow  # real server processes, thousands of sockets

#: Idle upgrades and slowloris connections held at once (each), per test server.
HELD = 1000
SOURCES = [f"127.0.0.{i}" for i in range(10, 50)]


def _raise_open_files(wanted: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, hard), hard))


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'capacity.sqlite3'}"
    else:
        new_schema: Callable[[], URL] = request.getfixturevalue("postgres_schema")
        url = new_schema().render_as_string(hide_password=False)
    gateway = Gateway(
        Settings(database_url=url, prices={ETH: "2000"}),
        entry_points=False,
        plugins=[paycore_storage.plugin],
        clock=Clock(),
    )
    gateway.storage.migrate()  # type: ignore[attr-defined]
    gateway.close()
    return url


@contextlib.contextmanager
def serve_process(
    framework: str, database_url: str, tmp_path: Path, **env: str
) -> Iterator[tuple[str, int]]:
    """``paycore serve`` in its own process; yields its base URL and port."""
    process, base = start_serve_process(
        framework, database_url, env, str(tmp_path / f"serve-{framework}.log")
    )
    try:
        yield base, int(base.rsplit(":", 1)[1])
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except Exception:
            process.kill()
            process.wait(timeout=10)


# -- raw clients ---------------------------------------------------------------------------
def upgrade_request(port: int) -> bytes:
    key = base64.b64encode(secrets.token_bytes(16)).decode()
    return (
        f"GET {PREFIX}/ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
        f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
    ).encode()


async def _upgrade(port: int, source: str) -> tuple[asyncio.StreamWriter, bytes]:
    """One upgrade from ``source``: the open writer and the server's response head."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))
    writer.write(upgrade_request(port))
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    return writer, head


async def _slowloris(port: int, source: str) -> asyncio.StreamWriter:
    """A request head begun and never finished."""
    _, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))
    writer.write(f"GET {PREFIX}/invoice/x HTTP/1.1\r\nHost: 127.0.0.1\r\nX-a: ".encode())
    await writer.drain()
    return writer


async def _hold(port: int, count: int) -> tuple[list[asyncio.StreamWriter], list[bytes]]:
    """``count`` idle upgrades and ``count`` slowloris connections, spread over SOURCES."""
    gate = asyncio.Semaphore(64)

    async def upgrade(i: int) -> tuple[asyncio.StreamWriter, bytes]:
        async with gate:
            return await _upgrade(port, SOURCES[i % len(SOURCES)])

    async def slow(i: int) -> asyncio.StreamWriter:
        async with gate:
            return await _slowloris(port, SOURCES[i % len(SOURCES)])

    upgraded = await asyncio.gather(*(upgrade(i) for i in range(count)))
    slowed = await asyncio.gather(*(slow(i) for i in range(count)))
    return [w for w, _ in upgraded] + list(slowed), [head for _, head in upgraded]


def timed_get(url: str) -> tuple[float, int]:
    """One GET on a new connection, timed from connect to the whole answer (a bare HTTP
    client: httpx's own setup would be timed too)."""
    parts = urlsplit(url)
    started = time.perf_counter()
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=10)
    try:
        conn.request("GET", parts.path)
        response = conn.getresponse()
        response.read()
    finally:
        conn.close()
    return time.perf_counter() - started, response.status


@pytest.mark.parametrize("framework", ["flask", "litestar"])
def test_idle_upgrades_and_slowloris_do_not_stop_the_server(
    framework: str, db_url: str, tmp_path: Path
) -> None:
    _raise_open_files(4 * HELD + 512)
    with serve_process(framework, db_url, tmp_path) as (base, port):
        missing = f"{base}{PREFIX}/invoice/{'0' * 32}"

        async def scenario() -> tuple[list[bytes], list[tuple[float, int]]]:
            writers, heads = await _hold(port, HELD)
            try:
                # Answers while all of them are held: a fresh client, a DB-backed read.
                timings = [await asyncio.to_thread(timed_get, url) for url in [missing] * 5]
                timings.append(await asyncio.to_thread(timed_get, base + "/health"))
                return heads, timings
            finally:
                for writer in writers:
                    writer.close()

        heads, timings = asyncio.run(asyncio.wait_for(scenario(), 120))
    switched = sum(head.startswith(b"HTTP/1.1 101") for head in heads)
    assert switched == HELD, f"{HELD - switched} upgrades were not switched"
    assert [status for _, status in timings] == [404] * 5 + [200]
    seconds = [round(s, 3) for s, _ in timings]
    assert max(seconds) < 1.0, f"answers took {seconds} s with {HELD}+{HELD} sockets held"


@pytest.mark.parametrize("framework", ["flask", "litestar"])
def test_the_per_address_caps_answer_429_with_retry_after(framework: str, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'caps.sqlite3'}"
    env = {"PAYCORE_WS_MAX_PER_IP": "5", "PAYCORE_WS_MAX_UNREGISTERED_PER_IP": "3"}
    with serve_process(framework, url, tmp_path, **env) as (base, port):

        async def scenario() -> tuple[list[bytes], bytes, bytes]:
            held = [await _upgrade(port, "127.0.0.60") for _ in range(4)]
            other = await _upgrade(port, "127.0.0.61")  # another address is not affected
            # One goes away: its place is free again.
            held[0][0].close()
            await asyncio.sleep(0.5)
            again = await _upgrade(port, "127.0.0.60")
            for writer, _ in [*held, other, again]:
                writer.close()
            return [head for _, head in held], other[1], again[1]

        heads, other, again = asyncio.run(asyncio.wait_for(scenario(), 60))
    assert all(h.startswith(b"HTTP/1.1 101") for h in heads[:3]), heads
    refused = heads[3].lower()
    assert refused.startswith(b"http/1.1 429"), heads[3]
    assert b"retry-after: 30\r\n" in refused
    assert other.startswith(b"HTTP/1.1 101") and again.startswith(b"HTTP/1.1 101")


def _idle_upgrade(port: int, source: str) -> socket.socket:
    """A blocking upgrade from ``source``, switched, then left idle."""
    conn = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0))
    conn.sendall(upgrade_request(port))
    head = b""
    while b"\r\n\r\n" not in head:
        head += conn.recv(4096)
    assert head.startswith(b"HTTP/1.1 101"), head
    return conn


def _refused_body(port: int, source: str) -> str:
    """The body of a refused upgrade, read to the end (the server closes after it)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0)) as s:
        s.sendall(upgrade_request(port))
        data = b""
        while chunk := s.recv(4096):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 429"), head
    return body.decode()


@pytest.mark.parametrize("framework", ["flask", "litestar"])
def test_the_refusal_names_the_cap(framework: str, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'caps.sqlite3'}"
    with serve_process(framework, url, tmp_path, PAYCORE_WS_MAX_PER_IP="1") as (_, port):
        first = socket.create_connection(("127.0.0.1", port), source_address=("127.0.0.62", 0))
        try:
            first.sendall(upgrade_request(port))
            assert first.recv(4096).startswith(b"HTTP/1.1 101")
            body = _refused_body(port, "127.0.0.62")
        finally:
            first.close()
    assert body == "too many requests: 1 sockets open from this address (ws_max_per_ip)"


def _registered_client(base: str, key: Any, nonces: Nonces) -> Client:
    client = Client(base)
    answer = client.register(key, nonces.next(), encryption="none")
    assert answer["type"] == "registered", answer
    return client


@pytest.mark.parametrize("framework", ["flask", "litestar"])
def test_the_per_owner_cap_closes_the_extra_socket_with_4429(
    framework: str, db_url: str, tmp_path: Path
) -> None:
    owner, key = account(f"cap-owner-{framework}"), account(f"cap-key-{framework}")
    nonces = Nonces()
    with serve_process(framework, db_url, tmp_path, PAYCORE_WS_MAX_PER_OWNER="2") as (base, _):
        answer = httpx.post(base + PREFIX + "/auth/register-pubkey", json=registration(owner, key))
        assert answer.status_code == 200, answer.text
        first = _registered_client(base, key, nonces)
        second = _registered_client(base, key, nonces)
        third = Client(base)
        third.send(register_frame(key, third.challenge, nonces.next(), encryption="none"))
        closed = third.closed()
        assert closed.code == CLOSE_TOO_MANY
        assert closed.frames == [
            {
                "type": "error",
                "message": "too many sockets: 2 sockets registered for this owner"
                " (ws_max_per_owner)",
            }
        ]
        # A socket that leaves gives its place back.
        first.close()
        deadline = time.monotonic() + 10
        while True:
            fourth = Client(base)
            answer = fourth.register(key, nonces.next(), encryption="none")
            if answer.get("type") == "registered" or time.monotonic() > deadline:
                break
            fourth.close()
            time.sleep(0.1)
        assert answer["type"] == "registered", answer
        second.close()
        fourth.close()


def test_open_file_limit_is_raised_for_the_server() -> None:
    from paycore.runtime.serve import raise_open_file_limit

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        if hard != resource.RLIM_INFINITY and soft > 64:
            resource.setrlimit(resource.RLIMIT_NOFILE, (64, hard))
        assert raise_open_file_limit(100) >= min(100, hard)
        assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] >= min(100, hard)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@pytest.mark.parametrize("framework", ["flask", "litestar"])
def test_worker_connections_caps_what_one_worker_holds(framework: str, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'conn.sqlite3'}"
    with serve_process(framework, url, tmp_path, PAYCORE_WORKER_CONNECTIONS="4") as (base, port):

        async def scenario() -> tuple[int, int]:
            held = [await _slowloris(port, "127.0.0.63") for _ in range(4)]
            await asyncio.sleep(0.3)
            try:
                _, over = await asyncio.to_thread(timed_get, base + "/health")
            finally:
                for writer in held:
                    writer.close()
            await asyncio.sleep(0.5)
            _, after = await asyncio.to_thread(timed_get, base + "/health")
            return over, after

        over, after = asyncio.run(asyncio.wait_for(scenario(), 60))
    assert (over, after) == (503, 200)


@pytest.mark.parametrize("framework", ["flask", "litestar"])
def test_pushes_reach_a_socket_of_paycore_serve_while_others_idle(
    framework: str, db_url: str, tmp_path: Path
) -> None:
    """The socket path ``paycore serve`` runs (Flask's through the ASGI front): a change
    another process commits reaches the registered socket, with 200 idle upgrades held."""
    owner, key, nonces = (
        account(f"push owner {framework}"),
        account(f"push key {framework}"),
        Nonces(),
    )
    other = Gateway(
        Settings(database_url=db_url, prices={ETH: "2000"}, checkout_url="http://127.0.0.1/c"),
        entry_points=False,
        plugins=[paycore_storage.plugin],
        clock=Clock(),
    )
    try:
        with serve_process(framework, db_url, tmp_path) as (base, port):
            answer = httpx.post(
                base + PREFIX + "/auth/register-pubkey", json=registration(owner, key)
            )
            assert answer.status_code == 200, answer.text
            client = _registered_client(base, key, nonces)

            held = [_idle_upgrade(port, SOURCES[i % len(SOURCES)]) for i in range(200)]
            merchant = Merchant(other, owner)
            invoice = merchant.invoice(value="20")  # 0.01 ETH
            merchant.pay(invoice, "0.01")
            frame = client.recv(timeout=10)
            assert [(e["guid"], e["status"]) for e in frame["events"]] == [(invoice.guid, "paid")]
            assert len(frame["eventIds"]) == 1
            for conn in held:
                conn.close()
            client.close()
    finally:
        other.close()
