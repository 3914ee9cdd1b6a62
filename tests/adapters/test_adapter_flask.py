"""The Flask extension's mechanics: mounting, registration, body cap, request translation.

What each endpoint answers is the conformance suite's business (tests/conformance); these
tests only check what the adapter itself is responsible for.
"""

from __future__ import annotations

import re

import flask
import pytest
from adapter_helpers import PREFIX, CountingStream, make_gateway
from flask import Flask

import paycore_flask.view
from paycore import Gateway, Settings
from paycore.api import MAX_BODY, Request, Response, routes
from paycore_flask import PayCore, state
from paycore_flask.view import DISCARD_LIMIT, raw_uri

TOO_LARGE = b"payload too large: the limit is 65536 bytes"


def host_app() -> Flask:
    """A host with its own route, 404 handler and JSON settings, as a shop would have."""
    app = Flask("host")
    app.json.sort_keys = False  # type: ignore[attr-defined]
    app.json.compact = False  # type: ignore[attr-defined]

    @app.get("/hello")
    def hello() -> flask.Response:
        return flask.jsonify(z=1, a=2)

    @app.errorhandler(404)
    def not_found(error: Exception) -> tuple[str, int]:
        return "host 404", 404

    @app.errorhandler(413)
    def too_large(error: Exception) -> tuple[str, int]:
        return "host 413", 413

    return app


def test_mounting_leaves_host_routes_handlers_and_json_alone(gateway: Gateway) -> None:
    app = host_app()
    rules_before = {(r.rule, r.endpoint) for r in app.url_map.iter_rules()}
    handlers_before = {code: dict(h) for code, h in app.error_handler_spec[None].items()}
    json_before = app.json
    PayCore(app, gateway=gateway, prefix=PREFIX)

    added = {(r.rule, r.endpoint) for r in app.url_map.iter_rules()} - rules_before
    # One rule per row of the route table, named for it, then the catch-all fallback and the
    # WebSocket route, all on the one blueprint.
    native = {
        (PREFIX + re.sub(r"\{(\w+)\}", r"<\1>", route.path), "paycore." + route.name)
        for route in routes()
    }
    assert added == native | {
        (PREFIX + "/", "paycore.api"),
        (PREFIX + "/<paycore_path:subpath>", "paycore.api"),
        (PREFIX + "/ws", "paycore.ws"),
    }
    assert (PREFIX + "/invoice", "paycore.create_invoice") in added
    assert {code: dict(h) for code, h in app.error_handler_spec[None].items()} == handlers_before
    assert app.json is json_before and app.json.sort_keys is False  # type: ignore[attr-defined]
    assert app.before_request_funcs == {} and app.after_request_funcs == {}

    client = app.test_client()
    hello = client.get("/hello")
    assert hello.data == b'{\n  "z": 1,\n  "a": 2\n}\n'  # host's JSON settings still apply
    assert client.get("/elsewhere").data == b"host 404"
    # Under the prefix, paycore's own one-line texts answer, not the host's handlers.
    mine = client.get(PREFIX + "/no-such-endpoint")
    assert (mine.status_code, mine.data) == (404, b"not found: /no-such-endpoint")
    big = client.post(PREFIX + "/invoice", data=b"x" * (70 * 1024))
    assert (big.status_code, big.data) == (413, TOO_LARGE)
    assert client.post("/hello").status_code == 405  # the host's routes keep their methods


def test_double_registration_is_refused(gateway: Gateway) -> None:
    app = Flask("host")
    ext = PayCore(app, gateway=gateway)
    with pytest.raises(RuntimeError, match="already registered"):
        PayCore(app, gateway=gateway, prefix="/other")
    with pytest.raises(RuntimeError, match="already registered"):
        ext.init_app(app)
    assert state(app).extension is ext


def test_one_extension_serves_many_apps_without_holding_any() -> None:
    ext = PayCore(settings=Settings(database_url="memory://"), prefix="pay/")
    first, second = Flask("first"), Flask("second")
    ext.init_app(first)
    ext.init_app(second)
    assert not any(isinstance(v, Flask) for v in vars(ext).values())
    assert state(first).gateway is not state(second).gateway  # settings: one gateway per app
    with first.app_context():
        assert ext.gateway is state(first).gateway
    with second.app_context():
        assert ext.gateway is state(second).gateway
    assert second.test_client().get("/pay/prices").status_code == 200


def test_gateway_or_settings_not_both(gateway: Gateway) -> None:
    with pytest.raises(TypeError):
        PayCore(gateway=gateway, settings=Settings(database_url="memory://"))


