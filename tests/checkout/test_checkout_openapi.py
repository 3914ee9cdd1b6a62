"""The OpenAPI document says what the checkout routes really answer: HTML, SVG, files."""

from __future__ import annotations

import json

from paycore import Gateway, Settings
from paycore.api import Request, handle


def test_checkout_routes_declare_their_media_types() -> None:
    gateway = Gateway(Settings(database_url="memory://"), entry_points=False)
    served = json.loads(handle(gateway, Request("GET", "/openapi.json")).body)
    media = {
        path: list(served["paths"][path]["get"]["responses"]["200"]["content"])
        for path in (
            "/checkout/",
            "/checkout",
            "/checkout/qr",
            "/checkout/assets/{name}",
            "/prices",
        )
    }
    assert media == {
        "/checkout/": ["text/html"],
        "/checkout": ["text/html"],
        "/checkout/qr": ["image/svg+xml"],
        "/checkout/assets/{name}": ["*/*"],
        "/prices": ["application/json"],
    }
    page = handle(gateway, Request("GET", "/checkout/"))
    assert page.status == 200 and page.content_type.startswith("text/html")
