"""What a host hands the adapters besides settings: pluggy ``plugins`` for the gateway they
build, ``guards`` and middleware (Litestar) or ``after_request`` hooks (Flask). Each applies
to paycore's routes and leaves the host's own routes alone."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask, request
from flask import Response as FlaskResponse
from litestar import Litestar, get
from litestar.connection import ASGIConnection
from litestar.exceptions import NotAuthorizedException
from litestar.handlers import BaseRouteHandler
from litestar.middleware.rate_limit import RateLimitConfig
from litestar.testing import TestClient
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from paycore import Gateway, Settings
from paycore.plugins.hookspecs import hookimpl
from paycore.storage.memory import MemoryStorage
from paycore_flask import PayCore, state
from paycore_litestar import PayCoreConfig, PayCorePlugin

SETTINGS = Settings(database_url="memory://")


class OwnStorage:
    """A storage plugin: hands the gateway this very store for ``memory://``."""

    def __init__(self) -> None:
        self.storage = MemoryStorage()

    @hookimpl
    def paycore_storage(self, settings: Settings) -> MemoryStorage | None:
        return self.storage if settings.database_url == "memory://" else None


# -- Flask ---------------------------------------------------------------------------------


def staff_only() -> Any:
    if "x-staff" not in request.headers:
        return "staff only", 403
    return None


def tag(response: FlaskResponse) -> FlaskResponse:
    response.headers["x-paycore"] = "1"
    return response


def flask_app(**options: Any) -> Flask:
    app = Flask("shop")

    @app.get("/shop")
    def shop() -> str:
        return "the shop"

    PayCore(app, settings=SETTINGS, prefix="/pay", **options)
    return app


def test_flask_plugins_reach_the_gateway_it_builds() -> None:
    plugin = OwnStorage()
    app = flask_app(plugins=[plugin])
    assert state(app).gateway.storage is plugin.storage


def test_flask_refuses_plugins_with_a_ready_gateway() -> None:
    gateway = Gateway(SETTINGS, entry_points=False)
    try:
        with pytest.raises(TypeError, match="plugins only when it builds"):
            PayCore(Flask("shop"), gateway=gateway, plugins=[OwnStorage()])
    finally:
        gateway.close()


def test_flask_guards_apply_to_paycore_routes_only() -> None:
    client = flask_app(guards=[staff_only]).test_client()
    for path in ("/pay/prices", "/pay/invoice/abc", "/pay/no-such-route", "/pay/checkout/"):
        refused = client.get(path)
        assert (refused.status_code, refused.text) == (403, "staff only"), path
    assert client.get("/pay/prices", headers={"x-staff": "1"}).status_code == 200
    assert client.get("/shop").status_code == 200


def test_flask_after_request_hooks_apply_to_paycore_routes_only() -> None:
    client = flask_app(after_request=[tag]).test_client()
    assert client.get("/pay/prices").headers.get("x-paycore") == "1"
    assert client.get("/pay/nothing-here").headers.get("x-paycore") == "1"
    assert "x-paycore" not in client.get("/shop").headers


# -- Litestar ------------------------------------------------------------------------------


def staff_guard(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
    if "x-staff" not in connection.headers:
        raise NotAuthorizedException("staff only")


def tagging(app: ASGIApp) -> ASGIApp:
    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        async def tagged(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), (b"x-paycore", b"1")]
            await send(message)

        await app(scope, receive, tagged)

    return middleware


@get("/shop")
async def shop() -> str:
    return "the shop"


def litestar_app(**options: Any) -> tuple[Litestar, PayCorePlugin]:
    plugin = PayCorePlugin(PayCoreConfig(settings=SETTINGS, prefix="/pay", **options))
    return Litestar([shop], plugins=[plugin]), plugin


def test_litestar_plugins_reach_the_gateway_it_builds() -> None:
    own = OwnStorage()
    app, plugin = litestar_app(plugins=[own])
    with TestClient(app):
        assert plugin.gateway.storage is own.storage


def test_litestar_refuses_plugins_with_a_ready_gateway() -> None:
    gateway = Gateway(SETTINGS, entry_points=False)
    try:
        with pytest.raises(TypeError, match="plugins only when it builds"):
            PayCoreConfig(gateway=gateway, plugins=[OwnStorage()])
    finally:
        gateway.close()


def test_litestar_guards_apply_to_paycore_routes_only() -> None:
    app, _ = litestar_app(guards=[staff_guard])
    with TestClient(app) as client:
        for path in ("/pay/prices", "/pay/invoice/abc", "/pay/no-such-route", "/pay/checkout/"):
            assert client.get(path).status_code == 401, path
        assert client.get("/pay/prices", headers={"x-staff": "1"}).status_code == 200
        assert client.get("/shop").status_code == 200


def test_litestar_middleware_applies_to_paycore_routes_only() -> None:
    app, _ = litestar_app(middleware=[tagging])
    with TestClient(app) as client:
        assert client.get("/pay/prices").headers.get("x-paycore") == "1"
        assert client.get("/pay/nothing-here").headers.get("x-paycore") == "1"
        assert "x-paycore" not in client.get("/shop").headers


def test_litestar_guards_by_name_still_single_out_one_endpoint() -> None:
    app, _ = litestar_app(guards={"paycore.invoices_prices": [staff_guard]})
    with TestClient(app) as client:
        assert client.get("/pay/prices").status_code == 401
        assert client.get("/pay/checkout/").status_code == 200


def test_litestar_rate_limit_middleware_limits_paycore_routes_only() -> None:
    """docs/embedding.md's rate limit: Litestar's own RateLimitConfig, on paycore's Router."""
    limit = RateLimitConfig(rate_limit=("minute", 3))
    app, _ = litestar_app(middleware=[limit.middleware])
    with TestClient(app) as client:
        answers = [client.get("/pay/prices").status_code for _ in range(4)]
        assert answers == [200, 200, 200, 429]
        assert [client.get("/shop").status_code for _ in range(5)] == [200] * 5
