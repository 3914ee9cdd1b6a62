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
from ..webhooks.config import clear_webhook, get_webhook, set_webhook, validate_url
from .params import body_str
from .routing import Call


def _owner(body: dict[str, object]) -> str:
    return normalize_owner(body_str(body, "ownerAddress"), "ownerAddress")


def set_(call: Call) -> Json:
    body = call.body()
    owner, url = _owner(body), body_str(body, "url")
    verify_wallet_signature(set_webhook_message(owner, url), body.get("signature"), owner)
    allow_private = call.gateway.settings.webhook_allow_private
    config = set_webhook(
        call.gateway.storage, owner, validate_url(url), allow_private=allow_private
    )
    return config.to_wire()


def get(call: Call) -> Json:
    body = call.body()
    owner = _owner(body)
    verify_wallet_signature(get_webhook_message(owner), body.get("signature"), owner)
    return get_webhook(call.gateway.storage, owner).to_wire()


def clear(call: Call) -> Json:
    body = call.body()
    owner = _owner(body)
    verify_wallet_signature(clear_webhook_message(owner), body.get("signature"), owner)
    clear_webhook(call.gateway.storage, owner)
    return {"removed": True}
