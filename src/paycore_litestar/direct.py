"""A GET of an ``inline`` row answered under Litestar's router, without its request and
response objects: the checkout page's poll, and on a SQLite file a signed read.

Litestar routes the request and runs the app's and paycore Router's middleware as for any
other; this is the innermost middleware of the row's handler. When nothing of the host
would see the request past it -- no guard, no ``before_request``, ``after_request`` or
``after_response`` hook, no response headers or cookies set on a layer, no response cache
(:func:`sees_nothing`) -- the core's answer (``paycore.api.handle_inline_async``) is sent
as is, with the head Litestar would give it (:func:`litestar_head`). Otherwise, and
whenever the core cannot answer on the loop, the handler runs as it always does.

Why: on the poll, building Litestar's ``Request``, resolving the handler's arguments and
its ``Response`` cost as much CPU as paycore's own read and answer; the checkout page's
poll is the request a shop serves most (docs/performance.md, "Sixth sitting").
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from typing import Any

from litestar.handlers import HTTPRouteHandler
from litestar.types import ASGIApp, HTTPScope, Receive, Scope, Send

from paycore import Gateway
from paycore.api import Response as PaycoreResponse
from paycore.api import handle_inline_async

from .request import scope_request


def direct_gets(gateway: Gateway, prefix: str) -> Callable[[ASGIApp], ASGIApp]:
    """The middleware (Litestar's form: a callable taking the next app) for one ``inline``
    row's handler."""

    def wrap(app: ASGIApp) -> ASGIApp:
        return DirectGet(app, gateway, prefix)

    return wrap


class DirectGet:
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
        if http["method"] == "GET" and self._sees_nothing(http):
            answered = await handle_inline_async(self.gateway, scope_request(http, self.prefix))
            if answered is not None:
                await send_answer(send, answered)
                return
        await self.app(scope, receive, send)

    def _sees_nothing(self, scope: HTTPScope) -> bool:
        if self._free is None:
            self._free = sees_nothing(typing.cast(HTTPRouteHandler, scope["route_handler"]))
        return self._free


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
