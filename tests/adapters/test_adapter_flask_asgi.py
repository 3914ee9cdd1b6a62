"""Flask's ASGI front (``paycore_flask.asgi``) under a real uvicorn on loopback: what the WSGI
app sees (the raw target a signed GET covers), bodies read on the loop and capped, streamed
answers in batches with ``close()`` called, a crashing app's 500, and a client that stalls
mid-body holding no thread."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import attrs
import httpx
import pytest
from flask import Flask, Response, request

from paycore import Gateway, Settings
from paycore.api.http import MAX_BODY
from paycore.testing.client import PaycoreClient
from paycore_flask import create_app
from paycore_flask.asgi import AsgiFront, create_asgi_app

pytestmark = pytest.mark.slow  # a real server in a thread

CLOSED: list[str] = []


def bare_app() -> Flask:
    app = Flask("front-test")

    @app.route("/echo/<path:rest>", methods=["GET", "POST"])
    def echo(rest: str) -> dict[str, Any]:
        env = request.environ
        return {
            "raw": env["RAW_URI"],
            "path": env["PATH_INFO"],
            "query": env["QUERY_STRING"],
            "remote": env["REMOTE_ADDR"],
            "length": len(request.get_data()),
            "header": request.headers.get("X-Thing"),
        }

    @app.get("/stream")
    def stream() -> Response:
        def chunks() -> Iterator[bytes]:
            try:
                for i in range(3):
                    yield bytes([65 + i]) * 50_000
            finally:
                CLOSED.append("closed")

        return Response(chunks(), mimetype="application/octet-stream")

    @app.get("/boom")
    def boom() -> Response:
        raise RuntimeError("boom")

    @app.get("/health")
    def health() -> dict[str, bool]:
        return {"ok": True}

    return app


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def running(app: Any) -> Iterator[str]:
    import uvicorn

    port = _port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    while True:
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(base + "/health", timeout=1).status_code == 200:
                break
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield base
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def front() -> Iterator[str]:
    with running(AsgiFront(bare_app(), threads=1)) as base:
        yield base


def test_the_app_sees_the_target_as_sent(front: str) -> None:
    port = int(front.rsplit(":", 1)[1])
    target = "/echo/a%2Fb/%C3%A9?x=%41&y=1+2"
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(
            f"GET {target} HTTP/1.1\r\nHost: h\r\nX-Thing: one\r\nX-Thing: two\r\n"
            "X_Thing: smuggled\r\nConnection: close\r\n\r\n".encode()
        )
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
    body = httpx.Response(200, content=data.partition(b"\r\n\r\n")[2]).json()
    assert body["raw"] == target
    assert body["query"] == "x=%41&y=1+2"
    assert body["path"] == "/echo/a/b/é".encode().decode("latin-1")
    assert body["remote"] == "127.0.0.1"
    assert body["header"] == "one,two"  # repeated headers joined; X_Thing dropped


def test_bodies_are_read_and_capped(front: str) -> None:
    ok = httpx.post(front + "/echo/x", content=b"a" * 1000)
    assert ok.json()["length"] == 1000

    def chunked() -> Iterator[bytes]:
        for _ in range(MAX_BODY // 8192 + 4):
            yield b"b" * 8192

    # Chunked and over the cap: the app gets at most the cap and one read more.
    big = httpx.post(front + "/echo/x", content=chunked())
    assert MAX_BODY < big.json()["length"] <= MAX_BODY + 65536


def test_a_streamed_answer_arrives_whole_and_is_closed(front: str) -> None:
    CLOSED.clear()
    answer = httpx.get(front + "/stream")
    assert answer.content == b"A" * 50_000 + b"B" * 50_000 + b"C" * 50_000
    assert CLOSED == ["closed"]


def test_an_app_that_raises_answers_500(front: str) -> None:
    answer = httpx.get(front + "/boom")
    assert answer.status_code == 500


def test_a_client_stalled_mid_body_holds_no_thread(front: str) -> None:
    """threads=1: a POST that declares 1000 bytes and sends 10 waits on the loop, so the
    one thread still answers others."""
    port = int(front.rsplit(":", 1)[1])
    stalled = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(5)]
    try:
        for conn in stalled:
            conn.sendall(
                b"POST /echo/x HTTP/1.1\r\nHost: h\r\nContent-Length: 1000\r\n\r\n" + b"x" * 10
            )
        started = time.perf_counter()
        assert httpx.get(front + "/health", timeout=5).status_code == 200
        assert time.perf_counter() - started < 1.0
    finally:
        for conn in stalled:
            conn.close()


def test_paycore_over_the_front_refuses_a_declared_oversize_body_at_once(tmp_path: Any) -> None:
    app = create_app(gateway=Gateway(Settings(database_url="memory://"), entry_points=False))
    front = AsgiFront.for_app(app)
    assert front.ws_path == "/paycore/ws" and front.gateway is not None
    with running(front) as base:
        port = int(base.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
            conn.sendall(
                f"POST /paycore/invoice HTTP/1.1\r\nHost: h\r\nContent-Length: {MAX_BODY + 1}"
                "\r\nContent-Type: application/json\r\n\r\n".encode()
            )
            head = conn.recv(65536)
        assert head.startswith(b"HTTP/1.1 413"), head
        assert b"payload too large: the limit is 65536 bytes" in head


def test_create_asgi_app_builds_the_standalone_app_behind_the_front() -> None:
    front = create_asgi_app(Settings(database_url="memory://"), prefix="/pay", threads=3)
    assert (front.ws_path, front.threads) == ("/pay/ws", 3)
    assert front.inline_prefix == "/pay/invoice/"  # nothing of a host hooks the standalone app
    assert front.gateway is not None
    front.gateway.close()


def _answer(base: str, path: str, **headers: str) -> tuple[int, bytes, dict[str, str]]:
    got = httpx.get(base + path, headers=headers, timeout=10)
    kept = {k: v for k, v in got.headers.items() if k not in ("date", "server")}
    return got.status_code, got.content, kept


def _strict_gateway(
    paycore_settings: Settings, tmp_path: Any, request: pytest.FixtureRequest, database: str
) -> Gateway:
    """A gateway in strict auth mode on a SQLite file or a PostgreSQL schema of its own."""
    from paycore_storage import SqlStorage

    if database == "sqlite":
        url: Any = f"sqlite:///{tmp_path / 'front.sqlite3'}"
        text = url
    else:
        url = request.getfixturevalue("postgres_schema")()
        text = str(url.render_as_string(hide_password=False))
    store = SqlStorage(url)
    store.migrate()
    return Gateway(
        attrs.evolve(paycore_settings, database_url=text, auth_mode="strict"),
        storage=store,
        entry_points=False,
    )


@contextlib.contextmanager
def _front_with_merchant(gateway: Gateway) -> Iterator[tuple[AsgiFront, PaycoreClient]]:
    """The front of ``gateway``'s Flask app, and a merchant registered through Flask (its
    test client open inside)."""
    app = create_app(gateway=gateway)
    front = AsgiFront.for_app(app, threads=1)
    with app.test_client() as flask_client:
        merchant = PaycoreClient(flask_client)
        merchant.register()
        yield front, merchant


def _thread_calls(front: AsgiFront) -> list[str]:
    """The names of the calls ``front`` sends to its threads from now on."""
    calls: list[str] = []
    original = front._on_thread

    async def counted(fn: Any, *args: Any) -> Any:
        calls.append(getattr(fn, "__name__", ""))
        return await original(fn, *args)

    front._on_thread = counted  # type: ignore[method-assign]
    return calls


def test_the_checkout_poll_is_answered_on_the_loop_as_flask_answers_it(
    paycore_settings: Settings, tmp_path: Any
) -> None:
    """An unsigned GET /invoice/{guid} on a SQLite file is answered by the front itself
    (no thread, no Flask) with the very status, body and headers Flask's view gives; a
    request the poll's path does not cover, and any app a host hooks into, go to Flask."""
    from paycore.testing.chain import FakeChain
    from paycore_storage import SqlStorage

    url = f"sqlite:///{tmp_path / 'poll.sqlite3'}"
    gateway = Gateway(
        attrs.evolve(paycore_settings, database_url=url),
        storage=SqlStorage(url),
        entry_points=False,
    )
    try:
        app = create_app(gateway=gateway)
        invoice = gateway.create_invoice("0x" + "11" * 20, FakeChain(gateway).invoice_fields("1"))
        front = AsgiFront.for_app(app, threads=1)
        assert front.inline_prefix == "/paycore/invoice/"
        path = f"/paycore/invoice/{invoice.guid}"
        calls = _thread_calls(front)

        with running(front) as base:
            _answer(base, path)  # the pool's first connection is opened on a thread
            calls.clear()
            inline = _answer(base, path)
            tag = inline[2]["etag"]
            inline_304 = _answer(base, path, **{"If-None-Match": tag})
            unknown = "/paycore/invoice/00000000-0000-4000-8000-000000000000"
            missing = _answer(base, unknown)
            assert calls == []  # none of the three reached a thread
            front.inline_prefix = None  # the same requests through Flask
            assert _answer(base, path) == inline
            assert _answer(base, path, **{"If-None-Match": tag}) == inline_304
            assert _answer(base, unknown) == missing
            assert calls  # these did
        assert inline[0] == 200 and inline[1] == gateway.invoice_view(invoice.guid).body()
        assert inline_304[0] == 304 and inline_304[1] == b""
        assert missing[0] == 404
        hooked = create_app(gateway=gateway)
        hooked.before_request(lambda: None)
        assert AsgiFront.for_app(hooked).inline_prefix is None
    finally:
        gateway.close()


