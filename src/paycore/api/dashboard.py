"""Handlers of the merchant dashboard: the HTML shell and its static files.

The page is public like the checkout page (it holds nothing of an owner's; every owner's
read it makes is session-signed by the browser), so these routes take no session headers.
Its Content-Security-Policy allows this origin only: no inline script, no third-party
origin, no framing (the page asks the owner's wallet to sign; a frame could trick a click),
and ``connect-src 'self'`` so no data can be sent elsewhere. The setting
``dashboard_enabled`` turns both routes into 404s.
"""

from __future__ import annotations

from .. import dashboard
from ..errors import NotFound
from .checkout import page_config
from .http import Response
from .routing import Call, Route

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
PAGE_HEADERS = {
    "content-security-policy": CSP,
    "referrer-policy": "no-referrer",
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "cache-control": "no-cache",
}


def _enabled(call: Call) -> None:
    if not call.gateway.settings.dashboard_enabled:
        raise NotFound("not found: the dashboard is turned off (dashboard_enabled)")


def page(call: Call) -> Response:
    """``/dashboard``: the shell; its files are at ``dashboard/assets/`` next to it. One
    address only (Litestar would fold a ``/dashboard/`` row into this one), so the relative
    URLs of the page always resolve the same way."""
    _enabled(call)
    body = dashboard.page("dashboard/assets/", page_config(call.gateway.settings))
    return Response(200, body, "text/html; charset=utf-8", dict(PAGE_HEADERS))


def asset(call: Call) -> Response:
    """``/dashboard/assets/{name}``: only files shipped in the package's assets/ folder."""
    _enabled(call)
    name = call.params["name"]
    found = dashboard.assets().get(name)
    if found is None:
        raise NotFound(f"not found: dashboard asset {name[:100]}")
    headers = {"etag": found.etag, "cache-control": "no-cache", "x-content-type-options": "nosniff"}
    sent = {
        t.strip().removeprefix("W/")
        for t in call.request.headers.get("if-none-match", "").split(",")
    }
    if found.etag in sent:
        return Response(304, b"", found.content_type, headers)
    return Response(200, found.body, found.content_type, headers)


def dashboard_routes() -> list[Route]:
    """The page's routes, added beside the checkout's (HTML and files, not in the OpenAPI
    document's JSON operations)."""
    return [
        Route(
            ("GET",),
            "/dashboard",
            page,
            "The merchant dashboard (HTML)",
            errors=(404,),
            session="none",
            soft_mode="public",
            media_type="text/html",
        ),
        Route(
            ("GET",),
            "/dashboard/assets/{name}",
            asset,
            "A file of the merchant dashboard (JS, CSS), shipped in the package",
            errors=(404,),
            session="none",
            soft_mode="public",
            media_type="*/*",
        ),
    ]
