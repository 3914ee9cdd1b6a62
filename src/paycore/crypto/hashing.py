"""The two digests the protocols need, in one place so the backend can be swapped once."""

from __future__ import annotations

import hashlib

from Crypto.Hash import keccak as _keccak


def keccak256(data: bytes) -> bytes:
    return _keccak.new(digest_bits=256, data=data).digest()


def sha256(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()
