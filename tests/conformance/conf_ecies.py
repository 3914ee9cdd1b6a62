"""Decrypting eth-crypto's ECIES object, written from docs/interface.md, not from
paycore.crypto.ecies.

x coordinate of ECDH -> SHA-512; AES-256-CBC with the first half, HMAC-SHA256 with the
second over iv || ephemPublicKey || ciphertext.
"""

from __future__ import annotations

import hashlib
import hmac

from coincurve import PublicKey
from Crypto.Cipher import AES
from Crypto.Util.Padding import unpad
from eth_account.signers.local import LocalAccount


def decrypt(recipient: LocalAccount, message: dict[str, str]) -> bytes:
    iv = bytes.fromhex(message["iv"])
    ephem = bytes.fromhex(message["ephemPublicKey"])
    ciphertext = bytes.fromhex(message["ciphertext"])
    mac = bytes.fromhex(message["mac"])
    assert len(iv) == 16 and len(ephem) == 65 and ephem[0] == 4 and len(mac) == 32
    point = PublicKey(ephem).multiply(bytes(recipient.key))
    shared_x = point.format(compressed=False)[1:33]
    digest = hashlib.sha512(shared_x).digest()
    expected = hmac.new(digest[32:], iv + ephem + ciphertext, hashlib.sha256).digest()
    assert hmac.compare_digest(expected, mac), "mac does not verify"
    return unpad(AES.new(digest[:32], AES.MODE_CBC, iv).decrypt(ciphertext), 16)
