"""The catch-all route handler: copy Litestar's request into a paycore Request, and back.

Everything a paycore endpoint decides happens in ``paycore.api.handle``; this module only
knows how ASGI carries a request. The handler is async for one reason: the body is read
with a cap as it streams in, which needs ``await``. The core call itself is blocking and
runs in a worker thread (anyio's pool, the one ``sync_to_thread=True`` uses).
"""

from __future__ import annotations

import typing
from collections.abc import AsyncIterator, Iterable
from typing import Any
from urllib.parse import quote

import attrs
from anyio import to_thread
from litestar import Request, Router, route
from litestar import Response as LitestarResponse
from litestar.enums import HttpMethod
from litestar.response import Stream

from paycore import Gateway
from paycore.api import MAX_BODY, handle_streamed
from paycore.api import Request as PaycoreRequest
from paycore.api import Response as PaycoreResponse
from paycore.api.http import text_response
from paycore.errors import PayloadTooLarge

from .ws import WS_PATH, websocket_handler

#: Every method reaches paycore, which answers 404/405 itself with its own one-line texts.
METHODS = [
    HttpMethod.GET,
    HttpMethod.POST,
    HttpMethod.PUT,
    HttpMethod.PATCH,
    HttpMethod.DELETE,
    HttpMethod.HEAD,
    HttpMethod.OPTIONS,
    HttpMethod.TRACE,
]
AnyRequest = Request[Any, Any, Any]


def build_router(prefix: str, gateway: Gateway) -> Router:
    """A Router under ``prefix`` with one handler for ``/`` and ``/{subpath:path}``.

    ``request_max_body_size=None`` switches Litestar's own limit off for these routes only:
    our cap (and our 413 text) must win, and Litestar's would raise through the host's
    exception handlers. ``include_in_schema=False``: paycore serves its own OpenAPI document.
    """

    @route(
        ["/", "/{subpath:path}"],
        http_method=METHODS,
        name="paycore",
        include_in_schema=False,
        request_max_body_size=None,
    )
    async def paycore_handler(request: AnyRequest) -> LitestarResponse[Any]:
        body = await read_capped_body(request)
        if body is None:
            return to_litestar(payload_too_large())
        answer = await to_thread.run_sync(handle_streamed, gateway, to_paycore(request, body))
        return to_litestar(answer)

    @route(
        WS_PATH,
        http_method=METHODS,
        name="paycore-ws-http",
        include_in_schema=False,
        request_max_body_size=None,
    )
    async def ws_path_over_http(request: AnyRequest) -> LitestarResponse[Any]:
        """``{prefix}/ws`` without an upgrade: the core's answer, as under Flask. Without this
        Litestar would answer 405 itself, the path belonging to the websocket handler."""
        plain = attrs.evolve(to_paycore(request, b""), path=WS_PATH)
        return to_litestar(await to_thread.run_sync(handle_streamed, gateway, plain))

    return Router(
        prefix or "/",
        route_handlers=[paycore_handler, ws_path_over_http, websocket_handler(gateway)],
    )


async def read_capped_body(request: AnyRequest) -> bytes | None:
    """The body, or ``None`` once it is known to exceed MAX_BODY.

    A declared content-length over the limit is refused before anything is received; a
    streamed body is dropped as soon as it passes the limit.
    """
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY:
        return None
    chunks: list[bytes] = []
    total = 0
    async for chunk in request.stream():
        total += len(chunk)
        if total > MAX_BODY:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def to_paycore(request: AnyRequest, body: bytes) -> PaycoreRequest:
    subpath = request.path_params.get("subpath") or "/"
    path = subpath if subpath.startswith("/") else "/" + subpath
    sent = raw_uri(request).split("?", 1)[0]
    if sent.endswith("/") and not path.endswith("/"):
        path += "/"  # Litestar's router drops it; paycore treats /x/ and /x as two paths
    return PaycoreRequest(
        method=request.method.upper(),
        path=path,
        query_string=request.scope.get("query_string", b"").decode("utf-8", "replace"),
        headers=joined_headers(request),
        body=body,
        raw_uri=raw_uri(request),
    )


def joined_headers(request: AnyRequest) -> dict[str, str]:
    """Every header field, a repeated one joined with ``", "`` as WSGI servers join them.

    ``dict(request.headers)`` would keep only the first of two ``x-session-nonce`` fields;
    joined, a repeated session header reaches paycore as one value that does not parse, and
    is refused the same way under both adapters.
    """
    joined: dict[str, str] = {}
    for raw_name, raw_value in request.scope["headers"]:
        name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")
        joined[name] = f"{joined[name]}, {value}" if name in joined else value
    return joined


def raw_uri(request: AnyRequest) -> str:
    """The request target exactly as the client sent it: a GET's session signature covers it.

    ASGI's ``raw_path`` is the path undecoded (some test transports leave the query on it,
    and a raw path cannot hold a literal ``?``, so that case is recognised); without one the
    decoded path is re-quoted the way clients do.
    """
    scope = request.scope
    query = scope.get("query_string", b"")
    raw = scope.get("raw_path")
    if raw:
        if b"?" in raw:
            return raw.decode("utf-8", "replace")
        target = raw
    else:
        target = quote(scope["path"], safe="/:@!$&'()*+,;=~").encode()
    return (target + (b"?" + query if query else b"")).decode("utf-8", "replace")


def payload_too_large() -> PaycoreResponse:
    """The core's own 413 answer, so the text is paycore's and not Litestar's."""
    return text_response(PayloadTooLarge(MAX_BODY).text, PayloadTooLarge.status)


def to_litestar(response: PaycoreResponse) -> LitestarResponse[Any]:
    """Status, body, content type and headers copied as is.

    The content type goes in as a header too: Litestar would otherwise append its own
    ``; charset=`` to a ``text/*`` type that already has one. A streamed body becomes a
    ``Stream`` fed by :func:`in_threads`, whose pieces are made in a worker thread, as the
    rest of the call.
    """
    headers = {**response.headers, "content-type": response.content_type}
    if response.chunks is not None:
        return Stream(
            in_threads(response.chunks),
            status_code=response.status,
            media_type=response.content_type,
            headers=headers,
        )
    return LitestarResponse(
        content=response.body,
        status_code=response.status,
        media_type=response.content_type,
        headers=headers,
    )


async def in_threads(chunks: Iterable[bytes]) -> AsyncIterator[bytes]:
    """Each chunk produced in a worker thread (producing one reads storage, which blocks).

    Not Litestar's own wrapper for sync iterators: it ends the stream quietly on a
    ``ValueError`` raised by the iterator, and a stream cut short by an error must end
    broken (no last chunk), never look complete."""
    iterator = iter(chunks)
    done = object()
    while True:
        chunk = await to_thread.run_sync(next, iterator, done)
        if chunk is done:
            return
        yield typing.cast(bytes, chunk)
