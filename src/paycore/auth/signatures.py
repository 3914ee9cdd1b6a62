"""EIP-191 personal-message signatures: hashing, recovery, public keys and their addresses.

Recovery runs on every authenticated request, so this module talks to libsecp256k1 through
coincurve directly instead of going through eth-account (which is an order of magnitude
slower), and it memoises the public-key -> address step: a deployment has few session keys,
and each of them signs many requests.

Every signature problem is raised as :class:`~paycore.errors.AuthError` with the caller's
``prefix``, so a session header and a wallet signature in a body fail with the text of their
own scheme while sharing one implementation.
"""

from __future__ import annotations

import re
from functools import lru_cache

from coincurve import PublicKey

from ..crypto.hashing import keccak256
from ..domain.tokens import to_checksum
from ..errors import AuthError, InvalidInput

SESSION_PREFIX = "session signature"
WALLET_PREFIX = "wallet signature"

_EIP191_PREFIX = b"\x19Ethereum Signed Message:\n"

#: Order of the secp256k1 group. Signatures with s above half of it are the malleated twin of
#: a low-s signature (EIP-2); refusing them means one message has exactly one accepted
#: signature, which the salt-signed replay guard relies on.
SECP256K1_N = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141
_HALF_N = SECP256K1_N // 2

_SIGNATURE_HEX = re.compile(r"(?:0[xX])?([0-9a-fA-F]{130})")
_PUBLIC_KEY_HEX = re.compile(r"0[xX]04[0-9a-fA-F]{128}")


def personal_message_hash(message: str | bytes) -> bytes:
    """The digest ``personal_sign`` / ``signMessage`` signs: the prefix stops a signed text from
    ever being a valid transaction, and the length pins where the message ends."""
    data = message.encode("utf-8") if isinstance(message, str) else message
    return keccak256(_EIP191_PREFIX + str(len(data)).encode("ascii") + data)


def parse_signature(signature: object, *, prefix: str = SESSION_PREFIX) -> bytes:
    """Canonical 65 bytes ``r || s || recid`` (recid 0/1) from hex with or without ``0x``.

    Canonical matters beyond recovery: ``v`` written as 27 or as 0 is the same signature, and
    a replay guard keyed on these bytes must not see two.
    """
    if not isinstance(signature, str):
        raise AuthError("malformed signature: must be a hex string", prefix=prefix)
    match = _SIGNATURE_HEX.fullmatch(signature)
    if match is None:
        raise AuthError("malformed signature: expected 65 bytes of hex", prefix=prefix)
    raw = bytes.fromhex(match.group(1))
    v = raw[64]
    if v in (27, 28):
        v -= 27
    elif v not in (0, 1):
        raise AuthError("malformed signature: v must be 0, 1, 27 or 28", prefix=prefix)
    r = int.from_bytes(raw[:32], "big")
    s = int.from_bytes(raw[32:64], "big")
    if not 0 < r < SECP256K1_N:
        raise AuthError("malformed signature: r out of range", prefix=prefix)
    if not 0 < s <= _HALF_N:
        raise AuthError("malformed signature: s must be in the lower half (EIP-2)", prefix=prefix)
    return raw[:64] + bytes((v,))


def recover_public_key(digest: bytes, signature: bytes, *, prefix: str = SESSION_PREFIX) -> bytes:
    """The 65-byte uncompressed public key behind a :func:`parse_signature` result."""
    try:
        key = PublicKey.from_signature_and_message(signature, digest, hasher=None)
    except ValueError:
        raise AuthError("signature does not recover to a public key", prefix=prefix) from None
    return key.format(compressed=False)


@lru_cache(maxsize=4096)
def public_key_to_address(public_key: bytes) -> str:
    """EIP-55 address of an uncompressed public key (65 bytes with 0x04, or the bare 64)."""
    body = public_key[1:] if len(public_key) == 65 else public_key
    if len(body) != 64:
        raise ValueError("an uncompressed public key has 64 bytes after 0x04")
    return to_checksum("0x" + keccak256(body)[12:].hex())


def recover(message: str | bytes, signature: object, *, prefix: str = SESSION_PREFIX) -> bytes:
    """The uncompressed public key that signed ``message`` as an EIP-191 personal message."""
    raw = parse_signature(signature, prefix=prefix)
    return recover_public_key(personal_message_hash(message), raw, prefix=prefix)


def recover_address(
    message: str | bytes, signature: object, *, prefix: str = SESSION_PREFIX
) -> str:
    """The checksummed address that signed ``message`` as an EIP-191 personal message."""
    return public_key_to_address(recover(message, signature, prefix=prefix))


def parse_public_key(public_key: object, field: str = "publicKey") -> bytes:
    """The 65 bytes of an uncompressed SEC1 key given as ``0x04`` + 128 hex, checked on-curve.

    The ``0x04`` prefix is required (docs/interface.md states the format) so that the text
    a client signs, such as ``deregister-pubkey:{publicKeyLower}``, has one spelling only.
    """
    if not isinstance(public_key, str) or _PUBLIC_KEY_HEX.fullmatch(public_key) is None:
        raise InvalidInput(field, "must be 0x04 followed by 128 hex digits")
    raw = bytes.fromhex(public_key[2:])
    try:
        PublicKey(raw)
    except ValueError:
        raise InvalidInput(field, "not a point on secp256k1") from None
    return raw


def public_key_text(public_key: bytes) -> str:
    """The stored and signed spelling of a public key: lowercase ``0x04...``."""
    return "0x" + public_key.hex()
