"""Authentication: session-signed requests, owner wallet signatures, salt-signed calls, PoW.

Everything here is data in, data out, plus the storage unit of work; no web framework. The
names below are the whole public surface; the submodules say why each works as it does.
"""

from __future__ import annotations

from .jsjson import stringify as js_stringify
from .pow import issue_challenge, leading_zero_bits, meets_difficulty, solve, verify_pow
from .registry import (
    OwnerKeys,
    deregister_pubkey,
    deregistration_wire,
    list_pubkeys,
    register_pubkey,
    registration_wire,
)
from .salted import signed_text, verify_salted
from .session import (
    NONCE_HEADER,
    PUBKEY_HEADER,
    SIGNATURE_HEADER,
    authenticate,
    session_message,
    signed_payload,
    verify_session,
)
from .signatures import (
    parse_public_key,
    personal_message_hash,
    public_key_to_address,
    recover_address,
)
from .wallet import (
    accept_app_key_message,
    clear_webhook_message,
    deregister_pubkey_message,
    get_webhook_message,
    poll_register_message,
    set_webhook_message,
    verify_app_key_consent,
    verify_wallet_signature,
)

__all__ = [
    "accept_app_key_message",
    "NONCE_HEADER",
    "PUBKEY_HEADER",
    "SIGNATURE_HEADER",
    "OwnerKeys",
    "authenticate",
    "clear_webhook_message",
    "deregister_pubkey",
    "deregister_pubkey_message",
    "deregistration_wire",
    "get_webhook_message",
    "issue_challenge",
    "js_stringify",
    "leading_zero_bits",
    "list_pubkeys",
    "meets_difficulty",
    "parse_public_key",
    "personal_message_hash",
    "poll_register_message",
    "public_key_to_address",
    "recover_address",
    "register_pubkey",
    "registration_wire",
    "session_message",
    "set_webhook_message",
    "verify_app_key_consent",
    "signed_payload",
    "signed_text",
    "solve",
    "verify_pow",
    "verify_salted",
    "verify_session",
    "verify_wallet_signature",
]
