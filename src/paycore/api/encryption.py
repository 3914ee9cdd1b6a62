"""Encrypted responses: wrap an owner-scoped JSON answer for the caller's encryption key.

docs/interface.md §Encrypted responses: when the calling session key registered an
``encryptionPublicKey``, the dispatcher hands successful JSON answers here (unless the
request sent ``x-encryption: none``). The body becomes eth-crypto's ECIES object, so a
browser or Node client reads it with
``EthCrypto.decryptWithPrivateKey(privateKey, await response.json())`` and nothing else; the
header tells a client which responses need that step.
"""

from __future__ import annotations

import json
import logging

import attrs

from ..crypto import ecies
from .http import Response, text_response

log = logging.getLogger("paycore.api")

#: The response header naming the scheme, and the request header that opts out with "none".
ENCRYPTION_HEADER = "x-encryption"
SCHEME = "ecies-secp256k1"


def encrypt_response(encryption_public_key: str, response: Response) -> Response:
    """``response`` with its body replaced by the ECIES object of the original body bytes.

    The status is kept so a client can branch on it before decrypting. The plaintext is the
    exact body that would have been sent (UTF-8 JSON), so decrypting yields the same text as
    an unencrypted call. A stored key that cannot be used (keys are checked on-curve at
    registration, so this means a damaged store) answers 500 rather than ever falling back to
    plaintext, and does not raise: the dispatcher promises adapters it never does.
    """
    try:
        encrypted = ecies.encrypt(encryption_public_key, response.body)
    except ecies.EciesError:
        log.exception("stored encryptionPublicKey is unusable; refusing to answer in plaintext")
        return text_response("internal error", 500)
    body = json.dumps({name: encrypted[name] for name in ecies.FIELDS}, separators=(",", ":"))
    headers = {k: v for k, v in response.headers.items() if k.lower() != ENCRYPTION_HEADER}
    headers[ENCRYPTION_HEADER] = SCHEME
    return attrs.evolve(
        response, body=body.encode(), content_type="application/json", headers=headers
    )
