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
from .params import body_str
from .routing import Call


def _owner(body: dict[str, object]) -> str:
    return normalize_owner(body_str(body, "ownerAddress"), "ownerAddress")


def set_(call: Call) -> Json:
    body = call.body()
    owner, url = _owner(body), body_str(body, "url")
    verify_wallet_signature(set_webhook_message(owner, url), body.get("signature"), owner)
    config = call.gateway.webhooks.set(owner, url)
    return config.to_wire()


def get(call: Call) -> Json:
    body = call.body()
    owner = _owner(body)
    verify_wallet_signature(get_webhook_message(owner), body.get("signature"), owner)
    return call.gateway.webhooks.get(owner).to_wire()


def clear(call: Call) -> Json:
    body = call.body()
    owner = _owner(body)
    verify_wallet_signature(clear_webhook_message(owner), body.get("signature"), owner)
    call.gateway.webhooks.clear(owner)
    return {"removed": True}
