"""The Litestar plugin's mechanics: mounting, registration, body cap, request translation.

What each endpoint answers is the conformance suite's business (tests/conformance); these
tests only check what the plugin itself is responsible for.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from adapter_helpers import PREFIX, make_gateway
from litestar import Litestar, MediaType, get, post
from litestar import Request as LitestarRequest
from litestar import Response as LitestarResponse
from litestar.exceptions import ImproperlyConfiguredException, NotFoundException
from litestar.testing import TestClient

import paycore_litestar.handler
from paycore import Gateway, Settings
from paycore.api import MAX_BODY, Request, Response, routes
from paycore.api.openapi import document
from paycore_litestar import PayCoreConfig, PayCorePlugin

TOO_LARGE = b"payload too large: the limit is 65536 bytes"


def _host_404(request: LitestarRequest[Any, Any, Any], exc: Exception) -> LitestarResponse[str]:
    return LitestarResponse("host 404", status_code=404, media_type=MediaType.TEXT)


@get("/hello")
async def hello() -> dict[str, int]:
    return {"z": 1, "a": 2}


@post("/echo")
async def echo(request: LitestarRequest[Any, Any, Any]) -> bytes:
    return await request.body()


def host_app(plugin: PayCorePlugin) -> Litestar:
    """A host with its own routes, 404 handler and a 1 KiB body limit of its own."""
    return Litestar(
        [hello, echo],
        exception_handlers={NotFoundException: _host_404},
        request_max_body_size=1024,
        plugins=[plugin],
    )


@pytest.fixture
def client(gateway: Gateway) -> Iterator[TestClient[Litestar]]:
    app = host_app(PayCorePlugin(PayCoreConfig(gateway=gateway)))
    with TestClient(app) as test_client:
        yield test_client


def test_mounting_leaves_host_routes_and_handlers_alone(
    gateway: Gateway, client: TestClient[Litestar]
) -> None:
    app = client.app
    assert app.exception_handlers == {NotFoundException: _host_404}
    assert app.request_max_body_size == 1024
    assert app.state.paycore is gateway
    paths = {r.path for r in app.routes}
    assert {"/hello", "/echo"} <= paths
    handlers = {h.name: h for r in app.routes for h in getattr(r, "route_handlers", ())}
    for route in routes():  # one named handler per row of the route table
        # but /checkout: Litestar ignores a trailing slash, so /checkout/'s handler takes it
        assert "paycore." + route.name in handlers or route.path == "/checkout"
    assert handlers["paycore.create_invoice"].http_methods == {"POST"}
    # Litestar's own schema describes paycore's operations with paycore's fragments.
    schema = app.openapi_schema.to_schema()
    own = document(routes(), PREFIX, tuple(gateway.settings.chains))["paths"]
    assert schema["paths"][PREFIX + "/invoice"]["post"] == own["/invoice"]["post"]
    assert schema["paths"][PREFIX + "/invoice/{guid}"]["get"] == own["/invoice/{guid}"]["get"]
    assert "requestBody" in schema["paths"][PREFIX + "/invoice"]["post"]
    for method in ("get", "post"):  # a two-method row: one operation each
        assert schema["paths"][PREFIX + "/getAddress"][method] == own["/getAddress"][method]
    listed = {p for p in schema["paths"] if p.startswith(PREFIX)}
    assert listed == {PREFIX + p.rstrip("/") for p in own if p != "/checkout/"}

    assert client.get("/hello").json() == {"z": 1, "a": 2}
    assert client.get("/elsewhere").text == "host 404"
    assert client.post("/echo", content=b"x" * 2048).status_code == 413  # host's own limit
    mine = client.get(PREFIX + "/no-such-endpoint")
    assert (mine.status_code, mine.content) == (404, b"not found: /no-such-endpoint")


def test_paycore_limit_wins_over_litestar_and_host_limits(client: TestClient[Litestar]) -> None:
    """Under the prefix the cap is paycore's 64 KiB with paycore's text, not the host's 1 KiB
    (nor Litestar's 10 MB default)."""
    under = client.post(PREFIX + "/invoice", content=b"{" + b" " * 60_000)
    assert (under.status_code, under.content) == (400, b"invalid request: body: not valid JSON")
    over = client.post(PREFIX + "/invoice", content=b"x" * (70 * 1024))
    assert (over.status_code, over.content) == (413, TOO_LARGE)
    assert over.headers["content-type"] == "text/plain; charset=utf-8"


def test_double_registration_is_refused(gateway: Gateway) -> None:
    plugins = [PayCorePlugin(PayCoreConfig(gateway=gateway)) for _ in range(2)]
    with pytest.raises(ImproperlyConfiguredException, match="already registered"):
        Litestar([], plugins=plugins)


def test_gateway_or_settings_not_both(gateway: Gateway) -> None:
    with pytest.raises(TypeError):
        PayCoreConfig(gateway=gateway, settings=Settings(database_url="memory://"))


def test_plugin_builds_and_closes_its_own_gateway(monkeypatch: pytest.MonkeyPatch) -> None:
    plugin = PayCorePlugin(
        PayCoreConfig(settings=Settings(database_url="memory://"), prefix="pay/")
    )
    closed: list[bool] = []
    app = Litestar([], plugins=[plugin])
    monkeypatch.setattr(plugin.gateway, "close", lambda: closed.append(True))
    with TestClient(app) as client:
        assert app.state.paycore is plugin.gateway
        assert client.get("/pay/prices").status_code == 200
    assert closed == [True]


def test_host_gateway_is_not_closed_by_the_plugin(
    gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    closed: list[bool] = []
    monkeypatch.setattr(gateway, "close", lambda: closed.append(True))
    with TestClient(Litestar([], plugins=[PayCorePlugin(PayCoreConfig(gateway=gateway))])):
        pass
    assert closed == []


def _scope(headers: list[tuple[bytes, bytes]]) -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": PREFIX + "/invoice",
        "raw_path": (PREFIX + "/invoice").encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"test"), *headers],
        "client": ("127.0.0.1", 50000),
        "server": ("test", 80),
        "state": {},
    }


