"""The subscriber's page: GET /subscription/{id}.

Anyone with the subscription's id (unguessable: 120 random bits) sees its plan, its status
and its periods, each with its status, and a link to the checkout page of the open period's
invoice, where it is paid. No script at all, so its Content-Security-Policy forbids every
script; the checkout page's stylesheet and card. Every text is HTML-escaped. English and
German, chosen by the request's ``Accept-Language`` (the page has no script to ask the
browser).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from html import escape

from ..domain.money import to_text
from ..domain.subscriptions import PeriodStatus
from .service import SubscriptionView

#: The checkout page's files, relative to ``{prefix}/subscription/{id}``.
ASSETS = "../checkout/assets/"

TEXTS: dict[str, dict[str, str]] = {
    "en": {
        "title": "Subscription",
        "every": "every {count} {unit}",
        "day": "day(s)",
        "month": "month(s)",
        "status": "Status",
        "period": "Period",
        "due": "Due",
        "state": "State",
        "pay": "Pay now",
        "none": "No period has been invoiced yet.",
        "trialing": "trial",
        "pending": "awaiting first payment",
        "active": "active",
        "past_due": "past due",
        "cancelled": "cancelled",
        "open": "open",
        "paid": "paid",
        "unpaid": "unpaid",
    },
    "de": {
        "title": "Abonnement",
        "every": "alle {count} {unit}",
        "day": "Tag(e)",
        "month": "Monat(e)",
        "status": "Status",
        "period": "Zeitraum",
        "due": "Fällig",
        "state": "Stand",
        "pay": "Jetzt bezahlen",
        "none": "Noch ist kein Zeitraum in Rechnung gestellt.",
        "trialing": "Testzeitraum",
        "pending": "erste Zahlung ausstehend",
        "active": "aktiv",
        "past_due": "überfällig",
        "cancelled": "gekündigt",
        "open": "offen",
        "paid": "bezahlt",
        "unpaid": "unbezahlt",
    },
}

_PAGE = """<!doctype html>
<html lang="{lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="robots" content="noindex">
<title>{title}</title>
<link rel="icon" href="{assets}favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="{assets}checkout.css">
</head>
<body>
<main class="checkout subscription" aria-labelledby="title">
  <h1 id="title" class="title">{name}</h1>
  <p class="description">{amount} {currency}, {every}</p>
  <p class="status">{status_label}: <strong data-status="{status}">{status_text}</strong></p>
  {body}
</main>
</body>
</html>
"""


def language(accept: str | None) -> str:
    """The first language of ``Accept-Language`` the page speaks; English otherwise."""
    for part in (accept or "").split(","):
        tag = part.split(";")[0].strip().lower()[:2]
        if tag in TEXTS:
            return tag
    return "en"


def _day(at: int) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d")


def subscription_page(view: SubscriptionView, pay_urls: Mapping[str, str], lang: str) -> bytes:
    """The page of ``view``; ``pay_urls`` maps an open period's invoice guid to its checkout
    page address (only the newest open period gets a pay link)."""
    t = TEXTS[lang]
    plan, sub = view.plan, view.subscription
    open_period = view.open_period
    rows = []
    for period in reversed(view.periods):
        pay = ""
        if (
            open_period is not None
            and period.index == open_period.index
            and period.guid in pay_urls
            and period.status is PeriodStatus.OPEN
        ):
            pay = f'<a class="pay" href="{escape(pay_urls[period.guid])}">{escape(t["pay"])}</a>'
        rows.append(
            f'<tr data-period="{period.index}"><td>{_day(period.starts_at)} – '
            f"{_day(period.ends_at)}</td><td>{_day(period.starts_at)}</td>"
            f'<td data-state="{period.status.value}">{escape(t[period.status.value])}</td>'
            f"<td>{pay}</td></tr>"
        )
    if rows:
        body = (
            f'<table class="periods"><thead><tr><th>{escape(t["period"])}</th>'
            f"<th>{escape(t['due'])}</th><th>{escape(t['state'])}</th><th></th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>"
        )
    else:
        body = f'<p class="hint">{escape(t["none"])}</p>'
    html = _PAGE.format(
        lang=lang,
        title=escape(t["title"]),
        assets=ASSETS,
        name=escape(plan.name),
        amount=escape(to_text(plan.amount)),
        currency=escape(plan.currency.upper()),
        every=escape(t["every"].format(count=plan.period_count, unit=t[plan.period_unit.value])),
        status_label=escape(t["status"]),
        status=sub.status.value,
        status_text=escape(t[sub.status.value]),
        body=body,
    )
    return html.encode("utf-8")


def page_headers() -> dict[str, str]:
    """No script may run; styles and images from this origin only; no form; no Referer
    (the URL is the subscriber's key); not cached, not indexed."""
    return {
        "content-security-policy": (
            "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'none'; "
            "base-uri 'none'; frame-ancestors 'none'"
        ),
        "referrer-policy": "no-referrer",
        "x-content-type-options": "nosniff",
        "x-robots-tag": "noindex",
        "cache-control": "no-store",
    }
