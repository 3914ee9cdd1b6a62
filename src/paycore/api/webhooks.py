"""Handlers for the wallet-signed webhook configuration and the session-signed delivery log
and redelivery (docs/interface.md §Webhooks)."""

from __future__ import annotations

from ..auth import (
    clear_webhook_message,
    get_webhook_message,
    set_webhook_message,
    verify_wallet_signature,
)
from ..domain.records import Json
from ..domain.tokens import normalize_owner
from .http import Response, json_response
from .requests import (
    CreateEndpoint,
    DeliveryQuery,
    EndpointId,
    EndpointsQuery,
    OwnerSigned,
    Redeliver,
    RedeliverFailed,
    SetWebhook,
    UpdateEndpoint,
)
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


# -- the delivery log and redelivery (session-signed, owner-scoped) ----------------------------


def deliveries(call: Call) -> Json:
    """GET /webhook/deliveries: a page of the owner's deliveries with their attempts."""
    query = call.read(DeliveryQuery)
    owner = call.owner_scope(query.owner)
    items, total, off, lim = call.gateway.webhooks.deliveries(
        owner,
        status=query.status,
        guid=query.guid,
        offset=query.offset,
        limit=query.limit,
        endpoint=query.endpoint,
    )
    return {"items": [d.to_wire() for d in items], "total": total, "offset": off, "limit": lim}


def redeliver(call: Call) -> Json:
    """POST /webhook/redeliver: one delivery again, due now, with its webhook-id."""
    request = call.read(Redeliver)
    owner = call.owner_scope(request.owner_address, "ownerAddress")
    return call.gateway.webhooks.redeliver(owner, request.id).to_wire()


def redeliver_failed(call: Call) -> Json:
    """POST /webhook/redeliver-failed: every failed delivery created since ``since``."""
    request = call.read(RedeliverFailed)
    owner = call.owner_scope(request.owner_address, "ownerAddress")
    count = call.gateway.webhooks.redeliver_failed(owner, request.since)
    return {"ownerAddress": owner, "since": request.since, "redelivered": count}


# -- webhook endpoints (session-signed, owner-scoped) ---------------------------------------


def create_endpoint(call: Call) -> Response:
    """POST /webhook/endpoints: a new endpoint with its own secret and event types."""
    request = call.read(CreateEndpoint)
    owner = call.owner_scope(request.owner_address, "ownerAddress")
    endpoint = call.gateway.webhooks.endpoints.create(
        owner, request.url, request.types, enabled=request.enabled is not False
    )
    return json_response(endpoint.to_wire(), 201)


def list_endpoints(call: Call) -> Json:
    """GET /webhook/endpoints: the /webhook/set URL (``default``) first, then the rest."""
    owner = call.owner_scope(call.read(EndpointsQuery).owner)
    return {"ownerAddress": owner, "items": call.gateway.webhooks.endpoints.list_wire(owner)}


def update_endpoint(call: Call) -> Json:
    """POST /webhook/endpoints/update: a new url, types or enabled; the secret stays."""
    request = call.read(UpdateEndpoint)
    owner = call.owner_scope(request.owner_address, "ownerAddress")
    return call.gateway.webhooks.endpoints.update(
        owner, request.id, url=request.url, types=request.types, enabled=request.enabled
    ).to_wire()


def rotate_endpoint_secret(call: Call) -> Json:
    """POST /webhook/endpoints/rotate-secret: a new secret, used from the next attempt."""
    request = call.read(EndpointId)
    owner = call.owner_scope(request.owner_address, "ownerAddress")
    return call.gateway.webhooks.endpoints.rotate_secret(owner, request.id).to_wire()


def delete_endpoint(call: Call) -> Json:
    """POST /webhook/endpoints/delete: remove the endpoint (its log stays)."""
    request = call.read(EndpointId)
    owner = call.owner_scope(request.owner_address, "ownerAddress")
    call.gateway.webhooks.endpoints.delete(owner, request.id)
    return {"removed": True, "id": request.id}
