"""Webhook endpoints: several per owner, each with its own URL, secret and event types.

What merchants use at other gateways (Standard Webhooks' endpoints with ``filterTypes``,
BTCPay's webhooks with ``authorizedEvents``): one endpoint for the shop that ships orders
on status changes, another for the accounting tool that wants refunds too, each verifying
with its own ``whsec_`` secret, each rotated or disabled without touching the other.

The ``/webhook/set`` URL of the interface stays as it is and is listed first, as the endpoint
``default``: it is sent the status changes (``STATUS_CHANGES``) and is managed by the
wallet-signed ``/webhook/set`` and ``/webhook/clear``, not here. A new endpoint is sent
the status changes too unless ``types`` names others (docs/decisions.md, "Events per
status change"). Every URL passes the same checks and address guard as ``/webhook/set``
(``config.validate_url``, ``netguard``), at every change and again at each delivery.

Which deliveries an event makes is decided in the transaction that writes the event
(``dispatcher.enqueue_webhooks``), so an endpoint added later is not sent older events,
and one disabled or deleted is sent no more: its pending deliveries fail at their next try.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable
from typing import Any

import attrs

from ..config import Settings
from ..domain.changes import STATUS_CHANGES, parse_types
from ..domain.records import Json
from ..errors import InvalidInput, NotFound
from ..storage import Storage
from .config import get_webhook, new_secret, validate_url
from .netguard import check_webhook_url
from .records import DEFAULT_ENDPOINT, WebhookEndpoint

#: Endpoints an owner may have besides the ``/webhook/set`` URL.
MAX_ENDPOINTS = 20
MAX_ID = 40


class EndpointNotFound(NotFound):
    def __init__(self, endpoint_id: str) -> None:
        self.endpoint_id = endpoint_id
        super().__init__(f"webhook endpoint {endpoint_id} not found")


def new_endpoint_id(created_at: int, taken: Iterable[str]) -> str:
    """``ep_``, the creation second, a count within that second and random digits: 24 hex
    digits whose order is the order of creation, so a listing by id is oldest first."""
    stamp = f"ep_{created_at & 0xFFFFFFFFFF:010x}"
    same = [int(i[len(stamp) : len(stamp) + 4], 16) for i in taken if i.startswith(stamp)]
    return f"{stamp}{min(max(same, default=-1) + 1, 0xFFFF):04x}{secrets.token_hex(5)}"


def default_wire(owner: str, url: str, secret: str) -> Json:
    """The ``/webhook/set`` URL as the endpoint ``default`` of the list."""
    return {
        "id": DEFAULT_ENDPOINT,
        "ownerAddress": owner,
        "url": url,
        "secret": secret,
        "types": sorted(STATUS_CHANGES),
        "enabled": True,
        "createdAt": None,
    }


def _types(value: Iterable[str] | None) -> frozenset[str] | None:
    return None if value is None else parse_types(list(value), "types")


def _id(endpoint_id: str) -> str:
    if endpoint_id == DEFAULT_ENDPOINT:
        raise InvalidInput("id", "the default endpoint is set with /webhook/set and /webhook/clear")
    if not endpoint_id or len(endpoint_id) > MAX_ID:
        raise InvalidInput("id", f"must be an endpoint id of at most {MAX_ID} characters")
    return endpoint_id


class Endpoints:
    """``Gateway.webhooks.endpoints``: an owner's endpoints, over the gateway's storage."""

    def __init__(self, storage: Storage, settings: Settings, clock: Callable[[], float]) -> None:
        self._storage = storage
        self._settings = settings
        self._clock = clock

    def _url(self, url: object) -> str:
        checked = validate_url(url)
        check_webhook_url(checked, allow_private=self._settings.webhook_allow_private)
        return checked

    def create(
        self,
        owner: str,
        url: object,
        types: Iterable[str] | None = None,
        *,
        enabled: bool = True,
    ) -> WebhookEndpoint:
        """A new endpoint of ``owner`` with a fresh secret, sent ``types`` (the status
        changes when None) from the next event on."""
        checked, wanted, now = self._url(url), _types(types) or STATUS_CHANGES, int(self._clock())
        with self._storage.transaction() as tx:
            existing = tx.webhook_endpoints([owner])
            if len(existing) >= MAX_ENDPOINTS:
                raise InvalidInput("url", f"an owner has at most {MAX_ENDPOINTS} endpoints")
            endpoint = WebhookEndpoint(
                id=new_endpoint_id(now, [e.id for e in existing]),
                owner=owner,
                url=checked,
                secret=new_secret(),
                types=wanted,
                enabled=enabled,
                created_at=now,
            )
            tx.put_webhook_endpoint(endpoint)
        return endpoint

    def of(self, owner: str) -> list[WebhookEndpoint]:
        """``owner``'s endpoints, oldest first (the ``/webhook/set`` URL not among them)."""
        with self._storage.transaction() as tx:
            return tx.webhook_endpoints([owner])  # by id: creation order

    def list_wire(self, owner: str) -> list[Json]:
        """What GET /webhook/endpoints lists: the ``/webhook/set`` URL first, when set."""
        config = get_webhook(self._storage, owner)
        first = [default_wire(owner, config.url, config.secret)] if config.url else []
        return first + [e.to_wire() for e in self.of(owner)]

    def get(self, owner: str, endpoint_id: str) -> WebhookEndpoint:
        with self._storage.transaction() as tx:
            found = tx.get_webhook_endpoint(owner, _id(endpoint_id))
        if found is None:
            raise EndpointNotFound(endpoint_id)
        return found

    def update(
        self,
        owner: str,
        endpoint_id: str,
        *,
        url: object = None,
        types: Iterable[str] | None = None,
        enabled: bool | None = None,
    ) -> WebhookEndpoint:
        """Change what is given of ``url``, ``types`` and ``enabled``; the secret stays."""
        changes: dict[str, Any] = {}
        if url is not None:
            changes["url"] = self._url(url)
        if types is not None:
            changes["types"] = _types(types)
        if enabled is not None:
            changes["enabled"] = enabled
        return self._change(owner, endpoint_id, changes)

    def rotate_secret(self, owner: str, endpoint_id: str) -> WebhookEndpoint:
        """A new secret for the endpoint; deliveries from now on are signed with it."""
        return self._change(owner, endpoint_id, {"secret": new_secret()})

    def _change(self, owner: str, endpoint_id: str, changes: dict[str, Any]) -> WebhookEndpoint:
        endpoint_id = _id(endpoint_id)
        with self._storage.transaction() as tx:
            current = tx.get_webhook_endpoint(owner, endpoint_id)
            if current is None:
                raise EndpointNotFound(endpoint_id)
            changed = attrs.evolve(current, **changes)
            tx.put_webhook_endpoint(changed)
        return changed

    def delete(self, owner: str, endpoint_id: str) -> None:
        """Remove the endpoint; its log stays, its pending deliveries fail at their next try."""
        endpoint_id = _id(endpoint_id)
        with self._storage.transaction() as tx:
            if not tx.delete_webhook_endpoint(owner, endpoint_id):
                raise EndpointNotFound(endpoint_id)
