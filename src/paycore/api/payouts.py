"""Handlers of batch payouts (docs/payouts.md): owner-scoped, session-signed in every mode
(a payout is the owner's money). POST bodies carry every field, the batch id too, since a
POST's signature does not cover its path; ``paycore.payouts.service`` does the work."""

from __future__ import annotations

from typing import Any

from ..domain.records import Json
from ..errors import InvalidInput
from ..payouts.rows import csv_rows, json_rows
from ..payouts.service import batch_wire
from .http import json_response
from .requests import ConfirmPayouts, CreatePayouts, PayoutsQuery
from .routing import Call


def create_payouts(call: Call) -> Any:
    gw = call.gateway
    request = call.read(CreatePayouts)
    owner = call.owner_scope(request.owner)
    if (request.rows is None) == (request.csv is None):
        raise InvalidInput("rows", "give rows (a JSON array) or csv (text), one of them")
    numbered = json_rows(request.rows) if request.rows is not None else csv_rows(request.csv or "")
    rows = gw.payouts.check(request.chain_id, numbered)
    created = gw.payouts.create(owner, request.chain_id, rows)
    return json_response(created.to_wire(), 201)


def get_payouts(call: Call) -> Json:
    gw = call.gateway
    owner = call.owner_scope(call.read(PayoutsQuery).owner)
    batch, payouts = gw.payouts.get(owner, call.params["id"])
    return batch_wire(batch, payouts)


def confirm_payouts(call: Call) -> Json:
    gw = call.gateway
    request = call.read(ConfirmPayouts)
    owner = call.owner_scope(request.owner)
    batch, payouts, answers = gw.payouts.confirm(owner, request.batch_id, request.tx_hashes)
    return {**batch_wire(batch, payouts), "results": answers}
