"""Wallets and session keys, signed with eth-account (never with paycore's own code).

Keys come from labels so a failing case names the exact key that signed it.
"""

from __future__ import annotations

import hashlib

import attrs
from eth_account import Account
from eth_account.messages import encode_defunct
from eth_account.signers.local import LocalAccount


def account(label: str) -> LocalAccount:
    return Account.from_key(hashlib.sha256(f"conformance:{label}".encode()).digest())


def public_key_of(acct: LocalAccount) -> str:
    """Uncompressed SEC1 key, ``0x04`` + 128 lowercase hex, as the interface registers it."""
    raw: bytes = acct._key_obj.public_key.to_bytes()
    return "0x04" + raw.hex()


def sign_text(acct: LocalAccount, text: str) -> str:
    """EIP-191 personal signature, ``0x`` + 130 hex."""
    return "0x" + bytes(acct.sign_message(encode_defunct(text=text)).signature).hex()


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@attrs.define
class SessionKey:
    """A session key the client holds, with its own strictly increasing nonce."""

    key: LocalAccount
    nonce: int = 1000

    @property
    def public_key(self) -> str:
        return public_key_of(self.key)

    def next_nonce(self) -> int:
        self.nonce += 1
        return self.nonce

    def headers_for(self, hashed: bytes, *, nonce: int | None = None) -> dict[str, str]:
        """``x-session-nonce`` / ``x-session-signature`` over ``sess:{nonce}:{sha256(hashed)}``."""
        used = self.next_nonce() if nonce is None else nonce
        signature = sign_text(self.key, f"sess:{used}:{sha256_hex(hashed)}")
        return {"x-session-nonce": str(used), "x-session-signature": signature}


def session(label: str) -> SessionKey:
    return SessionKey(account(f"session:{label}"))
