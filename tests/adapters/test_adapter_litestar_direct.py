"""The direct path (``paycore_litestar.direct``): a GET of ``/invoice/{guid}`` and a ``POST
/invoice`` answered under Litestar's router without its request and response objects --
the same head, byte for byte and in order, and the same body as the handler's -- and never
where host code would see the request: a guard, a request hook, a layer's response headers
or cookies."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from litestar import Litestar, Request
from litestar.connection import ASGIConnection
from litestar.datastructures import Cookie, ResponseHeader
from litestar.exceptions import NotAuthorizedException
from litestar.handlers.base import BaseRouteHandler
from litestar.testing import TestClient
from litestar.types import ASGIApp, Receive, Scope, Send

import paycore_litestar.direct as direct
import paycore_storage.plugin
from paycore import Gateway, Settings
from paycore.testing.client import PaycoreClient
from paycore_litestar import PayCoreConfig, PayCorePlugin

ETH_1 = "1:0x0000000000000000000000000000000000000000"
OWNER = "0x" + "33" * 20
FIELDS = {
    "value": "10", "chainId": 1, "description": "direct", "acceptedTokens": [ETH_1],
    "address": "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", "deadlineSecs": 600,
}  # fmt: skip


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[Gateway]:
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'direct.sqlite3'}",
        prices={ETH_1: "2000"},
        auth_mode="strict",
    )
    gw = Gateway(settings, entry_points=False, plugins=[paycore_storage.plugin])
    yield gw
    gw.close()


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The statuses the direct path answered with (the handler's answers are not here)."""
    statuses: list[int] = []
    original = direct.send_answer

    async def counted(send: Send, response: Any) -> None:
        statuses.append(response.status)
        await original(send, response)

    monkeypatch.setattr(direct, "send_answer", counted)
    return statuses


def _raw(
    app: Litestar,
    path: str,
    headers: list[tuple[bytes, bytes]],
    method: str = "GET",
    received: list[dict[str, Any]] | None = None,
) -> Any:
    """Status, head (in order) and body as the app sends them to the server, for a request
    whose body arrives as ``received`` (none by default); None when nothing was sent."""
    import asyncio

    messages: list[dict[str, Any]] = []
    pending = list(received or [{"type": "http.request", "body": b"", "more_body": False}])

    async def receive() -> Any:
        if pending:
            return pending.pop(0)
        await asyncio.sleep(3600)

    async def send(message: Any) -> None:
        messages.append(message)

    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
        "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"",
        "root_path": "", "headers": [(b"host", b"testserver"), *headers],
        "client": ("127.0.0.1", 5000), "server": ("testserver", 80), "state": {},
    }  # fmt: skip
    asyncio.run(app(scope, receive, send))  # type: ignore[arg-type]
    if not messages:
        return None
    start, body = messages[0], b"".join(m.get("body", b"") for m in messages[1:])
    return start["status"], list(start["headers"]), body


