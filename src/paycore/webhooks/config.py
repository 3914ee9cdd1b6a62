"""Webhook configuration: one URL and one signing secret per owner.

The secret is made once, when an owner first sets a URL, and kept across URL changes so a
receiver does not have to rotate it with every move; clearing the webhook drops both.
Delivery (signing, retries, the log) lives with the event dispatcher. A URL whose host is or
resolves to a private, loopback or link-local address is refused here already (``netguard``),
unless the operator allows such targets; delivery checks again, as DNS answers change.
"""

from __future__ import annotations

import base64
import secrets
from urllib.parse import urlsplit

from ..domain.records import WebhookConfig
from ..errors import InvalidInput
from ..storage import Storage
from .netguard import check_webhook_url

MAX_URL = 2048


def validate_url(url: object, field: str = "url") -> str:
    if not isinstance(url, str) or not url.strip():
        raise InvalidInput(field, "required")
    url = url.strip()
    if len(url) > MAX_URL:
        raise InvalidInput(field, f"longer than {MAX_URL} characters")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidInput(field, "must be an http or https URL with a host")
    if any(ch.isspace() for ch in url):
        raise InvalidInput(field, "must not contain white space")
    return url


def new_secret() -> str:
    """A Standard Webhooks secret: ``whsec_`` and base64 of 24 random bytes."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode("ascii")


def set_webhook(
    storage: Storage, owner: str, url: str, *, allow_private: bool = False
) -> WebhookConfig:
    check_webhook_url(url, allow_private=allow_private)
    with storage.transaction() as tx:
        current = tx.get_webhook(owner)
        config = WebhookConfig(owner, url, current.secret if current else new_secret())
        tx.put_webhook(config)
    return config


def get_webhook(storage: Storage, owner: str) -> WebhookConfig:
    with storage.transaction() as tx:
        current = tx.get_webhook(owner)
    return current or WebhookConfig(owner, "", "")


def clear_webhook(storage: Storage, owner: str) -> bool:
    with storage.transaction() as tx:
        return tx.delete_webhook(owner)
