"""Handlers for polling, with the legacy token flow (docs/interface.md §Events)."""

from __future__ import annotations

import attrs

from ..auth import poll_register_message, verify_wallet_signature
from ..domain.records import Json
from ..domain.tokens import normalize_owner
from ..errors import AuthError, InvalidInput, PaycoreError
from ..events.queues import consumer_of_token
from .http import Response, text_response
from .requests import OwnerSigned, PollEvents
from .routing import Call
from .sessions import consumer_of_key


def poll_register(call: Call) -> Json:
    gw = call.gateway
    request = call.read(OwnerSigned)
    owner = normalize_owner(request.owner_address)
    verify_wallet_signature(poll_register_message(owner), request.signature, owner)
    token = gw.events.register_token(owner, gw.now())
    return {"ownerAddress": owner, "token": token.token}


def poll_events(call: Call) -> Json:
    gw = call.gateway
    if call.caller is not None:
        if call.request.body:
            # docs/interface.md: the signature hashes the empty string. Draining on any other signed
            # body would let a body signed for another call be spent here.
            raise InvalidInput("body", "must be empty with session headers")
        owner, consumer = call.caller.owner, consumer_of_key(call.caller)
    else:
        request = call.read(PollEvents)
        if request.token is None and gw.settings.auth_mode == "strict":
            raise AuthError("missing x-session-nonce and x-session-signature headers")
        if request.owner_address is None:
            raise InvalidInput("ownerAddress", "is required")
        if not request.token:
            raise InvalidInput("token", "is required")
        owner = normalize_owner(request.owner_address)
        token = gw.events.token(request.token)
        if token is None or token.owner != owner:
            raise AuthError("unknown poll token for this ownerAddress", prefix="poll token")
        consumer = consumer_of_token(token.token)
    gw.open_queue(consumer, owner)
    events = gw.drain_events(consumer)
    return {"ownerAddress": owner, "events": [e.payload for e in events]}


class UpgradeRequired(PaycoreError):
    status = 426


def not_a_websocket(call: Call) -> Response:
    """A plain HTTP request to /ws: say how to reach it instead of a bare 404."""
    error = UpgradeRequired("upgrade required: /ws speaks WebSocket (Upgrade: websocket)")
    return attrs.evolve(text_response(error.text, error.status), headers={"upgrade": "websocket"})