def _through_handler(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every request to Litestar's handler: the direct path declines all."""
    monkeypatch.setattr(direct.DirectAnswer, "_sees_nothing", lambda _self, _scope: False)


def test_the_direct_answer_is_the_handlers_byte_for_byte(
    gateway: Gateway, sent: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    guid = gateway.create_invoice(OWNER, FIELDS).guid
    path = f"/paycore/invoice/{guid}"
    app = Litestar(plugins=[PayCorePlugin(PayCoreConfig(gateway=gateway))])
    with TestClient(app):
        opened = _raw(app, path, [])
        assert opened[0] == 200 and sent == [200]
        tag = dict(opened[1])[b"etag"]
        unchanged = _raw(app, path, [(b"if-none-match", tag)])
        missing = _raw(app, "/paycore/invoice/nope", [])
        assert (unchanged[0], missing[0]) == (304, 404) and sent == [200, 304, 404]
        with monkeypatch.context() as off:
            _through_handler(off)
            assert _raw(app, path, []) == opened
            assert _raw(app, path, [(b"if-none-match", tag)]) == unchanged
            assert _raw(app, "/paycore/invoice/nope", []) == missing
        assert sent == [200, 304, 404]
        assert unchanged[2] == b"" and b"content-length" not in dict(unchanged[1])


def test_a_signed_read_on_a_sqlite_file_is_answered_directly(
    gateway: Gateway, sent: list[int]
) -> None:
    app = Litestar(plugins=[PayCorePlugin(PayCoreConfig(gateway=gateway))])
    with TestClient(app) as client:
        merchant = PaycoreClient(client)
        merchant.register()
        created = merchant.post("/invoice", {k: v for k, v in FIELDS.items()})
        assert created.status == 201, created.body
        merchant.get(f"/invoice/{created.json['guid']}")  # warming up: the spending connection
        sent.clear()
        uri = f"/paycore/invoice/{created.json['guid']}"
        signed = merchant._headers(uri.encode())
        read = client.get(uri, headers=signed)
        assert read.status_code == 200 and read.json() == created.json
        assert sent == [200]
        # The nonce is spent: refused, by the thread (a refusal is never made on the loop).
        replayed = client.get(uri, headers=signed)
        assert replayed.status_code == 401 and sent == [200]


def _refuse(_connection: ASGIConnection[Any, Any, Any, Any], _handler: BaseRouteHandler) -> None:
    raise NotAuthorizedException("the host's guard")


def _app(gateway: Gateway, **host: Any) -> Litestar:
    guards = host.pop("paycore_guards", {})
    config = PayCoreConfig(gateway=gateway, guards=guards)
    return Litestar(plugins=[PayCorePlugin(config)], **host)


def test_a_guard_on_the_route_is_not_skipped(gateway: Gateway, sent: list[int]) -> None:
    guid = gateway.create_invoice(OWNER, FIELDS).guid
    for app in (
        _app(gateway, paycore_guards={"paycore.get_invoice": [_refuse]}),
        _app(gateway, paycore_guards=[_refuse]),
        _app(gateway, guards=[_refuse]),
    ):
        with TestClient(app) as client:
            answer = client.get(f"/paycore/invoice/{guid}")
            assert answer.status_code == 401 and "the host's guard" in answer.text
    for app in (
        _app(gateway, paycore_guards={"paycore.create_invoice": [_refuse]}),
        _app(gateway, guards=[_refuse]),
    ):
        with TestClient(app) as client:
            answer = client.post("/paycore/invoice", json=FIELDS)
            assert answer.status_code == 401 and "the host's guard" in answer.text
    assert sent == []


def test_host_hooks_and_layer_headers_see_every_poll(gateway: Gateway, sent: list[int]) -> None:
    guid = gateway.create_invoice(OWNER, FIELDS).guid
    seen: list[str] = []

    async def before(request: Request[Any, Any, Any]) -> None:
        seen.append("before " + request.url.path)

    async def after(response: Any) -> Any:
        seen.append("after")
        return response

    async def after_response(_request: Request[Any, Any, Any]) -> None:
        seen.append("after response")

    for host, check in (
        ({"before_request": before}, lambda _got: seen.pop() == f"before /paycore/invoice/{guid}"),
        ({"after_request": after}, lambda _got: seen.pop() == "after"),
        ({"after_response": after_response}, lambda _got: seen.pop() == "after response"),
        (
            {"response_headers": [ResponseHeader(name="x-shop", value="1")]},
            lambda got: got.headers["x-shop"] == "1",
        ),
        (
            {"response_cookies": [Cookie(key="shop", value="1")]},
            lambda got: got.cookies["shop"] == "1",
        ),
    ):
        with TestClient(_app(gateway, **host)) as client:
            got = client.get(f"/paycore/invoice/{guid}")
            assert got.status_code == 200 and check(got), host
    assert sent == [] and seen == []


def test_host_middleware_still_wraps_the_direct_answer(gateway: Gateway, sent: list[int]) -> None:
    guid = gateway.create_invoice(OWNER, FIELDS).guid

    def tagging(app: ASGIApp) -> ASGIApp:
        async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
            async def tagged(message: Any) -> None:
                if message["type"] == "http.response.start":
                    message["headers"] = [*message["headers"], (b"x-host", b"seen")]
                await send(message)

            await app(scope, receive, tagged)

        return middleware

    with TestClient(_app(gateway, middleware=[tagging])) as client:
        got = client.get(f"/paycore/invoice/{guid}")
        assert got.status_code == 200 and got.headers["x-host"] == "seen"
    assert sent == [200]


def _post(app: Litestar, received: list[dict[str, Any]], headers: list[tuple[bytes, bytes]]) -> Any:
    """:func:`_raw` for a ``POST /paycore/invoice`` whose body arrives as ``received``."""
    return _raw(app, "/paycore/invoice", headers, "POST", received)


def _whole(body: bytes) -> list[dict[str, Any]]:
    return [{"type": "http.request", "body": body, "more_body": False}]


def test_a_post_is_answered_directly_as_the_handler_answers_it(
    gateway: Gateway, sent: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    app = Litestar(plugins=[PayCorePlugin(PayCoreConfig(gateway=gateway))])
    with TestClient(app) as client:
        merchant = PaycoreClient(client)
        merchant.register()
        body = json.dumps(FIELDS).encode()
        json_type = [(b"content-type", b"application/json")]

        def signed(payload: bytes = body) -> list[tuple[bytes, bytes]]:
            return json_type + [
                (k.lower().encode(), v.encode()) for k, v in merchant._headers(payload).items()
            ]

        # Signed, on a SQLite file: made on the loop; the body in two messages.
        halves = [
            {"type": "http.request", "body": body[:10], "more_body": True},
            {"type": "http.request", "body": body[10:], "more_body": False},
        ]
        direct_made = _post(app, halves, signed())
        unsigned = _post(app, _whole(body), json_type)  # strict mode: refused
        broken = _post(app, _whole(b"{"), signed(b"{"))
        assert (direct_made[0], unsigned[0], broken[0]) == (201, 401, 400)
        assert sent == [201, 401, 400]
        with monkeypatch.context() as off:
            _through_handler(off)
            handler_made = _post(app, _whole(body), signed())
            assert _post(app, _whole(body), json_type) == unsigned
            assert _post(app, _whole(b"{"), signed(b"{"))[:2] == broken[:2]
        assert sent == [201, 401, 400]
        # Two invoices: their guids, addresses and times differ, their heads' names not.
        assert handler_made[0] == 201
        assert [name for name, _ in direct_made[1]] == [name for name, _ in handler_made[1]]
        made, again = json.loads(direct_made[2]), json.loads(handler_made[2])
        assert made.keys() == again.keys() and made["guid"] != again["guid"]
        assert made["value"] == again["value"] == "10" and made["description"] == "direct"
        read = merchant.get(f"/invoice/{made['guid']}")
        assert read.status == 200 and read.json == made


def test_a_post_over_the_cap_goes_to_the_handler_and_one_cut_short_is_dropped(
    gateway: Gateway, sent: list[int]
) -> None:
    from paycore.api import MAX_BODY

    app = Litestar(plugins=[PayCorePlugin(PayCoreConfig(gateway=gateway))])
    with TestClient(app):
        declared = [(b"content-length", str(MAX_BODY + 1).encode())]
        refused = _post(app, _whole(b"{}"), declared)
        assert refused[0] == 413 and b"too large" in refused[2].lower()
        streamed = [{"type": "http.request", "body": b" " * MAX_BODY, "more_body": True}] * 2
        assert _post(app, streamed, [])[0] == 413
        gone = [
            {"type": "http.request", "body": b"{", "more_body": True},
            {"type": "http.disconnect"},
        ]
        assert _post(app, gone, []) is None  # no one left to answer
    assert sent == []
