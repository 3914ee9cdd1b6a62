"""Paycore's endpoints as the host framework's own routes: a host guards one by name, the
others keep answering, and host code reaches the gateway the framework's way."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import flask
import pytest
from adapter_helpers import PREFIX, make_gateway
from flask import Flask, request
from litestar import Litestar, get
from litestar.connection import ASGIConnection
from litestar.di import NamedDependency
from litestar.exceptions import NotAuthorizedException
from litestar.handlers import BaseRouteHandler
from litestar.testing import TestClient

from paycore import Gateway
from paycore.api import routes
from paycore_flask import PayCore, current_gateway
from paycore_litestar import ROUTE_OPT, PayCoreConfig, PayCorePlugin


@pytest.fixture
def gateway() -> Iterator[Gateway]:
    gw = make_gateway()
    yield gw
    gw.close()


def flask_host(gateway: Gateway) -> Flask:
    app = Flask("host")
    PayCore(app, gateway=gateway, prefix=PREFIX)

    @app.before_request
    def only_staff_create_invoices() -> tuple[str, int] | None:
        if request.endpoint == "paycore.create_invoice" and "x-staff" not in request.headers:
            return "staff only", 403
        return None

    @app.get("/gateway-id")
    def gateway_id() -> flask.Response:
        return flask.jsonify(same=current_gateway() is gateway)

    return app


def test_flask_host_guards_one_paycore_endpoint(gateway: Gateway) -> None:
    client = flask_host(gateway).test_client()
    refused = client.post(PREFIX + "/invoice", json={"amount": "1"})
    assert (refused.status_code, refused.data) == (403, b"staff only")
    # The guard let it through: paycore's own answer (a 400 on the incomplete body).
    passed = client.post(PREFIX + "/invoice", json={"amount": "1"}, headers={"x-staff": "1"})
    assert passed.status_code == 400 and passed.data.startswith(b"invalid request")
    assert client.get(PREFIX + "/prices").status_code == 200
    assert client.get(PREFIX + "/openapi.json").status_code == 200
    # Other methods and unknown paths still get paycore's 405/404, not the guard's.
    wrong = client.get(PREFIX + "/invoice")
    assert (wrong.status_code, wrong.data) == (405, b"method not allowed: /invoice takes POST")
    assert client.get(PREFIX + "/nowhere").data == b"not found: /nowhere"


def test_flask_current_gateway(gateway: Gateway) -> None:
    app = flask_host(gateway)
    assert app.test_client().get("/gateway-id").json == {"same": True}
    with app.app_context():
        assert current_gateway() is gateway
    with Flask("bare").app_context(), pytest.raises(RuntimeError, match="not registered"):
        current_gateway()


def refuse(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
    if "x-staff" not in connection.headers:
        raise NotAuthorizedException("staff only")


def by_route_name(
    connection: ASGIConnection[Any, Any, Any, Any], handler: BaseRouteHandler
) -> None:
    """An app-wide guard singling out one paycore endpoint by the handler's ``opt``."""
    if handler.opt.get(ROUTE_OPT) == "get_invoice":
        refuse(connection, handler)


@get("/gateway-id")
async def gateway_id(paycore_gateway: NamedDependency[Gateway]) -> dict[str, int]:
    return {"id": id(paycore_gateway)}


def check_litestar_guarded(client: TestClient[Litestar], method: str, path: str) -> None:
    refused = client.request(method, PREFIX + path)
    assert refused.status_code == 401
    assert client.get(PREFIX + "/prices").status_code == 200
    assert client.get(PREFIX + "/openapi.json").status_code == 200
    assert client.get(PREFIX + "/nowhere").content == b"not found: /nowhere"


def test_litestar_host_guards_one_paycore_endpoint(gateway: Gateway) -> None:
    config = PayCoreConfig(gateway=gateway, guards={"paycore.create_invoice": [refuse]})
    with TestClient(Litestar([gateway_id], plugins=[PayCorePlugin(config)])) as client:
        check_litestar_guarded(client, "POST", "/invoice")
        passed = client.post(PREFIX + "/invoice", json={"amount": "1"}, headers={"x-staff": "1"})
        assert passed.status_code == 400 and passed.content.startswith(b"invalid request")
        wrong = client.get(PREFIX + "/invoice")
        assert (wrong.status_code, wrong.content) == (
            405,
            b"method not allowed: /invoice takes POST",
        )
        # The gateway is a dependency host handlers ask for by name.
        assert client.get("/gateway-id").json() == {"id": id(gateway)}


