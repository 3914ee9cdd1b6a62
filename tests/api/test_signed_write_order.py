"""A signed write's order of work (``paycore.api.routing._in_one_transaction``): the key is
recovered and the body read before the request's transaction opens, so that neither holds
the transaction's locks (on SQLite the one writer lock of the process); the answers keep
their order all the same -- a bad signature is refused with nothing spent, a bad body after
the nonce is spent, and a replay of either is refused. Signed with eth-account, on a real
SQLite file."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from eth_account import Account
from eth_account.messages import encode_defunct
from eth_account.signers.local import LocalAccount

import paycore.auth.session as session_module
import paycore_storage.plugin
from paycore import Gateway, Settings
from paycore.api import Request, handle
from paycore.storage import StorageTx

ETH_1 = "1:0x0000000000000000000000000000000000000000"
NOW = 1_700_000_000.0
ADDRESS = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"


def _account(label: str) -> LocalAccount:
    return Account.from_key(hashlib.sha256(f"write-order:{label}".encode()).digest())


def _sign(account: LocalAccount, text: str) -> str:
    return "0x" + bytes(account.sign_message(encode_defunct(text=text)).signature).hex()


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[Gateway]:
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'order.sqlite3'}",
        prices={ETH_1: "2000"},
        auth_mode="strict",
    )
    gw = Gateway(settings, entry_points=False, plugins=[paycore_storage.plugin], clock=lambda: NOW)
    yield gw
    gw.close()


@pytest.fixture
def session(gateway: Gateway) -> LocalAccount:
    owner, key = _account("owner"), _account("session")
    public_key = "0x04" + key._key_obj.public_key.to_bytes().hex()
    fields = {
        "ownerAddress": owner.address,
        "publicKey": public_key,
        "signature": _sign(owner, public_key),
    }
    gateway.sessions.register(fields, session=None)
    return key


def _post(key: LocalAccount, body: bytes, nonce: int, *, signature: str | None = None) -> Request:
    signed = _sign(key, f"sess:{nonce}:{hashlib.sha256(body).hexdigest()}")
    headers = {"x-session-nonce": str(nonce), "x-session-signature": signature or signed}
    return Request("POST", "/invoice", headers=headers, body=body)


def _body(**changes: object) -> bytes:
    fields: dict[str, object] = {
        "value": "10", "chainId": 1, "description": "order", "acceptedTokens": [ETH_1],
        "address": ADDRESS,
    }  # fmt: skip
    fields.update(changes)
    return json.dumps(fields).encode()


def _nonce() -> int:
    return int(NOW * 1000)


def test_the_key_is_recovered_before_the_transaction_opens(
    gateway: Gateway, session: LocalAccount, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = gateway.storage
    open_at_recovery: list[bool] = []
    depth = {"open": 0}
    real_transaction, real_recover = storage.transaction, session_module.recover

    @contextmanager
    def counted() -> Iterator[StorageTx]:
        depth["open"] += 1
        try:
            with real_transaction() as tx:
                yield tx
        finally:
            depth["open"] -= 1

    def watched(text: str, signature: str) -> object:
        open_at_recovery.append(depth["open"] > 0)
        return real_recover(text, signature)

    monkeypatch.setattr(storage, "transaction", counted)
    monkeypatch.setattr(session_module, "recover", watched)
    answer = handle(gateway, _post(session, _body(), _nonce()))
    assert answer.status == 201, answer.body
    assert open_at_recovery == [False]


def test_a_bad_signature_over_a_bad_body_is_a_401_and_spends_nothing(
    gateway: Gateway, session: LocalAccount
) -> None:
    stranger = _account("stranger")
    body = _body(value="-1")
    forged = _post(stranger, body, _nonce())
    answer = handle(gateway, forged)
    assert answer.status == 401
    assert answer.body.startswith(b"session signature: unknown session key")
    # Nothing was spent: the session key's own request at that nonce still passes.
    assert handle(gateway, _post(session, _body(), _nonce())).status == 201


def test_a_bad_body_is_a_400_after_the_nonce_is_spent(
    gateway: Gateway, session: LocalAccount
) -> None:
    request = _post(session, _body(value="-1"), _nonce())
    answer = handle(gateway, request)
    assert answer.status == 400
    assert b"value" in answer.body
    replayed = handle(gateway, request)
    assert replayed.status == 401
    assert b"replay" in replayed.body
