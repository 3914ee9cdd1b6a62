"""Handlers for the management functions and app keys: salt-signed POST bodies.

Each handler reads its typed request (``paycore.management.requests``) and hands it to
``Gateway.management`` together with the body as signed -- the JSON object in the key order
the client wrote it, which the signature covers. Their routes take no session headers
(``session="none"``): the body's own signature is the authentication, as docs/interface.md
§Salt-signed calls describes.
"""

from __future__ import annotations

from typing import Any, TypeVar

from ..domain.records import Json
from ..errors import InvalidInput
from ..management.requests import (
    AppKeyChange,
    AppKeysQuery,
    ChangeCallbackUrl,
    NewAppKey,
    SetEmailNotifications,
    WalletIndexChange,
)
from .routing import Call

T = TypeVar("T")


def _salted(call: Call, cls: type[T]) -> tuple[T, dict[str, Any]]:
    """The typed request and the body as signed. A salt-signed call is signed over its
    body's JSON text, so a query string cannot stand in for it."""
    if not call.request.body:
        raise InvalidInput("body", "a JSON object with salt and signature is required")
    return call.read(cls), call.body()


def change_callback_url(call: Call) -> Json:
    return call.gateway.management.change_callback_url(*_salted(call, ChangeCallbackUrl))


def set_email_notifications(call: Call) -> Json:
    return call.gateway.management.set_email_notifications(*_salted(call, SetEmailNotifications))


def disable_wallet_index(call: Call) -> Json:
    return call.gateway.management.set_wallet_index(
        *_salted(call, WalletIndexChange), disabled=True
    )


def enable_wallet_index(call: Call) -> Json:
    return call.gateway.management.set_wallet_index(
        *_salted(call, WalletIndexChange), disabled=False
    )


def add_app_key(call: Call) -> Json:
    return call.gateway.management.add_app_key(*_salted(call, NewAppKey))


def remove_app_key(call: Call) -> Json:
    return call.gateway.management.remove_app_key(*_salted(call, AppKeyChange))


def get_app_keys(call: Call) -> list[Json]:
    return call.gateway.management.get_app_keys(call.read(AppKeysQuery))
