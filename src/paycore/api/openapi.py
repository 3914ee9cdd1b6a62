"""The OpenAPI 3.1 document, generated from the route table so it cannot drift from it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import __version__
from .routing import Call, Route
from .wire import body_schema, query_parameters

_ERROR_TEXT = {
    400: "invalid request: <field>: <reason>",
    401: "session signature: <reason> (or wallet signature: <reason>)",
    403: "forbidden: <reason>",
    404: "invoice {guid} not found",
    409: "Conflict",
    410: "deprecated: <what to use instead> (or payment link <id> is disabled, ...)",
    413: "payload too large",
    429: "too many requests: <what>, retry later (with Retry-After)",
    502: "chain node: <method>: <reason>",
}

#: The schema of a success body that is not described by a JSON Schema of its own.
_BODY: dict[str, dict[str, Any]] = {
    "application/json": {},
    "text/html": {"type": "string"},
    "text/csv": {"type": "string"},
    "image/svg+xml": {"type": "string"},
    "text/event-stream": {"type": "string"},
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
        "schema": {"type": "string"},
        "description": "none: answer in plain JSON although the key registered an encryption key",
    },
]


IDEMPOTENCY_HEADER = {
    "name": "Idempotency-Key",
    "in": "header",
    "required": False,
    "schema": {"type": "string", "pattern": "^[\\x21-\\x7e]{1,255}$"},
    "description": (
        "a key of the client's choosing (a UUID): a retry with the same key and the same "
        "request is answered with the first answer (header idempotent-replayed: true) and "
        "creates nothing; the same key with another request is a 409. Kept 24 hours, per owner"
    ),
}


def document(
    routes: Sequence[Route], server_url: str = "", chain_ids: Sequence[int] = ()
) -> dict[str, Any]:
    """The OpenAPI document of ``routes``. ``chain_ids`` (the deployment's configured chains)
    make every chainId an enum of them: a schema that admitted any integer would promise
    that chains nobody configured are accepted."""
    chains = tuple(sorted(chain_ids))
    paths: dict[str, dict[str, Any]] = {}
    for route in routes:
        for method in route.methods:
            paths.setdefault(route.path, {})[method.lower()] = operation(route, method, chains)
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


def operation(route: Route, method: str, chains: Sequence[int] = ()) -> dict[str, Any]:
    """The OpenAPI operation of one route and method: the fragment the document puts under
    its path, and what the Litestar adapter hands to Litestar's own schema."""
    chains = tuple(sorted(chains))
    # A GET reads its request from the query, anything else from its JSON body.
    as_query = method in ("GET", "HEAD")
    params: list[dict[str, Any]] = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
        for name in route.pattern.groupindex
    ]
    if route.request is not None and as_query:
        params += query_parameters(route.request, chains)
    if route.session != "none":
        params += SESSION_HEADERS
    errors = set(route.errors)
    if route.idempotent:
        params.append(IDEMPOTENCY_HEADER)
        errors.add(409)
    if route.request is not None:
        errors.add(400)  # every field is parsed, and a malformed one is refused
    if not as_query:
        errors.add(413)  # the body size cap, checked before anything else
    if route.session != "none":
        errors.add(401)  # session headers, when sent, are verified on every such route
    op: dict[str, Any] = {
        "summary": route.summary,
        "operationId": operation_id(route, method),
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
                for code in sorted(errors)
            },
        },
    }
    if route.conditional:
        params.append(
            {
                "name": "If-None-Match",
                "in": "header",
                "required": False,
                "description": "the ETag of an earlier answer: 304 if it is still current",
                "schema": {"type": "string"},
            }
        )
        op["responses"][str(route.status)]["headers"] = {
            "ETag": {
                "description": "the stored version of what the answer shows",
                "schema": {"type": "string"},
            }
        }
        op["responses"]["304"] = {
            "description": "not modified: the ETag named in If-None-Match is still current"
        }
    if route.request is not None and not as_query:
        op["requestBody"] = {
            "required": not route.signed_empty_body,
            "content": {"application/json": {"schema": body_schema(route.request, chains)}},
        }
    return op


def operation_id(route: Route, method: str) -> str:
    """Module and handler name; a route with several methods adds the method to keep ids
    unique."""
    base = route.handler.__module__.rsplit(".", 1)[-1] + "_" + route.handler.__name__
    return f"{base}_{method.lower()}" if len(route.methods) > 1 else base


def openapi_route() -> Route:
    from .table import ROUTES

    def serve(call: Call) -> dict[str, Any]:
        uri_path = call.request.uri.split("?", 1)[0]
        prefix = uri_path[: -len(call.request.path)] if uri_path.endswith(call.request.path) else ""
        return document(ROUTES, prefix, tuple(call.gateway.settings.chains))

    return Route(
        ("GET",),
        "/openapi.json",
        serve,
        "The OpenAPI document of every route",
        session="none",
        soft_mode="public",
    )
