"""Encrypted responses: ``encrypt_response`` on its own, then the whole path through ``handle``.

The end-to-end tests act as a client would: register a session key with an
``encryptionPublicKey`` (owner-signed, eth-account), sign requests with the session key, and
read answers with the encryption key, in Python and (marked ``node``) with eth-crypto.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

import attrs
import pytest
from coincurve import PrivateKey
from ecies_helpers import eth_crypto_decrypt, key, stored_public_key
from eth_account import Account
from eth_account.messages import encode_defunct
from eth_account.signers.local import LocalAccount

from paycore import Gateway, Settings
from paycore.api import Request, Response, handle
from paycore.api.encryption import SCHEME, encrypt_response
from paycore.crypto import ecies

ENCRYPTION_KEY = key("responses-encryption")
FIELDS = ["iv", "ephemPublicKey", "ciphertext", "mac"]
INVOICE_BODY = json.dumps(
    {
        "value": "10",
        "chainId": 31337,
        "description": "x",
        "acceptedTokens": ["31337:0x0000000000000000000000000000000000000000"],
        "address": "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
    }
).encode()


def _account(label: str) -> LocalAccount:
    acct: LocalAccount = Account.from_key(hashlib.sha256(label.encode()).digest())
    return acct


def _sign(acct: LocalAccount, text: str) -> str:
    signature = bytes(Account.sign_message(encode_defunct(text=text), acct.key).signature)
    return "0x" + signature.hex()


def _open(private: PrivateKey, response: Response) -> bytes:
    assert response.headers.get("x-encryption") == SCHEME
    assert response.content_type == "application/json"
    encrypted = json.loads(response.body)
    assert list(encrypted) == FIELDS
    return ecies.decrypt(private, encrypted)


# -- encrypt_response ----------------------------------------------------------------------


def test_encrypt_response_keeps_status_and_body_bytes() -> None:
    body = '{"description":"café ☕","value":"10"}'.encode()
    original = Response(201, body, "application/json", {"location": "/invoice/abc"})
    encrypted = encrypt_response(stored_public_key(ENCRYPTION_KEY), original)
    assert encrypted.status == 201
    assert encrypted.headers == {"location": "/invoice/abc", "x-encryption": SCHEME}
    assert _open(ENCRYPTION_KEY, encrypted) == body
    assert original.headers == {"location": "/invoice/abc"}  # the input is not mutated


def test_encrypt_response_replaces_any_existing_x_encryption_header() -> None:
    original = Response(200, b"{}", "application/json", {"X-Encryption": "none", "a": "b"})
    encrypted = encrypt_response(stored_public_key(ENCRYPTION_KEY), original)
    assert encrypted.headers == {"a": "b", "x-encryption": SCHEME}


def test_encrypt_response_body_is_compact_json_of_the_four_fields() -> None:
    encrypted = encrypt_response(stored_public_key(ENCRYPTION_KEY), Response(200, b"[]"))
    fields = json.loads(encrypted.body)
    assert list(fields) == FIELDS
    assert encrypted.body == json.dumps(fields, separators=(",", ":")).encode()


def test_encrypt_response_fails_closed_on_an_unusable_key() -> None:
    secret = b'{"secret":"must not leak"}'
    answered = encrypt_response("0x04" + "00" * 64, Response(200, secret))
    assert answered.status == 500
    assert b"secret" not in answered.body
    assert "x-encryption" not in answered.headers


# -- through paycore.api.handle ------------------------------------------------------------


@attrs.define
class Client:
    """A merchant's client: the owner wallet, a session key, and a nonce counter."""

    gateway: Gateway
    owner: LocalAccount
    session: LocalAccount
    nonce: int = 0

    @property
    def session_public_key(self) -> str:
        raw: bytes = self.session._key_obj.public_key.to_bytes()
        return "0x04" + raw.hex()

    def register(self, encryption_public_key: str | None) -> Response:
        body: dict[str, Any] = {
            "ownerAddress": self.owner.address,
            "publicKey": self.session_public_key,
            "signature": _sign(self.owner, self.session_public_key),
        }
        if encryption_public_key is not None:
            body["encryptionPublicKey"] = encryption_public_key
        request = Request("POST", "/auth/register-pubkey", body=json.dumps(body).encode())
        return handle(self.gateway, request)

    def post(self, path: str, body: bytes, headers: dict[str, str] | None = None) -> Response:
        self.nonce += 1
        signature = _sign(self.session, f"sess:{self.nonce}:{hashlib.sha256(body).hexdigest()}")
        signed = {"x-session-nonce": str(self.nonce), "x-session-signature": signature}
        request = Request("POST", path, headers={**signed, **(headers or {})}, body=body)
        return handle(self.gateway, request)

    def get(self, path: str, headers: dict[str, str] | None = None) -> Response:
        """A session-signed GET: the interface hashes the request URI instead of the body."""
        self.nonce += 1
        digest = hashlib.sha256(path.encode()).hexdigest()
        signature = _sign(self.session, f"sess:{self.nonce}:{digest}")
        signed = {"x-session-nonce": str(self.nonce), "x-session-signature": signature}
        return handle(self.gateway, Request("GET", path, headers={**signed, **(headers or {})}))


