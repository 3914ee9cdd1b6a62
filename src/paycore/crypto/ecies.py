"""ECIES over secp256k1 in the eccrypto / eth-crypto format.

Encrypted API responses (docs/interface.md §Encrypted responses) must be readable by a
browser or Node client with nothing but eth-crypto's ``decryptWithPrivateKey``, so this
module follows that library's construction byte for byte rather than any standard ECIES profile:

* a fresh ephemeral key pair per message;
* shared secret = the 32-byte big-endian x coordinate of ``ephemeral_private * recipient``
  (not hashed, unlike libsecp256k1's default ECDH);
* ``SHA-512(shared secret)``: the first 32 bytes are the AES-256-CBC key (PKCS#7 padding,
  random 16-byte iv), the last 32 bytes the HMAC-SHA256 key;
* ``mac = HMAC-SHA256(iv || ephemPublicKey (65 bytes, uncompressed) || ciphertext)``.

The result is ``{iv, ephemPublicKey, ciphertext, mac}`` in lowercase hex without ``0x``, the
object eth-crypto's ``encryptWithPublicKey`` returns and ``decryptWithPrivateKey`` accepts
(it decodes each field with ``Buffer.from(field, "hex")``, which silently stops at a ``0x``).
:func:`decrypt` also accepts eth-crypto's compact ``cipher.stringify`` string.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
from collections.abc import Mapping

from coincurve import PrivateKey, PublicKey
from Crypto.Cipher import AES
from Crypto.Util.Padding import pad, unpad

__all__ = ["FIELDS", "EciesError", "decrypt", "encrypt", "encrypt_with", "parse", "stringify"]

IV_SIZE = 16
MAC_SIZE = 32
#: Field order as eth-crypto returns it, so our JSON reads the same as a JS client's.
FIELDS = ("iv", "ephemPublicKey", "ciphertext", "mac")
_HEX = re.compile(r"(?:[0-9a-fA-F]{2})*")


class EciesError(ValueError):
    """A message that cannot be decrypted: malformed fields, a wrong key, or tampering.

    One type for all of them, so a caller cannot tell a bad MAC from bad padding (the MAC is
    checked first, so padding is never inspected for a forged message anyway).
    """


def encrypt(public_key: str | bytes | PublicKey, plaintext: bytes) -> dict[str, str]:
    """Encrypt ``plaintext`` for the holder of ``public_key``'s private key.

    ``public_key`` is hex (``0x`` optional) or bytes: 65-byte uncompressed ``04...`` (the form
    paycore stores), the bare 64-byte ``x || y`` eth-crypto uses, or a 33-byte compressed key.
    """
    # A fresh ephemeral key per message: reusing one would reuse the AES and HMAC keys.
    return encrypt_with(_public_key(public_key), plaintext, PrivateKey(), os.urandom(IV_SIZE))


def encrypt_with(
    recipient: PublicKey, plaintext: bytes, ephemeral: PrivateKey, iv: bytes
) -> dict[str, str]:
    """:func:`encrypt` with the ephemeral key and iv given: only for known-answer tests.

    Never call this with a key or iv that was used before; :func:`encrypt` is the API.
    """
    if len(iv) != IV_SIZE:
        raise EciesError("iv must be 16 bytes")
    enc_key, mac_key = _derive(ephemeral, recipient)
    ciphertext = AES.new(enc_key, AES.MODE_CBC, iv).encrypt(pad(plaintext, AES.block_size))
    ephem_public = ephemeral.public_key.format(compressed=False)
    mac = _mac(mac_key, iv, ephem_public, ciphertext)
    return {
        "iv": iv.hex(),
        "ephemPublicKey": ephem_public.hex(),
        "ciphertext": ciphertext.hex(),
        "mac": mac.hex(),
    }


def decrypt(private_key: str | bytes | PrivateKey, encrypted: Mapping[str, str] | str) -> bytes:
    """The plaintext of an eth-crypto message, after a constant-time MAC check.

    ``encrypted`` is the ``{iv, ephemPublicKey, ciphertext, mac}`` object or the compact hex
    string of eth-crypto's ``cipher.stringify``. Raises :class:`EciesError` on any failure.
    """
    fields = parse(encrypted) if isinstance(encrypted, str) else encrypted
    iv = _field(fields, "iv")
    ephem_public = _field(fields, "ephemPublicKey")
    ciphertext = _field(fields, "ciphertext")
    mac = _field(fields, "mac")
    if len(iv) != IV_SIZE:
        raise EciesError("iv must be 16 bytes")
    if len(mac) != MAC_SIZE:
        raise EciesError("mac must be 32 bytes")
    # The MAC covers the 65-byte uncompressed form, exactly as eth-crypto hashes it.
    if len(ephem_public) != 65 or ephem_public[0] != 4:
        raise EciesError("ephemPublicKey must be 65 bytes, uncompressed")
    if not ciphertext or len(ciphertext) % AES.block_size:
        raise EciesError("ciphertext must be a non-empty multiple of 16 bytes")
    enc_key, mac_key = _derive(_private_key(private_key), _public_key(ephem_public))
    if not hmac.compare_digest(mac, _mac(mac_key, iv, ephem_public, ciphertext)):
        raise EciesError("bad MAC")
    try:
        return unpad(AES.new(enc_key, AES.MODE_CBC, iv).decrypt(ciphertext), AES.block_size)
    except ValueError:
        raise EciesError("bad padding") from None


def stringify(encrypted: Mapping[str, str]) -> str:
    """eth-crypto's compact form: hex of ``iv || compressed ephemPublicKey || mac || ciphertext``.

    Offered because eth-crypto clients often store or send messages this way.
    """
    ephem = _public_key(_field(encrypted, "ephemPublicKey")).format(compressed=True)
    parts = (
        _field(encrypted, "iv"),
        ephem,
        _field(encrypted, "mac"),
        _field(encrypted, "ciphertext"),
    )
    return b"".join(parts).hex()


def parse(compact: str) -> dict[str, str]:
    """The object form of a :func:`stringify` string (the inverse, as eth-crypto's ``parse``)."""
    raw = _unhex(compact, "message")
    if len(raw) < IV_SIZE + 33 + MAC_SIZE + AES.block_size:
        raise EciesError("message too short")
    ephem = _public_key(raw[IV_SIZE : IV_SIZE + 33]).format(compressed=False)
    return {
        "iv": raw[:IV_SIZE].hex(),
        "ephemPublicKey": ephem.hex(),
        "ciphertext": raw[IV_SIZE + 33 + MAC_SIZE :].hex(),
        "mac": raw[IV_SIZE + 33 : IV_SIZE + 33 + MAC_SIZE].hex(),
    }


def _derive(private: PrivateKey, public: PublicKey) -> tuple[bytes, bytes]:
    """(AES key, HMAC key) from the raw ECDH x coordinate.

    coincurve's ``PrivateKey.ecdh`` returns SHA-256 of the compressed point, which is not what
    eccrypto does; multiplying the point by the scalar and keeping x is.
    """
    shared_x = public.multiply(private.secret).format(compressed=True)[1:]
    digest = hashlib.sha512(shared_x).digest()
    return digest[:32], digest[32:]


def _mac(mac_key: bytes, iv: bytes, ephem_public: bytes, ciphertext: bytes) -> bytes:
    return hmac.new(mac_key, iv + ephem_public + ciphertext, hashlib.sha256).digest()


def _public_key(value: str | bytes | PublicKey) -> PublicKey:
    if isinstance(value, PublicKey):
        return value
    raw = _unhex(value, "public key") if isinstance(value, str) else bytes(value)
    if len(raw) == 64:  # eth-crypto's bare x || y
        raw = b"\x04" + raw
    try:
        return PublicKey(raw)
    except (ValueError, TypeError):
        raise EciesError("public key is not a point on secp256k1") from None


def _private_key(value: str | bytes | PrivateKey) -> PrivateKey:
    if isinstance(value, PrivateKey):
        return value
    raw = _unhex(value, "private key") if isinstance(value, str) else bytes(value)
    if len(raw) != 32:
        raise EciesError("private key must be 32 bytes")
    try:
        return PrivateKey(raw)
    except (ValueError, TypeError):
        raise EciesError("private key out of range") from None


def _field(fields: Mapping[str, str], name: str) -> bytes:
    value = fields.get(name) if isinstance(fields, Mapping) else None
    if not isinstance(value, str):
        raise EciesError(f"{name} must be a hex string")
    return _unhex(value, name)


def _unhex(text: str, what: str) -> bytes:
    """Hex to bytes, ``0x`` optional; stricter than ``bytes.fromhex``, which allows spaces."""
    if text[:2] in ("0x", "0X"):
        text = text[2:]
    if _HEX.fullmatch(text) is None:
        raise EciesError(f"{what} is not hex")
    return bytes.fromhex(text)
