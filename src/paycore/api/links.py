"""Handlers of payment links (docs/interface.md §Payment links): the owner's calls, and the
public GET /link/{id} a buyer opens."""

from __future__ import annotations

from ..domain.records import Json
from ..links.page import amount_form, page_headers
from .http import Response, json_response
from .requests import CreateLink, DisableLink, LinksQuery, OpenLink
from .routing import Call


def create(call: Call) -> Response:
    gw = call.gateway
    request = call.read(CreateLink)
    owner = call.owner_scope(request.owner_address, "ownerAddress")
    link = gw.links.create(owner, request)
    return json_response(link.to_wire(gw.links.url(link.id, call.checkout_url()), gw.now()), 201)


def list_(call: Call) -> Json:
    gw = call.gateway
    query = call.read(LinksQuery)
    owner = call.owner_scope(query.owner)
    items, total, off, lim = gw.links.list(owner, offset=query.offset, limit=query.limit)
    now = gw.now()
    return {
        "items": [link.to_wire(gw.links.url(link.id, call.checkout_url()), now) for link in items],
        "total": total,
        "offset": off,
        "limit": lim,
    }


def disable(call: Call) -> Json:
    gw = call.gateway
    request = call.read(DisableLink)
    owner = call.owner_scope(request.owner_address, "ownerAddress")
    link = gw.links.disable(owner, request.id)
    return link.to_wire(gw.links.url(link.id, call.checkout_url()), gw.now())


def open_(call: Call) -> Response:
    """A fixed amount: the invoice is made at once and the buyer sent to its checkout page
    (303). A buyer-chosen amount: the form first, whose answer comes back with ``amount``.
    HEAD makes nothing: link previews and checkers must not create invoices."""
    gw = call.gateway
    amount = call.read(OpenLink).amount
    link = gw.links.available(call.params["id"])
    page = call.checkout_url()
    headers = page_headers(page)
    if call.request.method == "HEAD":
        return Response(200, b"", "text/html; charset=utf-8", headers)
    if link.amount is None and amount is None:
        return Response(200, amount_form(link), "text/html; charset=utf-8", headers)
    invoice = gw.links.open(link.id, amount, page)
    headers["location"] = gw.invoice_wire(invoice)["paymentUrl"]
    return Response(303, b"", "text/html; charset=utf-8", headers)
