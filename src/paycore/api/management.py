"""Handlers for the management functions and app keys: salt-signed POST bodies.

Each handler reads the JSON body -- in the key order the client signed it, which ``json``
keeps -- and calls ``paycore.management.service``, where the rules and their reasons live. Their
routes take no session headers (``session="none"``): the body's own signature is the
authentication, as docs/interface.md §Salt-signed calls describes.
"""

from __future__ import annotations

from ..domain.records import Json
from ..errors import InvalidInput
from .routing import Call


def _salted_body(call: Call) -> dict[str, object]:
    """The POST body; salt-signed calls are signed over the body's JSON text, so a query
    string cannot stand in for it."""
    if not call.request.body:
        raise InvalidInput("body", "a JSON object with salt and signature is required")
    return call.body()


def change_callback_url(call: Call) -> Json:
    return call.gateway.management.change_callback_url(_salted_body(call))


def set_email_notifications(call: Call) -> Json:
    return call.gateway.management.set_email_notifications(_salted_body(call))


def disable_wallet_index(call: Call) -> Json:
    return call.gateway.management.set_wallet_index(_salted_body(call), disabled=True)


def enable_wallet_index(call: Call) -> Json:
    return call.gateway.management.set_wallet_index(_salted_body(call), disabled=False)


def add_app_key(call: Call) -> Json:
    return call.gateway.management.add_app_key(_salted_body(call))


def remove_app_key(call: Call) -> Json:
    return call.gateway.management.remove_app_key(_salted_body(call))


def get_app_keys(call: Call) -> list[Json]:
    return call.gateway.management.get_app_keys(call.body())