def _call(app: Litestar, scope: dict[str, Any], chunk: bytes | None) -> tuple[int, bytes, int]:
    """Run one ASGI request; ``chunk`` is sent forever, an empty one ends the body at once,
    and with ``None`` nothing may be received at all."""
    received = 0
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        nonlocal received
        if chunk is None:
            raise AssertionError("the body was read")
        received += len(chunk)
        return {"type": "http.request", "body": chunk, "more_body": bool(chunk)}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    anyio.run(app, scope, receive, send)  # type: ignore[arg-type]
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return status, body, received


def test_oversized_body_is_refused_before_it_is_read(gateway: Gateway) -> None:
    app = Litestar([], plugins=[PayCorePlugin(PayCoreConfig(gateway=gateway))])
    scope = _scope([(b"content-length", str(70 * 1024).encode())])
    assert _call(app, scope, None) == (413, TOO_LARGE, 0)


def test_streamed_body_is_cut_off_just_past_the_limit(gateway: Gateway) -> None:
    app = Litestar([], plugins=[PayCorePlugin(PayCoreConfig(gateway=gateway))])
    status, body, received = _call(app, _scope([]), b"x" * 8192)
    assert (status, body) == (413, TOO_LARGE)
    assert MAX_BODY < received <= MAX_BODY + 8192


def ok() -> Response:
    return Response(299, b"body", "text/x-test; charset=latin-1", {"x-extra": "1"})


def test_request_and_response_are_copied_as_is(
    gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[Request] = []
    monkeypatch.setattr(
        paycore_litestar.handler, "handle_streamed", lambda gw, req: seen.append(req) or ok()
    )
    app = Litestar([], plugins=[PayCorePlugin(PayCoreConfig(gateway=gateway))])
    with TestClient(app) as client:
        reply = client.patch(
            PREFIX + "/a%20b/c?x=%2F%20y&z=1", content=b"raw", headers={"X-Session-Nonce": "5"}
        )
        assert (reply.status_code, reply.content) == (299, b"body")
        assert reply.headers["content-type"] == "text/x-test; charset=latin-1"
        assert reply.headers["x-extra"] == "1"
        req = seen[0]
        assert (req.method, req.path, req.query_string, req.body) == (
            "PATCH",
            "/a b/c",
            "x=%2F%20y&z=1",
            b"raw",
        )
        assert req.raw_uri == PREFIX + "/a%20b/c?x=%2F%20y&z=1"
        assert req.headers["x-session-nonce"] == "5"
        assert client.get(PREFIX).status_code == 299 and seen[-1].path == "/"
        assert client.get(PREFIX + "/").status_code == 299 and seen[-1].path == "/"
        assert client.options(PREFIX + "/x").status_code == 299
        assert client.head(PREFIX + "/x").status_code == 299 and seen[-1].method == "HEAD"


def test_raw_uri_without_raw_path_is_requoted(
    gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[Request] = []
    monkeypatch.setattr(
        paycore_litestar.handler, "handle_streamed", lambda gw, req: seen.append(req) or ok()
    )
    app = Litestar([], plugins=[PayCorePlugin(PayCoreConfig(gateway=gateway))])
    scope = _scope([(b"content-length", b"0")])
    scope.update(method="GET", path=PREFIX + "/a b", query_string=b"q=%20")
    del scope["raw_path"]
    assert _call(app, scope, b"")[0] == 299
    assert seen[0].raw_uri == PREFIX + "/a%20b?q=%20"


def test_root_mount_does_not_shadow_host_routes() -> None:
    plugin = PayCorePlugin(PayCoreConfig(gateway=make_gateway(), prefix="/"))
    with TestClient(Litestar([hello], plugins=[plugin])) as client:
        assert client.get("/hello").json() == {"z": 1, "a": 2}
        assert json.loads(client.get("/prices").content)["vsCurrency"] == "usd"
        assert client.get("/elsewhere").content == b"not found: /elsewhere"


@pytest.mark.parametrize("server", [["testserver", 80], ("testserver", 80), None])
def test_a_scope_whose_server_is_a_list_is_answered(gateway: Gateway, server: Any) -> None:
    """ASGI says a tuple; some clients (schemathesis' ASGI transport) send a list, and the
    handler's per-origin root URL memo must not need the scope's values to be hashable."""
    app = Litestar(plugins=[PayCorePlugin(PayCoreConfig(gateway=gateway, prefix=PREFIX))])
    sent: list[dict[str, Any]] = []
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
        "scheme": "http", "path": f"{PREFIX}/openapi.json", "raw_path": b"", "root_path": "",
        "query_string": b"", "headers": [[b"host", b"testserver"]], "server": server,
        "client": ["127.0.0.1", 1],
    }  # fmt: skip

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    anyio.run(app, scope, receive, send)
    assert sent[0]["status"] == 200
    assert json.loads(b"".join(m.get("body", b"") for m in sent[1:]))["openapi"] == "3.1.0"
