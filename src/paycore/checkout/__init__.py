"""The hosted checkout page: an HTML shell, ES modules and a stylesheet shipped as package data.

Why static files and no template engine: the page renders itself in the payer's browser from
the public invoice and price reads, so the server only has to hand out the same few files.
Why inside the package: a payer's browser should talk to the merchant's origin only, never to
a CDN, and a wheel must carry everything the page needs.

What the page does (assets/checkout.js): it reads ``{prefix}/invoice/{guid}`` and
``{prefix}/prices`` (both public), shows the amount due in vsCurrency and in the chosen
accepted token (rounded up to at most 8 decimals, so the payer is never short), the deposit
address, an EIP-681 (``ethereum:``) or ``tron:`` link and its QR code, and a countdown. It
follows the invoice's public event stream (``{prefix}/invoice/{guid}/events``) where the
server has one and polls the invoice (every 2.5 s, or 30 s while the stream is open) until it
is paid or expired. The WebSocket is not used: it is owner-scoped, and a payer has no session
key. A payment sent from the page's wallet button is remembered in the browser across
reloads and shown as sent, then detected and confirming (the record's ``detected`` list),
with the ways to pay put away until the payer asks to pay again; outcomes beyond the status
(overpaid, late, part paid then expired, reversed) are explained (docs/checkout.md).

Merchant hints, read from the invoice's free-form ``data``: ``decimals`` and ``symbol``, each
one value for the display token or a map by token id, for example
``{"decimals": {"1:0xA0b8...": 6}, "symbol": {"1:0xA0b8...": "USDC"}}``. A coin's symbol and
decimals come from the chain settings. Without a decimals hint an ERC20's link and QR code
hold the deposit address only, and the page says so: a guessed decimals could ask for a
thousand times the amount.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping
from importlib.resources import files
from typing import Any

import attrs

#: Content types by suffix; a file in assets/ with any other suffix is not served.
CONTENT_TYPES = {
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}


@attrs.frozen
class Asset:
    name: str
    body: bytes
    content_type: str
    #: Strong validator: the content's hash, so a client revalidates with one cheap 304.
    etag: str


def package_assets(package: str) -> Mapping[str, Asset]:
    """Every servable file of ``package``'s assets/ folder: the checkout's, the dashboard's
    and the API docs' pages are served the same way, with the same types and validators."""
    found: dict[str, Asset] = {}
    for entry in files(package).joinpath("assets").iterdir():
        suffix = "." + entry.name.rsplit(".", 1)[-1] if "." in entry.name else ""
        if not entry.is_file() or suffix not in CONTENT_TYPES:
            continue
        body = entry.read_bytes()
        etag = '"' + hashlib.sha256(body).hexdigest()[:20] + '"'
        found[entry.name] = Asset(entry.name, body, CONTENT_TYPES[suffix], etag)
    return found


@functools.cache
def assets() -> Mapping[str, Asset]:
    """Every servable file of assets/, read once: the set is fixed when the package ships."""
    return package_assets(__package__)


@functools.cache
def _template() -> str:
    return files(__package__).joinpath("index.html").read_text(encoding="utf-8")


def page(asset_base: str, config: Mapping[str, Any]) -> bytes:
    """The HTML shell with its asset URLs and the page's configuration filled in.

    ``asset_base`` is relative to the page's own URL, so the page works under any mount
    prefix and behind a proxy that rewrites it. The configuration goes into a JSON data
    block; ``<`` is escaped so no value can close the script element early.
    """
    data = json.dumps(config, separators=(",", ":"), sort_keys=True).replace("<", "\\u003c")
    html = _template().replace("{{assets}}", asset_base).replace("{{config}}", data)
    return html.encode("utf-8")
