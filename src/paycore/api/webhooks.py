"""Handlers for the wallet-signed webhook configuration (docs/interface.md §Webhooks)."""

from __future__ import annotations

from ..auth import (
    clear_webhook_message,
    get_webhook_message,
    set_webhook_message,
    verify_wallet_signature,
)
from ..domain.records import Json
from ..domain.tokens import normalize_owner
from .requests import OwnerSigned, SetWebhook
from .routing import Call


def set_(call: Call) -> Json:
    request = call.read(SetWebhook)
    owner, url = normalize_owner(request.owner_address), request.url
    verify_wallet_signature(set_webhook_message(owner, url), request.signature, owner)
    config = call.gateway.webhooks.set(owner, url)
    return config.to_wire()


def get(call: Call) -> Json:
    request = call.read(OwnerSigned)
    owner = normalize_owner(request.owner_address)
    verify_wallet_signature(get_webhook_message(owner), request.signature, owner)
    return call.gateway.webhooks.get(owner).to_wire()


def clear(call: Call) -> Json:
    request = call.read(OwnerSigned)
    owner = normalize_owner(request.owner_address)
    verify_wallet_signature(clear_webhook_message(owner), request.signature, owner)
    call.gateway.webhooks.clear(owner)
    return {"removed": True}
