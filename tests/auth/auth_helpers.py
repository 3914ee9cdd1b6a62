"""Client-side helpers for the auth tests, signing with eth-account (not with paycore).

Keys are derived from labels so every run signs the same bytes, and a failing vector can be
reproduced by name.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import attrs
from eth_account import Account
from eth_account.messages import encode_defunct
from eth_account.signers.local import LocalAccount

#: The tests' clock: a fixed unix time so expiry and salt windows are exact.
NOW = 1_700_000_000


def account(label: str) -> LocalAccount:
    acct: LocalAccount = Account.from_key(hashlib.sha256(label.encode()).digest())
    return acct


def public_key_of(acct: LocalAccount) -> str:
    """Uncompressed ``0x04...`` public key, the form the interface registers."""
    raw: bytes = acct._key_obj.public_key.to_bytes()  # 64 bytes, no 0x04
    return "0x04" + raw.hex()


def sign(acct: LocalAccount, message: str | bytes) -> str:
    """EIP-191 personal signature as ``0x`` + 130 hex, v in {27, 28}."""
    signable = encode_defunct(text=message) if isinstance(message, str) else encode_defunct(message)
    return "0x" + bytes(acct.sign_message(signable).signature).hex()


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@attrs.define
class SessionClient:
    """A client holding a session key: builds the headers docs/interface.md describes."""

    key: LocalAccount
    nonce: int = 0

    @property
    def public_key(self) -> str:
        return public_key_of(self.key)

    def headers(
        self,
        method: str,
        uri: str,
        body: bytes = b"",
        *,
        nonce: int | None = None,
        with_pubkey: bool = False,
    ) -> dict[str, str]:
        if nonce is None:
            self.nonce += 1
            nonce = self.nonce
        hashed = uri.encode() if method.upper() == "GET" else body
        signature = sign(self.key, f"sess:{nonce}:{sha256_hex(hashed)}")
        headers = {"x-session-nonce": str(nonce), "x-session-signature": signature}
        if with_pubkey:
            headers["x-session-pubkey"] = self.public_key
        return headers


def registration_body(owner: LocalAccount, session_key: LocalAccount) -> dict[str, Any]:
    public_key = public_key_of(session_key)
    return {
        "ownerAddress": owner.address,
        "publicKey": public_key,
        "signature": sign(owner, public_key),
    }


def salted_body(signer: LocalAccount, fields: dict[str, Any], salt: Any) -> dict[str, Any]:
    """What a JavaScript client sends, for bodies whose JSON.stringify equals json.dumps'
    compact form (plain ASCII strings and integers: no float or unicode subtleties)."""
    body = {**fields, "salt": salt}
    text = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
    body["signature"] = sign(signer, text)
    return body