@pytest.fixture
def gateway() -> Iterator[Gateway]:
    gw = Gateway(Settings(database_url="memory://", auth_mode="strict"), entry_points=False)
    yield gw
    gw.storage.close()


@pytest.fixture
def client(gateway: Gateway) -> Client:
    merchant = Client(gateway, _account("enc-owner"), _account("enc-session"))
    registered = merchant.register(stored_public_key(ENCRYPTION_KEY))
    assert registered.status == 200, registered.body
    return merchant


def test_invoice_answer_is_encrypted_for_the_registered_key(client: Client) -> None:
    answered = client.post("/invoice", INVOICE_BODY)
    assert answered.status == 201
    invoice = json.loads(_open(ENCRYPTION_KEY, answered))
    assert invoice["value"] == "10"
    assert invoice["chainId"] == 31337
    assert invoice["owner"] == client.owner.address
    assert invoice["address"] == "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"
    assert b"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed" not in answered.body


def test_the_wrong_key_cannot_read_the_answer(client: Client) -> None:
    answered = client.post("/invoice", INVOICE_BODY)
    with pytest.raises(ecies.EciesError):
        ecies.decrypt(key("not the merchant"), json.loads(answered.body))


@pytest.mark.parametrize("opt_out", ["none", "NONE"])
def test_x_encryption_none_answers_in_plain_json(client: Client, opt_out: str) -> None:
    answered = client.post("/invoice", INVOICE_BODY, {"x-encryption": opt_out})
    assert answered.status == 201
    assert "x-encryption" not in {k.lower() for k in answered.headers}
    invoice = json.loads(answered.body)
    assert invoice["value"] == "10"
    assert invoice["owner"] == client.owner.address


def test_errors_stay_plain_text(client: Client) -> None:
    """A client need not decrypt a refusal to learn why (docs/interface.md §Errors)."""
    answered = client.post("/invoice", b'{"value":"ten"}')
    assert answered.status == 400
    assert answered.content_type.startswith("text/plain")
    assert "x-encryption" not in answered.headers


def test_session_without_an_encryption_key_answers_in_plain_json(gateway: Gateway) -> None:
    plain = Client(gateway, _account("enc-owner-2"), _account("enc-session-2"))
    assert plain.register(None).status == 200
    answered = plain.post("/invoice", INVOICE_BODY)
    assert answered.status == 201
    assert "x-encryption" not in answered.headers
    assert json.loads(answered.body)["owner"] == plain.owner.address


@pytest.mark.node
def test_eth_crypto_reads_the_encrypted_invoice(client: Client) -> None:
    """The interface's promise: eth-crypto's decryptWithPrivateKey opens the response body."""
    description = "Grüße, 東京 ☕ 😀"
    body = json.loads(INVOICE_BODY) | {"description": description}
    answered = client.post("/invoice", json.dumps(body, ensure_ascii=False).encode())
    assert answered.status == 201
    assert answered.headers.get("x-encryption") == SCHEME
    plaintext = eth_crypto_decrypt(ENCRYPTION_KEY, json.loads(answered.body))
    assert plaintext == ecies.decrypt(ENCRYPTION_KEY, json.loads(answered.body))
    invoice = json.loads(plaintext)
    assert invoice["description"] == description
    assert invoice["owner"] == client.owner.address
    # The same record read in the clear is the same JSON, byte for byte.
    plain = client.get("/invoice/" + invoice["guid"], {"x-encryption": "none"})
    assert plain.status == 200
    assert "x-encryption" not in plain.headers
    assert plain.body == plaintext


def test_session_signed_read_is_encrypted_and_matches_the_plain_read(client: Client) -> None:
    created = json.loads(_open(ENCRYPTION_KEY, client.post("/invoice", INVOICE_BODY)))
    path = "/invoice/" + created["guid"]
    encrypted = client.get(path)
    assert encrypted.status == 200
    plain = client.get(path, {"x-encryption": "none"})
    assert plain.status == 200
    assert _open(ENCRYPTION_KEY, encrypted) == plain.body
