"""``{prefix}/docs``: the OpenAPI document rendered by Swagger UI, every file from the package.

Public like ``/openapi.json``: the document describes the interface, nothing of an owner's.
The page's Content-Security-Policy is the checkout page's (this origin only, no inline
script), with ``data:`` images added for the icons Swagger UI's stylesheet embeds.
"""

from __future__ import annotations

from .. import docs_ui
from ..errors import NotFound
from .checkout import PAGE_HEADERS
from .http import Response
from .routing import Call, Route

DOCS_HEADERS = {
    **PAGE_HEADERS,
    "content-security-policy": PAGE_HEADERS["content-security-policy"].replace(
        "img-src 'self'", "img-src 'self' data:"
    ),
}


def docs_page(call: Call) -> Response:
    """The HTML shell; its asset and document URLs are relative to ``{prefix}/docs``."""
    return Response(200, docs_ui.page(), "text/html; charset=utf-8", dict(DOCS_HEADERS))


def docs_asset(call: Call) -> Response:
    """``/docs/assets/{name}``: only files shipped in ``paycore/docs_ui/assets``."""
    name = call.params["name"]
    found = docs_ui.assets().get(name)
    if found is None:
        raise NotFound(f"not found: docs asset {name[:100]}")
    headers = {"etag": found.etag, "cache-control": "no-cache", "x-content-type-options": "nosniff"}
    sent = {
        t.strip().removeprefix("W/")
        for t in call.request.headers.get("if-none-match", "").split(",")
    }
    if found.etag in sent:
        return Response(304, b"", found.content_type, headers)
    return Response(200, found.body, found.content_type, headers)


def docs_routes() -> list[Route]:
    """The two routes of the page, added next to ``/openapi.json`` (not in its document)."""
    return [
        Route(
            ("GET",),
            "/docs",
            docs_page,
            "The API reference page",
            session="none",
            soft_mode="public",
            media_type="text/html",
        ),
        Route(
            ("GET",),
            "/docs/assets/{name}",
            docs_asset,
            "A file of the API reference page",
            errors=(404,),
            session="none",
            soft_mode="public",
            media_type="*/*",
        ),
    ]
