"""Handlers for polling, with the legacy token flow (docs/interface.md §Events)."""

from __future__ import annotations

import attrs

from ..auth import poll_register_message, verify_wallet_signature
from ..domain.records import Json
from ..domain.tokens import normalize_owner
from ..errors import AuthError, InvalidInput, PaycoreError
from ..events.queues import consumer_of_token
from .http import Response, text_response
from .params import body_str
from .routing import Call
from .sessions import consumer_of_key


def poll_register(call: Call) -> Json:
    gw = call.gateway
    body = call.body()
    owner = normalize_owner(body_str(body, "ownerAddress"), "ownerAddress")
    verify_wallet_signature(poll_register_message(owner), body.get("signature"), owner)
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
        body = call.body()
        token_text = body.get("token")
        if token_text is None and gw.settings.auth_mode == "strict":
            raise AuthError("missing x-session-nonce and x-session-signature headers")
        owner = normalize_owner(body_str(body, "ownerAddress"), "ownerAddress")
        token_text = body_str(body, "token")
        token = gw.events.token(token_text)
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
