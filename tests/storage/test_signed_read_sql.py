"""A signed ``GET /invoice/{guid}`` on the SQL stores, where its nonce is spent and the
invoice read in one storage call (``SqlStorage.spend_nonce_then_read``: one statement on
PostgreSQL, one pooled connection on SQLite): the answer is the public read's, byte for
byte with its ETag; a replay is refused with the same text as ever and changes nothing;
an unknown guid is a 404 whose nonce stays spent; a due invoice is expired on the way."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from coincurve import PrivateKey
from sqlalchemy.engine import URL

import paycore_storage.plugin
from paycore import Gateway, Settings
from paycore.api import Request, handle
from paycore.auth.signatures import personal_message_hash, public_key_to_address
from paycore_storage import SqlStorage

ETH_1 = "1:0x0000000000000000000000000000000000000000"
NOW = 1_700_000_000.0
OWNER_KEY = PrivateKey(hashlib.sha256(b"signed-read-owner").digest())
SESSION_KEY = PrivateKey(hashlib.sha256(b"signed-read-session").digest())


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now


def _sign(key: PrivateKey, message: str) -> str:
    signature = key.sign_recoverable(personal_message_hash(message), hasher=None)
    return "0x" + signature[:64].hex() + f"{signature[64] + 27:02x}"


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'signed.sqlite3'}"
    url: URL = request.getfixturevalue("postgres_schema")()
    return url.render_as_string(hide_password=False)


class PlainStore:
    """A store with the required methods only (as a plugin written before
    ``spend_nonce_then_read``): its signed reads make the two calls."""

    def __init__(self, url: str) -> None:
        self.inner = SqlStorage(url)

    def transaction(self) -> Any:
        return self.inner.transaction()

    def spend_nonce(self, *args: Any, **kw: Any) -> Any:
        return self.inner.spend_nonce(*args, **kw)

    def read_invoice(self, guid: str) -> Any:
        return self.inner.read_invoice(guid)

    def close(self) -> None:
        self.inner.close()


@pytest.fixture(params=["own", "plain"])
def gateway(request: pytest.FixtureRequest, database: str) -> Iterator[Gateway]:
    settings = Settings(database_url=database, prices={ETH_1: "2000"}, auth_mode="strict")
    store = PlainStore(database) if request.param == "plain" else None
    gw = Gateway(
        settings, storage=store, entry_points=False, plugins=[paycore_storage.plugin],
        clock=Clock(),
    )  # fmt: skip
    yield gw
    gw.close()


def _signed_get(uri: str, nonce: int) -> Request:
    digest = hashlib.sha256(uri.encode()).hexdigest()
    headers = {
        "x-session-nonce": str(nonce),
        "x-session-signature": _sign(SESSION_KEY, f"sess:{nonce}:{digest}"),
    }
    return Request("GET", uri, headers=headers, raw_uri=uri)


def _signed_post(path: str, body: bytes, nonce: int) -> Request:
    digest = hashlib.sha256(body).hexdigest()
    headers = {
        "x-session-nonce": str(nonce),
        "x-session-signature": _sign(SESSION_KEY, f"sess:{nonce}:{digest}"),
        "content-type": "application/json",
    }
    return Request("POST", path, headers=headers, body=body)


def test_a_signed_read_on_sql_is_the_public_read_with_its_nonce_spent(gateway: Gateway) -> None:
    public_key = "0x" + SESSION_KEY.public_key.format(compressed=False).hex()
    registration = {
        "ownerAddress": public_key_to_address(OWNER_KEY.public_key.format(compressed=False)),
        "publicKey": public_key,
        "signature": _sign(OWNER_KEY, public_key),
    }
    answer = handle(
        gateway,
        Request("POST", "/auth/register-pubkey", body=json.dumps(registration).encode(),
                headers={"content-type": "application/json"}),
    )  # fmt: skip
    assert answer.status == 200, answer.body
    fields = {
        "value": "10", "chainId": 1, "description": "signed", "acceptedTokens": [ETH_1],
        "address": "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", "deadlineSecs": 60,
    }  # fmt: skip
    created = handle(gateway, _signed_post("/invoice", json.dumps(fields).encode(), 1))
    assert created.status == 201, created.body
    guid = json.loads(created.body)["guid"]
    uri = f"/invoice/{guid}"
    public = handle(gateway, Request("GET", uri))
    signed = handle(gateway, _signed_get(uri, 2))
    assert (signed.status, signed.body) == (200, public.body)
    assert signed.headers["etag"] == public.headers["etag"]
    replayed = handle(gateway, _signed_get(uri, 2))
    assert (replayed.status, replayed.body) == (
        401, b"session signature: this nonce was already accepted for this request (a replay)",
    )  # fmt: skip
    unknown = "00000000-0000-4000-8000-00000000dead"
    missing = handle(gateway, _signed_get(f"/invoice/{unknown}", 3))
    assert (missing.status, missing.body) == (404, f"invoice {unknown} not found".encode())
    assert handle(gateway, _signed_get(f"/invoice/{unknown}", 3)).status == 401
    gateway.clock.now += 61  # type: ignore[attr-defined]
    expired = handle(gateway, _signed_get(uri, 4))
    assert expired.status == 200 and json.loads(expired.body)["status"] == "expired"
    assert handle(gateway, Request("GET", uri)).body == expired.body
