"""The HTTP interface, framework-free: a route table and one ``handle`` call for adapters."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .http import MAX_BODY, Request, Response
from .routing import Router, dispatch
from .table import ROUTES, build_router

if TYPE_CHECKING:
    from ..gateway import Gateway

_router: Router | None = None


def handle(gateway: Gateway, request: Request) -> Response:
    """Answer one request with its whole body in ``Response.body``."""
    return handle_streamed(gateway, request).joined()


def handle_streamed(gateway: Gateway, request: Request) -> Response:
    """Answer one request: what every adapter route calls, and all it calls. A large body
    may come as ``Response.chunks`` (made while it is sent), for adapters to stream."""
    global _router
    if _router is None:
        _router = build_router()
    return dispatch(gateway, _router, request)


__all__ = [
    "MAX_BODY",
    "ROUTES",
    "Request",
    "Response",
    "Router",
    "build_router",
    "handle",
    "handle_streamed",
]
