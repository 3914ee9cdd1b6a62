"""Handlers for refunds (docs/interface.md §Refunds): owner-scoped like the owner's other
calls, POST only, every field in the signed body -- the invoice too, since a POST's
signature does not cover its path. The work is ``Gateway.refund_invoice`` and
``Gateway.cancel_refund``'s."""

from __future__ import annotations

from typing import Any

from ..domain.records import Json
from .http import json_response
from .requests import CancelRefund, CreateRefund
from .routing import Call


def create_refund(call: Call) -> Any:
    gw = call.gateway
    request = call.read(CreateRefund)
    owner = call.owner_scope(request.owner)
    built = gw.refund_invoice(owner, request)
    body = {
        "refund": built.refund.to_wire(),
        "transaction": built.transaction,
        "invoice": gw.invoice_wire(built.invoice),
    }
    return json_response(body, 201)


def cancel_refund(call: Call) -> Json:
    gw = call.gateway
    request = call.read(CancelRefund)
    owner = call.owner_scope(request.owner)
    refund, invoice = gw.cancel_refund(owner, request.refund_id)
    return {"refund": refund.to_wire(), "invoice": gw.invoice_wire(invoice)}
