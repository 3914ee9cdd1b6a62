"""Salt-signed management calls (docs/interface.md §Salt-signed calls).

The client signs ``JSON.stringify`` of its body (salt included, signature not yet added) and
adds the result as ``signature``. The server rebuilds that text from the parsed body, which
must therefore keep the client's key order (``json.loads`` does), and recovers the signer.
Who the signer may be (the owner, or one of its app keys) is the caller's decision.

Replays are closed twice: the salt must be recent, and a signature is accepted once within
that window. The guard is keyed on the canonical signature bytes, and :mod:`.signatures`
refuses high-s twins, so no rewriting of a seen signature (``v`` as 0 or 27, ``0x`` or not,
upper-case hex, ``s`` -> ``n - s``) gets it accepted again.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..config import Settings
from ..crypto.hashing import sha256
from ..errors import AuthError, InvalidInput
from ..storage import Storage
from .jsjson import stringify
from .signatures import (
    WALLET_PREFIX,
    parse_signature,
    personal_message_hash,
    public_key_to_address,
    recover_public_key,
)


def signed_text(body: Mapping[str, Any]) -> str:
    """The text the client signed: its body without ``signature``, as JavaScript wrote it."""
    return stringify({key: value for key, value in body.items() if key != "signature"})


def _salt(body: Mapping[str, Any]) -> float:
    """The salt as a number. Seconds are what the interface asks for; a JavaScript client may
    well send ``Date.now() / 1000`` unrounded, or a string, so those are taken too."""
    salt = body.get("salt")
    if salt is None:
        raise InvalidInput("salt", "required")
    if isinstance(salt, str) and salt.isascii() and salt.isdigit() and len(salt) <= 18:
        return float(salt)
    if isinstance(salt, int | float) and not isinstance(salt, bool) and math.isfinite(salt):
        return float(salt)
    raise InvalidInput("salt", "must be a unix timestamp in seconds")


def salt_seconds(body: Mapping[str, Any]) -> int:
    """The body's salt in whole seconds (what texts that name the call's salt carry)."""
    return math.floor(_salt(body))


def verify_salted(
    storage: Storage, settings: Settings, body: Mapping[str, Any], *, now: int
) -> str:
    """Check a salt-signed body and return the checksummed address that signed it.

    Raises InvalidInput when salt or signature is missing or malformed-typed, and AuthError
    (``wallet signature: ...``) when the salt is outside ``settings.salt_window`` of ``now``,
    the signature is malformed or unrecoverable, or it has been accepted before.
    """
    salt = _salt(body)
    signature = body.get("signature")
    if signature is None:
        raise InvalidInput("signature", "required")
    if abs(now - salt) > settings.salt_window:
        raise AuthError(
            f"salt is more than {settings.salt_window} seconds away from the server clock",
            prefix=WALLET_PREFIX,
        )
    raw = parse_signature(signature, prefix=WALLET_PREFIX)
    signer = recover_public_key(personal_message_hash(signed_text(body)), raw, prefix=WALLET_PREFIX)
    # Remembered until the salt itself has gone stale; after that the window refuses it.
    remember_until = math.ceil(salt) + settings.salt_window + 1
    with storage.transaction() as tx:
        if not tx.remember_signature(sha256(raw).hex(), remember_until, now=now):
            raise AuthError("signature was already used", prefix=WALLET_PREFIX)
    return public_key_to_address(signer)