def test_gateway_outside_an_app_context(gateway: Gateway) -> None:
    assert PayCore(Flask("host"), gateway=gateway).gateway is gateway
    with pytest.raises(RuntimeError, match="app context"):
        _ = PayCore(Flask("host"), settings=Settings(database_url="memory://")).gateway


def test_settings_from_app_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAYCORE_VS_CURRENCY", "eur")
    app = Flask("host")
    app.config.update(
        PAYCORE_DATABASE_URL="memory://",
        PAYCORE_SESSION_KEY_CAP=7,
        PAYCORE_PRICES={"1:0x0000000000000000000000000000000000000000": "3000"},
    )
    PayCore(app)
    settings = state(app).gateway.settings
    assert (settings.database_url, settings.session_key_cap, settings.vs_currency) == (
        "memory://",
        7,
        "eur",
    )
    assert app.test_client().get("/paycore/prices").json["prices"] == {  # type: ignore[index]
        "1:0x0000000000000000000000000000000000000000": 3000
    }


def test_oversized_body_is_refused_and_drained_to_a_bound(gateway: Gateway) -> None:
    """The refused body is read and dropped, so a kept-alive connection stays usable, but
    never more than DISCARD_LIMIT of it (tests/adapters/test_adapter_serve_tenants.py
    checks the connection over real HTTP)."""
    app = Flask("host")
    PayCore(app, gateway=gateway)
    for size, drained in ((70 * 1024, 70 * 1024), (4 * DISCARD_LIMIT, DISCARD_LIMIT)):
        body = CountingStream(size=size)
        reply = app.test_client().post(
            PREFIX + "/invoice",
            environ_overrides={"wsgi.input": body, "CONTENT_LENGTH": str(size)},
        )
        assert (reply.status_code, reply.data) == (413, TOO_LARGE)
        assert body.read_bytes == drained


def test_streamed_body_is_cut_off_just_past_the_limit(gateway: Gateway) -> None:
    """No Content-Length, server-terminated input (chunked): an endless body is not buffered."""
    app = Flask("host")
    PayCore(app, gateway=gateway)
    endless = CountingStream()
    reply = app.test_client().post(
        PREFIX + "/invoice",
        environ_overrides={
            "wsgi.input": endless,
            "wsgi.input_terminated": True,
            "CONTENT_LENGTH": "",
        },
    )
    assert (reply.status_code, reply.data) == (413, TOO_LARGE)
    assert endless.read_bytes == DISCARD_LIMIT  # read and dropped, not kept; then no more


def test_body_at_the_limit_reaches_the_core(
    gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[Request] = []
    monkeypatch.setattr(
        paycore_flask.view, "handle_streamed", lambda gw, req: seen.append(req) or ok()
    )
    app = Flask("host")
    PayCore(app, gateway=gateway)
    reply = app.test_client().post(PREFIX + "/invoice", data=b"y" * MAX_BODY)
    assert reply.status_code == 299 and seen[0].body == b"y" * MAX_BODY


def ok() -> Response:
    return Response(299, b"body", "application/x-test", {"x-extra": "1"})


def test_request_and_response_are_copied_as_is(
    gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[Request] = []
    monkeypatch.setattr(
        paycore_flask.view, "handle_streamed", lambda gw, req: seen.append(req) or ok()
    )
    app = Flask("host")
    PayCore(app, gateway=gateway)
    client = app.test_client()
    reply = client.patch(
        PREFIX + "/a%20b/c?x=%2F%20y&z=1", data=b"raw", headers={"X-Session-Nonce": "5"}
    )
    assert reply.status_code == 299 and reply.data == b"body"
    assert reply.headers["content-type"] == "application/x-test"
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
    assert client.open(PREFIX + "/x", method="OPTIONS").status_code == 299


def test_raw_uri_falls_back_to_a_requoted_path() -> None:
    environ = {"SCRIPT_NAME": "/shop", "PATH_INFO": "/paycore/a b", "QUERY_STRING": "q=%20"}
    assert raw_uri(environ) == "/shop/paycore/a%20b?q=%20"
    assert raw_uri({"RAW_URI": "http://h:1/paycore/x?y=%41"}) == "/paycore/x?y=%41"
    assert raw_uri({"REQUEST_URI": "/paycore/x?%C3%A9"}) == "/paycore/x?%C3%A9"


def test_root_mount_does_not_shadow_host_routes() -> None:
    app = host_app()
    PayCore(app, gateway=make_gateway(), prefix="/")
    client = app.test_client()
    assert client.get("/hello").json == {"z": 1, "a": 2}
    assert client.get("/prices").json["vsCurrency"] == "usd"  # type: ignore[index]
    assert client.get("/elsewhere").data == b"not found: /elsewhere"
