"""QR codes of payment links, drawn server-side as SVG with segno.

Why on the server: the page must ship no third-party JavaScript, and segno is a small pure
Python encoder. Why only payment links: the endpoint is public and unauthenticated; refusing
anything but a short ``ethereum:`` or ``tron:`` URI keeps it from becoming a general-purpose
QR service (e.g. for phishing links) on the merchant's domain.
"""

from __future__ import annotations

import functools
import io
import re

from ..errors import InvalidInput

#: Longest accepted link. An EIP-681 ERC20 transfer with a 78-digit amount is under 200.
MAX_DATA = 512
SCHEMES = ("ethereum:", "tron:")
#: Unreserved and sub-delimiter URI characters: what EIP-681 and tron: links are made of.
_URI_CHARS = re.compile(r"[A-Za-z0-9:@/?=&.,_%+~-]+")


def payment_qr_svg(data: str | None) -> bytes:
    """An SVG QR code of ``data``; ``InvalidInput`` (400) for anything not a payment link."""
    if not data:
        raise InvalidInput("data", "required")
    if len(data) > MAX_DATA:
        raise InvalidInput("data", f"longer than {MAX_DATA} characters")
    if not _URI_CHARS.fullmatch(data):
        raise InvalidInput("data", "only URI characters are allowed")
    if not data.lower().startswith(SCHEMES):
        raise InvalidInput("data", "must be an ethereum: or tron: payment link")
    return _svg(data)


@functools.lru_cache(maxsize=256)
def _svg(data: str) -> bytes:
    """Error level M (15% damage) is what phone wallets read reliably from a screen; the
    four-module quiet zone is the standard's own; no fixed size, so CSS scales it.

    segno is imported here, not at the top: the route table imports this module, and the
    rest of the API must not depend on the QR encoder being installed."""
    import segno

    code = segno.make(data, error="m", micro=False, boost_error=False)
    out = io.BytesIO()
    code.save(
        out,
        kind="svg",
        xmldecl=False,
        omitsize=True,
        border=4,
        dark="#000",
        light="#fff",
        svgclass=None,
        lineclass=None,
    )
    return out.getvalue()
