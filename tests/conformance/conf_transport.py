"""One small client interface over every way paycore's HTTP interface can be reached.

``core`` calls :func:`paycore.api.handle` with a hand-built :class:`paycore.api.Request`;
``flask`` and ``litestar`` go through the real adapters and their frameworks' test clients.
Every transport mounts paycore under :data:`PREFIX`, so a signed GET covers the same URI
text everywhere, and the suite can compare answers byte for byte across transports.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Protocol
from urllib.parse import unquote

import paycore.api
from paycore.gateway import Gateway

PREFIX = "/paycore"
TRANSPORTS = ("core", "flask", "litestar")

#: (status, lowercased response headers, body bytes)
Reply = tuple[int, dict[str, str], bytes]


class Transport(Protocol):
    name: str

    def request(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        raw_body: bytes | None = None,
        query: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Reply:
        """``path`` is below the prefix; ``query`` is sent exactly as given (no re-encoding)."""
        ...


def encode_body(json_body: Any, raw_body: bytes | None) -> bytes:
    """The exact bytes sent: ``raw_body`` verbatim, else compact JSON, else nothing."""
    if raw_body is not None:
        return raw_body
    if json_body is None:
        return b""
    import json

    return json.dumps(json_body, separators=(",", ":")).encode()


def request_uri(path: str, query: str | None) -> str:
    """The request target as a client sends it: what a GET session signature covers."""
    return PREFIX + path + (f"?{query}" if query else "")


class _Sending:
    """What every transport does before sending: the exact body bytes and its headers."""

    name: str

    def request(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        raw_body: bytes | None = None,
        query: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Reply:
        body = encode_body(json_body, raw_body)
        sent = dict(headers or {})
        if body:
            sent.setdefault("content-type", "application/json")
        return self.send(method, path, query, body, sent)

    def send(
        self, method: str, path: str, query: str | None, body: bytes, headers: dict[str, str]
    ) -> Reply:
        raise NotImplementedError


class CoreTransport(_Sending):
    name = "core"

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway

    def send(
        self, method: str, path: str, query: str | None, body: bytes, headers: dict[str, str]
    ) -> Reply:
        response = paycore.api.handle(
            self.gateway,
            paycore.api.Request(
                method=method,
                path=unquote(path),  # servers hand adapters the decoded path
                query_string=query or "",
                headers=headers,
                body=body,
                raw_uri=request_uri(path, query),
            ),
        )
        out = {k.lower(): v for k, v in response.headers.items()}
        out["content-type"] = response.content_type
        return response.status, out, response.body


class FlaskTransport(_Sending):
    name = "flask"

    def __init__(self, gateway: Gateway) -> None:
        import flask

        import paycore_flask

        app = flask.Flask("conformance")
        paycore_flask.PayCore(app, gateway=gateway, prefix=PREFIX)  # type: ignore[attr-defined]
        self.client = app.test_client()

    def send(
        self, method: str, path: str, query: str | None, body: bytes, headers: dict[str, str]
    ) -> Reply:
        uri = request_uri(path, query)
        response = self.client.open(uri, method=method, data=body, headers=headers)
        out = {k.lower(): v for k, v in response.headers.items()}
        return response.status_code, out, response.get_data()


class LitestarTransport(_Sending):
    name = "litestar"

    def __init__(self, client: Any) -> None:
        self.client = client

    def send(
        self, method: str, path: str, query: str | None, body: bytes, headers: dict[str, str]
    ) -> Reply:
        uri = request_uri(path, query)
        # A redirect (GET /link/{id}) is the answer under test, as with the other two.
        response = self.client.request(
            method, uri, content=body, headers=headers, follow_redirects=False
        )
        out = {k.lower(): v for k, v in response.headers.items()}
        return response.status_code, out, response.content


def adapter_missing(name: str) -> str | None:
    """Why the ``name`` transport cannot run yet, or ``None`` when its adapter is there."""
    if name == "core":
        return None
    module_name, attrs_needed = {
        "flask": ("paycore_flask", ("PayCore",)),
        "litestar": ("paycore_litestar", ("PayCorePlugin", "PayCoreConfig")),
    }[name]
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:  # pragma: no cover - depends on the adapter's state
        return f"{module_name} does not import: {exc}"
    absent = [a for a in attrs_needed if not hasattr(module, a)]
    if absent:
        return (
            f"{module_name} is still an empty shell: it defines no {', '.join(absent)} "
            "(the adapter is being written)"
        )
    return None


@contextmanager
def open_transport(name: str, gateway: Gateway) -> Iterator[Transport]:
    if name == "core":
        yield CoreTransport(gateway)
    elif name == "flask":
        yield FlaskTransport(gateway)
    elif name == "litestar":
        from litestar import Litestar
        from litestar.testing import TestClient

        import paycore_litestar

        plugin = paycore_litestar.PayCorePlugin(  # type: ignore[attr-defined]
            paycore_litestar.PayCoreConfig(gateway=gateway, prefix=PREFIX)  # type: ignore[attr-defined]
        )
        app = Litestar(route_handlers=[], plugins=[plugin])
        with TestClient(app) as client:
            yield LitestarTransport(client)
    else:  # pragma: no cover
        raise ValueError(name)
