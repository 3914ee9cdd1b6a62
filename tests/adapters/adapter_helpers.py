"""Client-side helpers for the adapter tests: keys, EIP-191 signatures (eth-account, not
paycore's own code), session headers, and a raw-byte-counting body for the 413 tests."""

from __future__ import annotations

import hashlib
import io
import socket
from typing import Any

from eth_account import Account
from eth_account.messages import encode_defunct
from eth_account.signers.local import LocalAccount

from paycore import Gateway, Settings

NOW = 1_700_000_000
PREFIX = "/paycore"
ETH_1 = "1:0x0000000000000000000000000000000000000000"
PRICES = {ETH_1: "2000"}


def account(label: str) -> LocalAccount:
    return Account.from_key(hashlib.sha256(label.encode()).digest())


def sign(acct: LocalAccount, text: str) -> str:
    return "0x" + bytes(acct.sign_message(encode_defunct(text=text)).signature).hex()


def public_key(acct: LocalAccount) -> str:
    return "0x04" + acct._key_obj.public_key.to_bytes().hex()


def registration(owner: LocalAccount, key: LocalAccount) -> dict[str, Any]:
    pub = public_key(key)
    return {"ownerAddress": owner.address, "publicKey": pub, "signature": sign(owner, pub)}


def session_headers(key: LocalAccount, nonce: int, signed: bytes) -> dict[str, str]:
    """``signed`` is the request URI for a GET, the body otherwise (docs/interface.md)."""
    digest = hashlib.sha256(signed).hexdigest()
    return {
        "x-session-nonce": str(nonce),
        "x-session-signature": sign(key, f"sess:{nonce}:{digest}"),
    }


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class CountingStream(io.RawIOBase):
    """A request body that records how much of it was read; endless unless ``size`` is given."""

    def __init__(self, size: int | None = None) -> None:
        self.size = size
        self.read_bytes = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        room = len(buffer)
        if self.size is not None:
            room = min(room, self.size - self.read_bytes)
        buffer[:room] = b"x" * room
        self.read_bytes += room
        return room


def make_gateway(**overrides: Any) -> Gateway:
    """A fresh in-memory gateway whose clock stands still, so two answers can be compared."""
    values: dict[str, Any] = {"database_url": "memory://", "prices": PRICES}
    values.update(overrides)
    return Gateway(Settings(**values), entry_points=False, clock=lambda: NOW)
