"""The HTTP interface, framework-free: a route table and one ``handle`` call for adapters."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..auth.session import sends_session_headers
from ..storage.invoice_read import WouldBlock, without_blocking
from .http import MAX_BODY, Request, Response
from .routing import Route, Router, dispatch
from .table import ROUTES, build_router

if TYPE_CHECKING:
    from ..gateway import Gateway

_router: Router | None = None


def handle(gateway: Gateway, request: Request) -> Response:
    """Answer one request with its whole body in ``Response.body``."""
    return handle_streamed(gateway, request).joined()


def routes() -> list[Route]:
    """Every row the dispatcher routes (the table and ``/openapi.json``): what adapters give
    a framework route each, so hosts see, guard and rate-limit each endpoint."""
    return list(_shared_router().routes)


def handle_streamed(gateway: Gateway, request: Request) -> Response:
    """Answer one request: what every adapter route calls, and all it calls. A large body
    may come as ``Response.chunks`` (made while it is sent), for adapters to stream.

    The route is matched here again even when the framework already picked a row: the
    dispatcher stays the one judge of paths, methods and 404/405 texts under every host."""
    return dispatch(gateway, _shared_router(), request)


def handle_inline(gateway: Gateway, request: Request) -> Response | None:
    """The answer made on the calling thread -- an event loop's -- for a route marked
    ``inline`` that a request without session headers reaches, or ``None``: then the
    adapter calls :func:`handle_streamed` in a worker thread as for any other request.
    ``None`` also when the answer would have to wait after all (an expiry to write, no
    idle pooled connection): nothing was done, the thread does it all.

    Only for an adapter that knows the request is for such a route (Litestar's handler
    per row); the answer is the one :func:`handle_streamed` would give."""
    if sends_session_headers(request.headers):
        return None
    try:
        with without_blocking():
            return dispatch(gateway, _shared_router(), request)
    except WouldBlock:
        return None


def reads_inline(gateway: Gateway) -> bool:
    """Whether :func:`handle_inline` is worth trying on ``gateway``: not when its database
    is PostgreSQL, whose every read is a round trip an event loop must not wait out (the
    attempt would end in ``WouldBlock`` after routing the request for nothing). Only a
    hint: a store that cannot answer inline still refuses, and a thread then answers."""
    return not gateway.settings.database_url.startswith("postgres")


def _shared_router() -> Router:
    global _router
    if _router is None:
        _router = build_router()
    return _router


__all__ = [
    "MAX_BODY",
    "ROUTES",
    "Request",
    "Response",
    "Route",
    "Router",
    "build_router",
    "handle",
    "handle_inline",
    "handle_streamed",
    "reads_inline",
    "routes",
]
