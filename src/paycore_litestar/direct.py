"""A request of an ``inline`` row answered under Litestar's router, without its request and
response objects: the checkout page's poll, a signed read, and a signed ``POST /invoice``.

Litestar routes the request and runs the app's and paycore Router's middleware as for any
other; this is the innermost middleware of the row's handler. When nothing of the host
would see the request past it -- no guard, no ``before_request``, ``after_request`` or
``after_response`` hook, no response headers or cookies set on a layer, no response cache
(:func:`sees_nothing`) -- the core's answer is sent as is, with the head Litestar would
give it (:func:`litestar_head`):

- a GET when the core answers it on the loop (``paycore.api.handle_inline_async``);
  otherwise the handler runs as it always does;
- a POST, its body read here (at most ``MAX_BODY``), answered on the loop where the store
  spends and writes all or nothing there (``paycore.api.handle_inline``: a SQLite file),
  else by the core on a worker thread, as the handler would call it. A body over the cap
  goes to the handler, which answers it as it always does, the body read so far handed on
  to it; a client gone before its body ended gets no answer (nothing was done).

Why: on the poll, building Litestar's ``Request``, resolving the handler's arguments and
its ``Response`` cost as much CPU as paycore's own read and answer; the checkout page's
poll is the request a shop serves most (docs/performance.md, "Sixth sitting"). On an
invoice's creation they were a fifth of the CPU (docs/performance.md, "Seventh sitting").
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from typing import Any

from anyio import to_thread
from litestar.handlers import HTTPRouteHandler
from litestar.types import ASGIApp, HTTPScope, Receive, Scope, Send

from paycore import Gateway
from paycore.api import MAX_BODY, handle_inline_async, handle_streamed
from paycore.api import Response as PaycoreResponse

from .request import scope_request


def direct_answers(gateway: Gateway, prefix: str) -> Callable[[ASGIApp], ASGIApp]:
    """The middleware (Litestar's form: a callable taking the next app) for one ``inline``
    row's handler."""

    def wrap(app: ASGIApp) -> ASGIApp:
        return DirectAnswer(app, gateway, prefix)

    return wrap


class DirectAnswer:
    """See the module's docstring; ``app`` is the handler as Litestar runs it."""

    def __init__(self, app: ASGIApp, gateway: Gateway, prefix: str) -> None:
        self.app = app
        self.gateway = gateway
        self.prefix = prefix
        #: Whether the host sees nothing past this point (decided on the first request:
        #: Litestar resolves the handler's layers once the app is built). Litestar builds
        #: one middleware stack per handler, so this instance serves one handler.
        self._free: bool | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # A handler's middleware sees its handler's requests only: HTTP ones, here.
        http = typing.cast(HTTPScope, scope)
        method = http["method"]
        if method == "GET" and self._sees_nothing(http):
            answered = await handle_inline_async(self.gateway, scope_request(http, self.prefix))
            if answered is not None:
                await send_answer(send, answered)
                return
        elif method == "POST" and self._sees_nothing(http):
            messages, body = await read_body(http, receive)
            if body is None:
                if messages and messages[-1]["type"] == "http.disconnect":
                    return  # the client left before its body ended: no one to answer
                # Over the cap: the handler answers it as it always does.
                await self.app(scope, replaying(messages, receive), send)
                return
            request = scope_request(http, self.prefix, body)
            written = await handle_inline_async(self.gateway, request)
            if written is None:
                written = await to_thread.run_sync(handle_streamed, self.gateway, request)
            await send_answer(send, written)
            return
        await self.app(scope, receive, send)

    def _sees_nothing(self, scope: HTTPScope) -> bool:
        if self._free is None:
            self._free = sees_nothing(typing.cast(HTTPRouteHandler, scope["route_handler"]))
        return self._free


async def read_body(scope: HTTPScope, receive: Receive) -> tuple[list[Any], bytes | None]:
    """The messages received and the body they carry; the body is ``None`` when it is known
    to exceed ``MAX_BODY`` (a declared length over it is refused before anything is
    received) or the client left before it ended."""
    messages: list[Any] = []
    for name, value in scope["headers"]:
        if name == b"content-length" and value.isdigit() and int(value) > MAX_BODY:
            return messages, None
    chunks: list[bytes] = []
    total = 0
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            return messages, None
        chunk = message.get("body", b"")
        chunks.append(chunk)
        total += len(chunk)
        if total > MAX_BODY:
            return messages, None
        if not message.get("more_body", False):
            return messages, b"".join(chunks)


def replaying(messages: list[Any], receive: Receive) -> Receive:
    """``receive`` that first gives back ``messages``, already taken from it."""
    pending = list(messages)

    async def replay() -> Any:
        return pending.pop(0) if pending else await receive()

    return replay


def sees_nothing(handler: HTTPRouteHandler) -> bool:
    """Whether no host code runs between this middleware and the handler's answer on the
    wire: the layers' guards, request and response hooks, response headers and cookies,
    and the response cache are Litestar's to apply, and the direct path skips them all."""
    return not (
        handler.resolve_guards()
        or handler.resolve_before_request()
        or any(layer.after_request for layer in handler.ownership_layers)
        or handler.resolve_after_response()
        or handler.resolve_response_headers()
        or handler.resolve_response_cookies()
        or handler.cache
    )


def litestar_head(response: PaycoreResponse) -> list[tuple[bytes, bytes]]:
    """The head Litestar sends for ``to_litestar(response)``: paycore's headers and the
    content type, names in lower case, in that order; then the length, unless the status
    allows no body (204, 304)."""
    fields: dict[str, Any] = {**response.headers, "content-type": response.content_type}
    head = [
        (name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in fields.items()
    ]
    if response.status not in (204, 304) and response.status >= 200:
        head.append((b"content-length", str(len(response.body)).encode("ascii")))
    return head


async def send_answer(send: Send, response: PaycoreResponse) -> None:
    """A whole answer, as Litestar would send it (an event stream has no place here: the
    rows this serves answer with a body, joined should a row ever stream one)."""
    response = response.joined()
    body = response.body if response.status not in (204, 304) else b""
    head = litestar_head(response)
    await send({"type": "http.response.start", "status": response.status, "headers": head})
    await send({"type": "http.response.body", "body": body, "more_body": False})
