"""Handlers for session keys (docs/interface.md §Session keys)."""

from __future__ import annotations

from ..auth import deregistration_wire, registration_wire
from ..domain.records import Json, SessionKey
from .requests import Deregistration, PubkeysQuery, RegisterCallback, Registration
from .routing import Call


def consumer_of_key(key: SessionKey) -> str:
    """The poll queue of a session key (docs/architecture.md §Events: one queue per key).

    The owner is part of the name so that no queue can ever outlive the binding it was
    made for: a queue holds exactly one owner's events, whatever happens to the key.
    """
    return f"key:{key.owner}:{key.address}"


def register(call: Call) -> Json:
    gw = call.gateway
    # Session headers are optional here; when sent (by the key being registered) they make
    # the request a refresh, which the owner's signature alone cannot be (see registry).
    key = gw.sessions.register(call.read(Registration), session=call.caller)
    gw.open_queue(consumer_of_key(key), key.owner)
    return registration_wire(key)


def deregister(call: Call) -> Json:
    gw = call.gateway
    key = gw.sessions.deregister(call.read(Deregistration), session=call.caller)
    gw.close_queue(consumer_of_key(key))
    return deregistration_wire(key)


def pubkeys(call: Call) -> Json:
    gw = call.gateway
    owner = call.read(PubkeysQuery).owner
    if call.caller is None:
        # Strict mode needs the owner's session; soft mode serves the list without one.
        call.owner_scope(owner)
    return gw.sessions.list(owner, session=call.caller).to_wire()


def register_callback(call: Call) -> Json:
    # Session-signed always (docs/interface.md §Modes), soft mode included: a merely
    # claimed owner must never be able to redirect another merchant's webhooks.
    request = call.read(RegisterCallback)
    call.session()
    owner = call.owner_scope(request.owner_address, "ownerAddress")
    config = call.gateway.webhooks.set(owner, request.url)
    return {"ownerAddress": config.owner, "url": config.url}
