"""Handlers for invoices, transactions and prices (docs/interface.md §Invoices)."""

from __future__ import annotations

from typing import Any

from ..accounting.search import invoice_filter, tz_minutes
from ..domain.records import Json, Transaction
from ..domain.tokens import normalize_address
from ..errors import InvalidInput
from ..gateway import INVOICE_PAGE_MAX
from .http import Response, json_array_stream
from .requests import (
    ChallengeRequest,
    CreateInvoice,
    InvoiceQuery,
    PricesQuery,
    StatsQuery,
    TransactionQuery,
)
from .routing import Call


def create_invoice(call: Call) -> Any:
    """The invoice as a JSON record, which the dispatcher encodes (201, the route's status)
    once the request's transaction has committed, not inside it."""
    gw = call.gateway
    request = call.read(CreateInvoice)
    owner = call.owner_scope(request.owner)
    if gw.settings.pow_difficulty > 0:
        gw.pow.verify(challenge=request.challenge, nonce=request.nonce, address=owner)
    invoice = gw.create_invoice(owner, request, checkout_url=call.checkout_url())
    return gw.invoice_wire(invoice)


def invoice_challenge(call: Call) -> Json:
    gw = call.gateway
    challenge = gw.pow.issue(call.read(ChallengeRequest).address)
    return challenge.to_wire(gw.now())


def get_invoice(call: Call) -> Response:
    """The invoice with an ``ETag`` of its stored version; ``304`` with no body when the
    request's ``If-None-Match`` names it (the checkout page's poll, mostly)."""
    view = call.gateway.invoice_view(call.params["guid"])
    headers = {"etag": view.etag, "cache-control": "no-cache"}
    if view.matches(call.request.headers.get("if-none-match")):
        return Response(304, b"", "application/json", headers)
    return Response(200, view.body(), "application/json", headers)


def invoice_events(call: Call) -> Response:
    """The invoice's changes as Server-Sent Events (``paycore.realtime.invoice_stream``);
    a 404 before any stream starts when there is no such invoice. A HEAD gets the stream's
    first message and no open stream."""
    # Here, not at the top: paycore.realtime imports the gateway, which imports this.
    from ..realtime.hub import hub_for
    from ..realtime.invoice_stream import open_stream

    gw = call.gateway
    stream = open_stream(
        gw, hub_for(gw), call.params["guid"], call.request.headers.get("last-event-id")
    )
    headers = {"cache-control": "no-cache", "x-accel-buffering": "no"}
    response = Response(200, b"", "text/event-stream", headers, stream=stream)
    return response.joined() if call.request.method == "HEAD" else response


def list_invoices(call: Call) -> Any:
    gw = call.gateway
    query = call.read(InvoiceQuery)
    if query.filtered():
        return _search(call, query)
    chain_id = query.chain_id
    if query.owner is None and query.address is None:
        raise InvalidInput("owner", "owner or address is required")
    if query.address is not None and chain_id is None:
        raise InvalidInput("chainId", "required with address")
    owner: str | None = None
    address: str | None = None
    if query.owner is not None:
        owner = call.owner_scope(query.owner)
    if query.address is not None and chain_id is not None:
        gw.settings.chain(chain_id)
        address = normalize_address(chain_id, query.address, "address")
    cursor = _cursor(query.cursor, query.offset)
    if cursor is not None:
        page = gw.invoice_page(
            cursor, owner=owner, address=address, chain_id=chain_id, limit=query.limit
        )
        return page.to_wire(gw.invoice_wire)
    if query.offset is None and query.limit is None:
        listed = gw.stream_invoices(owner=owner, address=address, chain_id=chain_id)
        return json_array_stream(gw.invoice_wire(i) for i in listed)
    result = gw.list_invoices(
        owner=owner, address=address, chain_id=chain_id, offset=query.offset, limit=query.limit
    )
    if isinstance(result, list):
        return [gw.invoice_wire(i) for i in result]
    items, total, off, lim = result
    return {
        "items": [gw.invoice_wire(i) for i in items],
        "total": total,
        "offset": off,
        "limit": lim,
    }


def _search(call: Call, query: InvoiceQuery) -> Json:
    """The owner's list narrowed by filters (docs/interface.md, "Search and filters"): by
    cursor only, with ``total`` counted up to a cap."""
    if query.owner is None and query.address is not None:
        raise InvalidInput("status", "filters need owner, not address")
    if query.offset is not None:
        raise InvalidInput("offset", "not allowed with filters (use cursor)")
    if query.cursor is None:
        raise InvalidInput("cursor", "required with filters (cursor=first begins)")
    gw = call.gateway
    owner = call.owner_scope(query.owner)
    where = invoice_filter(
        gw.settings,
        owner,
        statuses=query.status or (),
        created_from=query.created_from,
        created_to=query.created_to,
        chain_id=query.chain_id,
        token=query.token,
        text=query.q,
    )
    limit = INVOICE_PAGE_MAX if query.limit is None else query.limit
    if limit < 1:
        raise InvalidInput("limit", "must be at least 1")
    found = gw.search.page(where, query.cursor, min(limit, INVOICE_PAGE_MAX))
    return {**found.page.to_wire(gw.invoice_wire), "totalCapped": found.capped}


def stats(call: Call) -> Json:
    """GET /stats: the dashboard chart's figures (docs/interface.md §GET /stats)."""
    query = call.read(StatsQuery)
    owner = call.owner_scope(query.owner)
    return call.gateway.search.stats(
        owner,
        start=query.start,
        end=query.end,
        currency=query.currency,
        tz_minutes=tz_minutes(query.tz_offset),
    )


def list_transactions(call: Call) -> Json:
    gw = call.gateway
    query = call.read(TransactionQuery)
    owner = call.owner_scope(query.owner)
    if query.chain_id is not None:
        gw.settings.chain(query.chain_id)
    cursor = _cursor(query.cursor, query.offset)
    if cursor is not None:
        page = gw.transaction_page(owner, cursor, chain_id=query.chain_id, limit=query.limit)
        return page.to_wire(Transaction.to_wire)
    items, total, off, lim = gw.list_transactions(
        owner, chain_id=query.chain_id, offset=query.offset, limit=query.limit
    )
    return {"items": [t.to_wire() for t in items], "total": total, "offset": off, "limit": lim}


def _cursor(cursor: str | None, offset: int | None) -> str | None:
    """The keyset cursor, when the query has one (an empty one asks for the first page);
    a page is found by its cursor or by its offset, never both."""
    if cursor is not None and offset is not None:
        raise InvalidInput("offset", "not allowed with cursor")
    return cursor


def prices(call: Call) -> Json:
    """The table in force; ``?vsCurrency=eur`` picks another configured currency."""
    return call.gateway.price_snapshot(call.read(PricesQuery).vs_currency).to_wire()
