"""A session-signing client over a framework's own test client, Flask's or Litestar's.

It registers a session key for an owner (``POST /auth/register-pubkey``, signed by the
owner's key) and signs each request the way docs/interface.md §Authentication says: a GET
covers its request URI, a POST its exact body bytes. Signing is eth-account's, as a
merchant's server would do it, not paycore's verifier.
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any

from eth_account import Account
from eth_account.messages import encode_defunct
from eth_account.signers.local import LocalAccount


def sign_text(account: LocalAccount, text: str) -> str:
    """An EIP-191 personal signature."""
    return "0x" + bytes(account.sign_message(encode_defunct(text=text)).signature).hex()


class Answer:
    """A response of either framework's test client: ``status`` and ``json``."""

    def __init__(self, status: int, body: bytes) -> None:
        self.status = status
        self.body = body

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


class PaycoreClient:
    """``client`` is a ``flask.testing.FlaskClient`` or a ``litestar.testing.TestClient``;
    ``prefix`` is where paycore is mounted. ``owner`` (default: a fresh key) is the
    merchant's wallet; ``register()`` gives it a session key."""

    def __init__(
        self, client: Any, prefix: str = "/paycore", owner: LocalAccount | None = None
    ) -> None:
        self.client = client
        self.prefix = prefix.rstrip("/")
        self.owner: LocalAccount = owner or Account.create()
        self.session: LocalAccount = Account.create()
        self._nonce = 0
        self._flask = hasattr(client, "application")

    @property
    def address(self) -> str:
        return str(self.owner.address)

    def register(self) -> Answer:
        """Register the session key for ``owner``; raises unless paycore accepted it."""
        pub = "0x04" + self.session._key_obj.public_key.to_bytes().hex()
        body = {
            "ownerAddress": self.address,
            "publicKey": pub,
            "signature": sign_text(self.owner, pub),
        }
        answer = self.post("/auth/register-pubkey", body, signed=False)
        if answer.status != 200:
            raise AssertionError(f"register-pubkey answered {answer.status}: {answer.body!r}")
        return answer

    def _headers(self, signed: bytes) -> dict[str, str]:
        self._nonce = max(self._nonce + 1, time.time_ns() // 1_000_000)
        digest = hashlib.sha256(signed).hexdigest()
        return {
            "x-session-nonce": str(self._nonce),
            "x-session-signature": sign_text(self.session, f"sess:{self._nonce}:{digest}"),
        }

    def get(self, path: str, *, signed: bool = True) -> Answer:
        uri = self.prefix + path
        headers = self._headers(uri.encode()) if signed else {}
        response = self.client.get(uri, headers=headers)
        return self._answer(response)

    def post(self, path: str, body: Any = None, *, signed: bool = True) -> Answer:
        data = b"" if body is None else json.dumps(body).encode()
        headers = {"content-type": "application/json"}
        if signed:
            headers |= self._headers(data)
        uri = self.prefix + path
        if self._flask:
            response = self.client.post(uri, data=data, headers=headers)
        else:
            response = self.client.post(uri, content=data, headers=headers)
        return self._answer(response)

    def _answer(self, response: Any) -> Answer:
        if self._flask:
            return Answer(response.status_code, response.get_data())
        return Answer(response.status_code, response.content)