def test_on_postgresql_the_poll_is_answered_on_a_thread_without_flask(
    paycore_settings: Settings, postgres_schema: Any
) -> None:
    """On PostgreSQL the poll's read is awaited on the loop (``handle_inline_async``) and
    the core answers it there, not Flask (no WSGI environ, no Flask request, no thread),
    with the very status, body and headers Flask's view gives. A signed GET whose
    signature is refused goes to a thread, where the core answers as Flask does."""
    from paycore.testing.chain import FakeChain
    from paycore_storage import SqlStorage

    url = postgres_schema()
    store = SqlStorage(url)
    store.migrate()
    gateway = Gateway(
        attrs.evolve(paycore_settings, database_url=str(url.render_as_string(hide_password=False))),
        storage=store,
        entry_points=False,
    )
    try:
        app = create_app(gateway=gateway)
        invoice = gateway.create_invoice("0x" + "11" * 20, FakeChain(gateway).invoice_fields("1"))
        front = AsgiFront.for_app(app, threads=1)
        assert front.inline_prefix == "/paycore/invoice/" and front.loop_reads is False
        assert front.loop_reads_async is True
        path = f"/paycore/invoice/{invoice.guid}"
        calls = _thread_calls(front)

        with running(front) as base:  # its /health request goes to Flask
            calls.clear()
            core = _answer(base, path)
            tag = core[2]["etag"]
            core_304 = _answer(base, path, **{"If-None-Match": tag})
            unknown = "/paycore/invoice/00000000-0000-4000-8000-000000000000"
            missing = _answer(base, unknown)
            bad = {"x-session-nonce": "1", "x-session-signature": "0x"}
            signed = _answer(base, path, **bad)
            # Only the refused signature reached a thread: the core's, nothing spent.
            assert calls == ["handle"]
            calls.clear()
            front.inline_prefix = None  # the same requests through Flask
            assert _answer(base, path) == core
            assert _answer(base, path, **{"If-None-Match": tag}) == core_304
            assert _answer(base, unknown) == missing
            assert _answer(base, path, **bad) == signed
            assert calls == ["_start", "_start", "_start", "_start"]
        assert core[0] == 200 and core[1] == gateway.invoice_view(invoice.guid).body()
        assert core_304[0] == 304 and missing[0] == 404 and signed[0] == 401
    finally:
        gateway.close()


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_a_signed_read_is_answered_by_the_front_as_flask_answers_it(
    paycore_settings: Settings, tmp_path: Any, request: pytest.FixtureRequest, database: str
) -> None:
    """A merchant's signed GET /invoice/{guid} on an app no host code hooks: answered by
    the core on the loop (a SQLite file's spend all or nothing there; PostgreSQL's one
    statement awaited), with Flask's very answer to the same read; its replay refused as
    Flask refuses it; the nonce spent once."""
    from paycore.testing.chain import FakeChain

    gateway = _strict_gateway(paycore_settings, tmp_path, request, database)
    try:
        with _front_with_merchant(gateway) as (front, merchant):
            fields = FakeChain(gateway).invoice_fields("1")
            guid = merchant.post("/invoice", fields).json["guid"]
        path = f"/paycore/invoice/{guid}"
        calls = _thread_calls(front)

        with running(front) as base:
            _answer(base, path, **merchant._headers(path.encode()))  # warming up
            calls.clear()
            first = merchant._headers(path.encode())
            core = _answer(base, path, **first)
            assert calls == [] and core[0] == 200
            replayed = _answer(base, path, **first)
            front.inline_prefix = None  # the same through Flask
            assert _answer(base, path, **merchant._headers(path.encode())) == core
            assert _answer(base, path, **first) == replayed
        assert replayed[0] == 401 and b"replay" in replayed[1]
        assert json.loads(core[1])["guid"] == guid
    finally:
        gateway.close()


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_an_invoice_is_created_by_the_front_as_flask_creates_it(
    paycore_settings: Settings, tmp_path: Any, request: pytest.FixtureRequest, database: str
) -> None:
    """A signed POST /invoice on an app no host code hooks: made by the core without Flask
    on the loop (a SQLite file's one transaction; PostgreSQL's one statement, once the
    process has seen the key), answered with the head Flask
    gives the same creation; the refusals (unsigned, a broken body, a replay) are Flask's
    byte for byte; and the invoice is there to read."""
    from paycore.testing.chain import FakeChain

    gateway = _strict_gateway(paycore_settings, tmp_path, request, database)
    try:
        with _front_with_merchant(gateway) as (front, merchant):
            body = json.dumps(FakeChain(gateway).invoice_fields("1")).encode()
        calls = _thread_calls(front)

        def post(base: str, payload: bytes, **headers: str) -> tuple[int, bytes, dict[str, str]]:
            got = httpx.post(
                base + "/paycore/invoice", content=payload, timeout=10,
                headers={"content-type": "application/json", **headers},
            )  # fmt: skip
            kept = {k: v for k, v in got.headers.items() if k not in ("date", "server")}
            return got.status_code, got.content, kept

        with running(front) as base:
            post(base, body, **merchant._headers(body))  # warming up: the spending connection
            calls.clear()
            first = merchant._headers(body)
            made = post(base, body, **first)
            made_on = list(calls)
            replayed = post(base, body, **first)
            unsigned = post(base, body)
            broken = post(base, b"{", **merchant._headers(b"{"))
            by_core = list(calls)
            front.inline_prefix = None  # the same through Flask
            calls.clear()
            by_flask = post(base, body, **merchant._headers(body))
            assert post(base, body, **first) == replayed
            assert post(base, body) == unsigned
            assert post(base, b"{", **merchant._headers(b"{"))[:2] == broken[:2]
            assert calls and set(calls) == {"_start"}
        assert made[0] == by_flask[0] == 201 and made[2].keys() == by_flask[2].keys()
        assert made[2]["content-type"] == by_flask[2]["content-type"]
        assert (replayed[0], unsigned[0], broken[0]) == (401, 401, 400)
        # Made on the loop; a refusal on a thread (SQLite refuses an unsigned write before
        # trying the loop). Never Flask's _start.
        assert made_on == []
        assert set(by_core) == {"handle"} and len(by_core) == (2 if database == "sqlite" else 3)
        created = json.loads(made[1])
        with gateway.storage.transaction() as tx:
            stored = tx.get_invoice(created["guid"])
        assert stored is not None and stored.owner == merchant.address
    finally:
        gateway.close()
