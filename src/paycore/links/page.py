"""The page a buyer fills in when a payment link lets them choose the amount.

Served by GET /link/{id}: a form in the checkout page's style (its stylesheet, its card),
with no script at all, so its Content-Security-Policy can forbid every script. The form
sends the amount back to the same URL as ``?amount=``; the answer is the 303 to the new
invoice's checkout page. Every text from the link is HTML-escaped.
"""

from __future__ import annotations

from html import escape
from urllib.parse import urlsplit

from ..domain.money import to_text
from .records import PaymentLink

#: The checkout page's files, relative to ``{prefix}/link/{id}``.
ASSETS = "../checkout/assets/"
#: What a decimal amount looks like (``paycore.domain.fields.AMOUNT_TEXT``), for the
#: browser's own check before it sends the form.
_AMOUNT_PATTERN = r"[0-9]{1,30}(\.[0-9]{1,18})?"

_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="robots" content="noindex">
<title>Payment</title>
<link rel="icon" href="{assets}favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="{assets}checkout.css">
</head>
<body>
<main class="checkout link-form" aria-labelledby="title">
  <h1 id="title" class="title">Payment</h1>
  <p class="description">{description}</p>
  <form method="get" action="{action}">
    <label for="amount">Amount in {currency}</label>
    <input id="amount" name="amount" type="text" inputmode="decimal" autocomplete="off"
           required pattern="{pattern}" aria-describedby="bounds">
    <p id="bounds" class="hint">From {low} to {high} {currency}</p>
    <button type="submit">Continue to payment</button>
  </form>
</main>
</body>
</html>
"""


def amount_form(link: PaymentLink) -> bytes:
    """The form for ``link`` (one whose buyer chooses the amount)."""
    currency = escape(link.vs_currency.upper())
    low = "" if link.min_amount is None else to_text(link.min_amount)
    high = "" if link.max_amount is None else to_text(link.max_amount)
    html = _PAGE.format(
        assets=ASSETS,
        description=escape(link.description),
        action=escape(link.id),
        currency=currency,
        pattern=escape(_AMOUNT_PATTERN),
        low=escape(low),
        high=escape(high),
    )
    return html.encode("utf-8")


def page_headers(checkout_url: str) -> dict[str, str]:
    """Headers of the form page and the redirect: no script may run, styles and images
    from this origin only, the form may be sent here and (the redirect it gets back) to
    the checkout page's origin; no Referer, no caching (every open makes a new invoice),
    not indexed."""
    parts = urlsplit(checkout_url)
    checkout_origin = f" {parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else ""
    return {
        "content-security-policy": (
            "default-src 'none'; style-src 'self'; img-src 'self'; "
            f"form-action 'self'{checkout_origin}; base-uri 'none'; frame-ancestors 'none'"
        ),
        "referrer-policy": "no-referrer",
        "x-content-type-options": "nosniff",
        "x-robots-tag": "noindex",
        "cache-control": "no-store",
    }
