"""Handlers of the hosted checkout page: the HTML shell, its static assets, and QR codes.

The page is public, like the reads it makes (docs/interface.md §Checkout page: a payer needs no
authentication), so these routes take no session headers. Each answer carries the headers
a browser needs: a Content-Security-Policy that allows this origin only (the page ships
everything it runs), no Referer (the URL holds the invoice id), and revalidation by ETag.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import checkout
from ..checkout.qr import payment_qr_svg
from ..config import ChainConfig, Settings
from ..errors import NotFound
from ..merchant.profile import MerchantProfile
from .http import Response
from .requests import QrQuery
from .routing import Call

#: How often the page re-reads the invoice: the interface recommends 2 to 5 seconds.
POLL_MS = 2500
#: How often the page re-reads the price table, so the token amount it asks for follows
#: the market: the quote shown holds this long (the page says so).
PRICES_MS = 60000

#: The page's policy; ``{img}`` is ``'self'``, plus the merchant logo's own origin when the
#: invoice's owner set one (``page_csp``).
CSP_TEMPLATE = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src {img}; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'"
)
PAGE_HEADERS = {
    "content-security-policy": CSP_TEMPLATE.format(img="'self'"),
    "referrer-policy": "no-referrer",
    "x-content-type-options": "nosniff",
    "cache-control": "no-cache",
}
#: An SVG opened on its own is a document: let it run nothing.
QR_HEADERS = {
    "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'",
    "x-content-type-options": "nosniff",
    "cache-control": "public, max-age=86400, immutable",
}


def page(call: Call) -> Response:
    """``/checkout/``: the interface's paymentUrl form; assets sit next to the page."""
    return _page(call, "assets/")


def page_no_slash(call: Call) -> Response:
    """``/checkout``: the same page; relative URLs resolve one level up from here."""
    return _page(call, "checkout/assets/")


def _page(call: Call, asset_base: str) -> Response:
    profile = call.gateway.merchant.for_invoice((call.request.query("invoice") or "").strip())
    config = dict(page_config(call.gateway.settings))
    headers = dict(PAGE_HEADERS)
    if profile is not None:
        config["merchant"] = profile.to_page()
        headers["content-security-policy"] = page_csp(profile)
    body = checkout.page(asset_base, config)
    return Response(200, body, "text/html; charset=utf-8", headers)


def page_csp(profile: MerchantProfile | None) -> str:
    """The page's policy with the logo's origin, and only that one, added to img-src.

    Why the origin and not ``https:``: the page stays unable to load an image from anywhere
    else, so an injected ``<img>`` still cannot carry data off. Why not the exact URL: CSP
    ignores a source's query and redirects would fail it, so a CDN logo with a version
    query would break. Why not a proxy: the server would fetch arbitrary URLs for anyone.
    The origin is safe to put in a header: ``paycore.merchant`` allows no space, quote, ``;``
    or ``,`` in the URL."""
    origin = None if profile is None else profile.logo_origin
    return CSP_TEMPLATE.format(img="'self'" if origin is None else f"'self' {origin}")


def page_config(settings: Settings) -> Mapping[str, Any]:
    """What the page cannot read from the public API: the chains' names and native coins
    (symbol and decimals, needed to turn an amount into wei or sun), their block explorers'
    link templates (for the transactions a payer sent), the fallback currency, and how often
    prices are re-read (the page says how long its quote holds)."""
    return {
        "vsCurrency": settings.vs_currency,
        "pollMs": POLL_MS,
        "pricesMs": PRICES_MS,
        "chains": {str(c.chain_id): _chain(c) for c in settings.chains.values()},
    }


def _chain(chain: ChainConfig) -> dict[str, Any]:
    tx, address = chain.explorer
    entry: dict[str, Any] = {
        "name": chain.name,
        "symbol": chain.native_symbol,
        "decimals": chain.native_decimals,
        "kind": chain.kind.value,
    }
    if tx is not None:
        entry["explorerTx"] = tx
    if address is not None:
        entry["explorerAddress"] = address
    return entry


def asset(call: Call) -> Response:
    """``/checkout/assets/{name}``: only files shipped in the package's assets/ folder."""
    name = call.params["name"]
    found = checkout.assets().get(name)
    if found is None:
        raise NotFound(f"not found: checkout asset {name[:100]}")
    headers = {
        "etag": found.etag,
        "cache-control": "no-cache",
        "x-content-type-options": "nosniff",
    }
    if found.etag in _etags(call.request.headers.get("if-none-match", "")):
        return Response(304, b"", found.content_type, headers)
    return Response(200, found.body, found.content_type, headers)


def _etags(header: str) -> set[str]:
    return {tag.strip().removeprefix("W/") for tag in header.split(",") if tag.strip()}


def qr(call: Call) -> Response:
    """``/checkout/qr?data=<payment link>``: the link's QR code as SVG."""
    data = call.read(QrQuery).data
    return Response(200, payment_qr_svg(data), "image/svg+xml", QR_HEADERS)
