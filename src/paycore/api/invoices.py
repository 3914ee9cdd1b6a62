"""Handlers for invoices, transactions and prices (docs/interface.md §Invoices)."""

from __future__ import annotations

from typing import Any

from ..domain.records import Json
from ..domain.tokens import normalize_address
from ..errors import InvalidInput
from .http import json_response
from .params import query_int
from .routing import Call


def create_invoice(call: Call) -> Any:
    gw = call.gateway
    body = call.body()
    owner = call.owner_scope(body.get("owner"))
    if gw.settings.pow_difficulty > 0:
        gw.pow.verify(challenge=body.get("challenge"), nonce=body.get("nonce"), address=owner)
    invoice = gw.create_invoice(owner, body)
    return json_response(gw.invoice_wire(invoice), 201)


def invoice_challenge(call: Call) -> Json:
    gw = call.gateway
    challenge = gw.pow.issue(call.body().get("address"))
    return challenge.to_wire(gw.now())


def get_invoice(call: Call) -> Json:
    gw = call.gateway
    return gw.invoice_wire(gw.get_invoice(call.params["guid"]))


def list_invoices(call: Call) -> Any:
    gw = call.gateway
    req = call.request
    offset, limit = query_int(req, "offset"), query_int(req, "limit")
    owner_raw, address_raw = req.query("owner"), req.query("address")
    chain_id = query_int(req, "chainId")
    if owner_raw is None and address_raw is None:
        raise InvalidInput("owner", "owner or address is required")
    if owner_raw is not None:
        owner: str | None = call.owner_scope(owner_raw)
        address = None
        if address_raw is not None:
            if chain_id is None:
                raise InvalidInput("chainId", "required with address")
            address = normalize_address(chain_id, address_raw, "address")
    else:
        if chain_id is None:
            raise InvalidInput("chainId", "required with address")
        gw.settings.chain(chain_id)
        owner, address = None, normalize_address(chain_id, address_raw, "address")
    result = gw.list_invoices(
        owner=owner, address=address, chain_id=chain_id, offset=offset, limit=limit
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


def list_transactions(call: Call) -> Json:
    gw = call.gateway
    req = call.request
    owner = call.owner_scope(req.query("owner"))
    chain_id = query_int(req, "chainId")
    if chain_id is not None:
        gw.settings.chain(chain_id)
    items, total, off, lim = gw.list_transactions(
        owner, chain_id=chain_id, offset=query_int(req, "offset"), limit=query_int(req, "limit")
    )
    return {"items": [t.to_wire() for t in items], "total": total, "offset": off, "limit": lim}


def prices(call: Call) -> Json:
    """The table in force; ``?vsCurrency=eur`` picks another configured currency."""
    return call.gateway.price_snapshot(call.request.query("vsCurrency")).to_wire()
