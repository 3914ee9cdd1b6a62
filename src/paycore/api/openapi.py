"""The OpenAPI 3.1 document, generated from the route table so it cannot drift from it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import __version__
from .routing import Call, Route

_ERROR_TEXT = {
    400: "invalid request: <field>: <reason>",
    401: "session signature: <reason> (or wallet signature: <reason>)",
    403: "forbidden: <reason>",
    404: "invoice {guid} not found",
    409: "Conflict",
    410: "deprecated: <what to use instead>",
    413: "payload too large",
    502: "chain node: <method>: <reason>",
}

#: The schema of a success body that is not described by a JSON Schema of its own.
_BODY: dict[str, dict[str, Any]] = {
    "application/json": {},
    "text/html": {"type": "string"},
    "image/svg+xml": {"type": "string"},
    "*/*": {"type": "string", "format": "binary"},
}

SESSION_HEADERS = [
    {
        "name": "x-session-nonce",
        "in": "header",
        "required": False,
        "schema": {"type": "string", "pattern": "^[0-9]+$"},
        "description": (
            "positive integer: Date.now() milliseconds or a counter, at most nonce_horizon_ms "
            "ahead of the server clock; window mode (default) accepts each signed request "
            "once at any nonce above the key's highest minus nonce_window, strict mode only "
            "nonces above the highest"
        ),
    },
    {
        "name": "x-session-signature",
        "in": "header",
        "required": False,
        "schema": {"type": "string"},
        "description": (
            "EIP-191 signature over sess:{nonce}:{sha256hex(payload)}; the payload is the "
            "request URI exactly as sent (path and query) for GET and HEAD, the body bytes "
            "otherwise. Nothing else is covered: a POST's parameters come only from its body "
            "(never the query string), a GET's only from its URI (never a body)"
        ),
    },
    {"name": "x-session-pubkey", "in": "header", "required": False, "schema": {"type": "string"}},
    {
        "name": "x-encryption",
        "in": "header",
        "required": False,
        "schema": {"type": "string", "enum": ["none"]},
    },
]


def document(routes: Sequence[Route], server_url: str = "") -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    for route in routes:
        for method in route.methods:
            paths.setdefault(route.path, {})[method.lower()] = _operation(route, method)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "paycore",
            "version": __version__,
            "description": "Non-custodial crypto invoice gateway.",
        },
        "servers": [{"url": server_url or "/"}],
        "paths": paths,
    }


def _operation(route: Route, method: str) -> dict[str, Any]:
    # A route served as GET and POST takes its body's fields as query parameters on GET.
    as_query = method == "GET" and route.request_body is not None
    params: list[dict[str, Any]] = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
        for name in route.pattern.groupindex
    ]
    params += [
        {"name": n, "in": "query", "required": req, "schema": {"type": t}, "description": d}
        for n, t, req, d in route.query
    ]
    if as_query and route.request_body is not None:
        params += _body_as_query(route.request_body)
    if route.session != "none":
        params += SESSION_HEADERS
    op: dict[str, Any] = {
        "summary": route.summary,
        "operationId": _operation_id(route, method),
        "parameters": params,
        "responses": {
            str(route.status): {
                "description": "success",
                "content": {
                    route.media_type: {"schema": route.response or _BODY[route.media_type]}
                },
            },
            **{
                str(code): {
                    "description": _ERROR_TEXT.get(code, "error"),
                    "content": {"text/plain": {"schema": {"type": "string"}}},
                }
                for code in sorted({*route.errors, 413} if route.request_body else route.errors)
            },
        },
    }
    if route.request_body is not None and not as_query:
        op["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": route.request_body}},
        }
    return op


def _operation_id(route: Route, method: str) -> str:
    """Module and handler name; a route with several methods adds the method to keep ids
    unique."""
    base = route.handler.__module__.rsplit(".", 1)[-1] + "_" + route.handler.__name__
    return f"{base}_{method.lower()}" if len(route.methods) > 1 else base


def _body_as_query(schema: dict[str, Any] | Any) -> list[dict[str, Any]]:
    """Query parameters from a JSON body schema's scalar properties (GET form of a route)."""
    required = set(schema.get("required", ()))
    params: list[dict[str, Any]] = []
    for name, prop in schema.get("properties", {}).items():
        kinds = prop.get("type")
        kinds = kinds if isinstance(kinds, list) else [kinds]
        if "object" in kinds or "array" in kinds:
            continue
        query_schema: dict[str, Any] = {"type": "string"}
        if "integer" in kinds:
            query_schema["pattern"] = "^[0-9]+$"
        elif "pattern" in prop:
            query_schema["pattern"] = prop["pattern"]
        elif "enum" in prop:
            query_schema["enum"] = prop["enum"]
        params.append(
            {"name": name, "in": "query", "required": name in required, "schema": query_schema}
        )
    return params


def openapi_route() -> Route:
    from .table import ROUTES

    def serve(call: Call) -> dict[str, Any]:
        uri_path = call.request.uri.split("?", 1)[0]
        prefix = uri_path[: -len(call.request.path)] if uri_path.endswith(call.request.path) else ""
        return document(ROUTES, prefix)

    return Route(
        ("GET",), "/openapi.json", serve, "The OpenAPI document of every route", session="none"
    )