def test_litestar_app_wide_guard_by_route_name_covers_head(gateway: Gateway) -> None:
    config = PayCoreConfig(gateway=gateway)
    app = Litestar([], plugins=[PayCorePlugin(config)], guards=[by_route_name])
    with TestClient(app) as client:
        check_litestar_guarded(client, "GET", "/invoice/abc")
        assert client.head(PREFIX + "/invoice/abc").status_code == 401  # HEAD is guarded too
        missing = client.get(PREFIX + "/invoice/abc", headers={"x-staff": "1"})
        assert missing.status_code == 404 and missing.content.startswith(b"invoice")


def test_litestar_guard_for_an_unknown_route_is_refused(gateway: Gateway) -> None:
    config = PayCoreConfig(gateway=gateway, guards={"paycore.create_invoce": [refuse]})
    with pytest.raises(ValueError, match="create_invoce"):
        Litestar([], plugins=[PayCorePlugin(config)])
    # /checkout has no handler of its own (Litestar gives it /checkout/'s): not silently open
    config = PayCoreConfig(gateway=gateway, guards={"paycore.page_no_slash": [refuse]})
    with pytest.raises(ValueError, match="page_no_slash"):
        Litestar([], plugins=[PayCorePlugin(config)])


def concrete(path: str) -> str:
    return path.replace("{guid}", "abc").replace("{name}", "x.js")


def test_each_row_reaches_its_own_litestar_handler(gateway: Gateway) -> None:
    """Not a catch-all that would answer the same bytes but skip the row's guards: Litestar
    prefers a ``{rest:path}`` sibling to a ``{guid}`` one, so the fallbacks must avoid it."""
    seen: list[str | None] = []

    def record(_: ASGIConnection[Any, Any, Any, Any], handler: BaseRouteHandler) -> None:
        seen.append(handler.name)

    app = Litestar([], plugins=[PayCorePlugin(PayCoreConfig(gateway=gateway))], guards=[record])
    with TestClient(app) as client:
        for route in routes():
            expected = "paycore." + ("checkout_page" if route.path == "/checkout" else route.name)
            for method in route.methods:
                client.request(method, PREFIX + concrete(route.path))
                assert seen.pop() == expected, (method, route.path)
            if "GET" in route.methods:
                client.head(PREFIX + concrete(route.path))
                assert seen.pop() == expected + ".head", route.path
        for path in ("/invoice/a/b", "/checkout/assets/a/b", "/auth", "/invoice/challenge/x"):
            answer = client.get(PREFIX + path)
            assert (answer.status_code, answer.content) == (404, f"not found: {path}".encode())


def test_each_row_reaches_its_own_flask_endpoint(gateway: Gateway) -> None:
    app = Flask("host")
    PayCore(app, gateway=gateway, prefix=PREFIX)
    seen: list[str | None] = []
    app.before_request(lambda: seen.append(request.endpoint))
    client = app.test_client()
    for route in routes():
        for method in (*route.methods, *(("HEAD",) if "GET" in route.methods else ())):
            client.open(PREFIX + concrete(route.path), method=method)
            assert seen.pop() == "paycore." + route.name, (method, route.path)


def test_route_names_are_unique() -> None:
    """A new row whose name repeats another's would take over its Flask endpoint."""
    names = [route.name for route in routes()]
    assert len(names) == len(set(names))
    assert "create_invoice" in names and "webhooks_get" in names


def test_a_paycore_router_is_mounted_once_and_never_shared(gateway: Gateway) -> None:
    """build_router makes a Router per app and Litestar does not copy it (OneAppRouter):
    mounting that one Router in a second app would share its handlers, so it is refused."""
    from paycore_litestar.handler import build_router

    router = build_router(PREFIX, gateway)
    with TestClient(Litestar([router])) as first:
        assert first.get(f"{PREFIX}/nosuch").status_code == 404
    with pytest.raises(RuntimeError, match="serves one app"):
        Litestar([router])
