"""Idempotency keys on creating writes (docs/decisions.md, "Idempotency keys"): a client
that retries ``POST /invoice``, ``POST /link`` or ``POST /refund`` after a timeout, with the
same ``Idempotency-Key``, gets the first answer again and nothing new is made; the same key
with another request is a 409; keys are per owner, kept 24 hours, durable across restarts,
and twenty concurrent retries of one key make one invoice on SQLite and PostgreSQL.

Each retry is signed anew (its own nonce), as a real client's must be: the signature covers
the body, never the header, so the replay rule is the nonce's and the key only names the
write.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from eth_account import Account
from eth_account.messages import encode_defunct
from eth_account.signers.local import LocalAccount

from paycore import ChainConfig, Gateway, Settings
from paycore.api import Request, Response, handle
from paycore.api.openapi import document
from paycore.api.table import ROUTES
from paycore.chains.evm import plugin as evm_plugin

NOW = 1_700_000_000
ETH_1 = "1:0x0000000000000000000000000000000000000000"
SHOP: LocalAccount = Account.from_key(b"\x01" * 32)
SHOP_KEY: LocalAccount = Account.from_key(b"\x02" * 32)
RIVAL: LocalAccount = Account.from_key(b"\x03" * 32)
RIVAL_KEY: LocalAccount = Account.from_key(b"\x04" * 32)
FACTORY = "0x5FbDB2315678afecb367f032d93F642f64180aa3"
BACKENDS = ["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


def invoice_body(value: str = "10", description: str = "order 1001") -> bytes:
    return json.dumps(
        {
            "value": value,
            "chainId": 1,
            "description": description,
            "acceptedTokens": [ETH_1],
            "address": "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
            "deadlineSecs": 600,
        }
    ).encode()


def sign(acct: LocalAccount, text: str) -> str:
    return "0x" + bytes(acct.sign_message(encode_defunct(text=text)).signature).hex()


class Clock:
    def __init__(self) -> None:
        self.now = float(NOW)

    def __call__(self) -> float:
        return self.now


class Client:
    """Signs as a shop's client does: each request with a nonce of its own."""

    def __init__(self, gateway: Gateway, owner: LocalAccount, key: LocalAccount) -> None:
        self.gateway = gateway
        self.key = key
        self.nonce = 0
        self._lock = threading.Lock()
        public_key = "0x04" + key._key_obj.public_key.to_bytes().hex()
        registration = {
            "ownerAddress": owner.address,
            "publicKey": public_key,
            "signature": sign(owner, public_key),
        }
        answer = handle(
            gateway,
            Request(
                method="POST", path="/auth/register-pubkey", body=json.dumps(registration).encode()
            ),
        )
        assert answer.status == 200, answer.body

    def request(self, path: str, body: bytes, idempotency_key: str | None = None) -> Request:
        with self._lock:
            self.nonce += 1
            nonce = self.nonce
        digest = hashlib.sha256(body).hexdigest()
        headers = {
            "x-session-nonce": str(nonce),
            "x-session-signature": sign(self.key, f"sess:{nonce}:{digest}"),
            "content-type": "application/json",
        }
        if idempotency_key is not None:
            headers["idempotency-key"] = idempotency_key
        return Request(method="POST", path=path, headers=headers, body=body, raw_uri=path)

    def post(self, path: str, body: bytes, idempotency_key: str | None = None) -> Response:
        return handle(self.gateway, self.request(path, body, idempotency_key))


def build(store: Any, clock: Clock) -> Gateway:
    # Chain 1 with a factory, so that links (whose invoices need deposit addresses) can be
    # made; no node is asked.
    chain = ChainConfig(chain_id=1, name="ethereum", rpc_url="http://127.0.0.1:9", factory=FACTORY)
    settings = Settings(auth_mode="strict", prices={ETH_1: "2000"}, chains={1: chain})
    return Gateway(settings, storage=store, entry_points=False, plugins=[evm_plugin], clock=clock)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture(params=BACKENDS)
def gateway(request: pytest.FixtureRequest, make_storage: Any, clock: Clock) -> Iterator[Gateway]:
    found = build(make_storage(request.param), clock)
    yield found
    found.close()


def invoices_of(gateway: Gateway, owner: str) -> int:
    with gateway.storage.transaction() as tx:
        return tx.count_invoices(owner=owner)


def test_without_a_key_each_post_makes_an_invoice(gateway: Gateway) -> None:
    shop = Client(gateway, SHOP, SHOP_KEY)
    assert shop.post("/invoice", invoice_body()).status == 201
    assert shop.post("/invoice", invoice_body()).status == 201
    assert invoices_of(gateway, SHOP.address) == 2


def test_a_retry_with_the_key_gets_the_first_answer_and_makes_nothing(gateway: Gateway) -> None:
    shop = Client(gateway, SHOP, SHOP_KEY)
    first = shop.post("/invoice", invoice_body(), "order-1001")
    assert first.status == 201, first.body
    assert "idempotent-replayed" not in first.headers
    retry = shop.post("/invoice", invoice_body(), "order-1001")
    assert retry.status == 201
    assert retry.body == first.body
    assert retry.headers["idempotent-replayed"] == "true"
    assert invoices_of(gateway, SHOP.address) == 1
    # Another key is another write.
    assert shop.post("/invoice", invoice_body(), "order-1002").status == 201
    assert invoices_of(gateway, SHOP.address) == 2


def test_the_key_with_another_request_is_a_409_that_makes_nothing(gateway: Gateway) -> None:
    shop = Client(gateway, SHOP, SHOP_KEY)
    assert shop.post("/invoice", invoice_body("10"), "k").status == 201
    changed = shop.post("/invoice", invoice_body("11"), "k")
    assert changed.status == 409
    assert changed.body == (
        b"idempotency-key: already used with a different request; use a new key"
    )
    assert invoices_of(gateway, SHOP.address) == 1


def test_keys_are_each_owners_own(gateway: Gateway) -> None:
    shop = Client(gateway, SHOP, SHOP_KEY)
    rival = Client(gateway, RIVAL, RIVAL_KEY)
    mine = shop.post("/invoice", invoice_body(), "shared-key")
    theirs = rival.post("/invoice", invoice_body(), "shared-key")
    assert mine.status == theirs.status == 201
    assert json.loads(mine.body)["guid"] != json.loads(theirs.body)["guid"]
    assert json.loads(theirs.body)["owner"] == RIVAL.address
    assert "idempotent-replayed" not in theirs.headers


def test_a_refused_request_keeps_no_key(gateway: Gateway) -> None:
    shop = Client(gateway, SHOP, SHOP_KEY)
    refused = shop.post("/invoice", invoice_body("-1"), "k")
    assert refused.status == 400
    assert invoices_of(gateway, SHOP.address) == 0
    corrected = shop.post("/invoice", invoice_body("10"), "k")
    assert corrected.status == 201, corrected.body
    assert "idempotent-replayed" not in corrected.headers


def test_a_key_is_replayed_for_24_hours_then_forgotten(gateway: Gateway, clock: Clock) -> None:
    shop = Client(gateway, SHOP, SHOP_KEY)
    first = shop.post("/invoice", invoice_body(), "k")
    clock.now += 24 * 3600 - 1
    assert shop.post("/invoice", invoice_body(), "k").body == first.body
    clock.now += 2
    later = shop.post("/invoice", invoice_body(), "k")
    assert later.status == 201
    assert json.loads(later.body)["guid"] != json.loads(first.body)["guid"]
    assert invoices_of(gateway, SHOP.address) == 2
    # Retention takes the keys a day old and no others.
    clock.now += 24 * 3600 + 1
    assert shop.post("/invoice", invoice_body(), "fresh").status == 201
    assert gateway.retention.prune().idempotency_keys == 1


@pytest.mark.parametrize(
    "key", ["", "has space", "x" * 256, "caf\u00e9"], ids=["empty", "space", "long", "non-ascii"]
)
def test_a_malformed_key_is_a_400_that_makes_nothing(gateway: Gateway, key: str) -> None:
    shop = Client(gateway, SHOP, SHOP_KEY)
    answer = shop.post("/invoice", invoice_body(), key)
    assert answer.status == 400
    assert answer.body == (
        b"invalid request: idempotency-key: must be 1 to 255 printable ASCII characters "
        b"without spaces"
    )
    assert invoices_of(gateway, SHOP.address) == 0


def test_a_payment_link_retry_makes_one_link(gateway: Gateway) -> None:
    shop = Client(gateway, SHOP, SHOP_KEY)
    body = json.dumps(
        {"amount": "5", "chainId": 1, "acceptedTokens": [ETH_1], "description": "mug"}
    ).encode()
    first = shop.post("/link", body, "link-1")
    assert first.status == 201, first.body
    retry = shop.post("/link", body, "link-1")
    assert retry.body == first.body
    assert retry.headers["idempotent-replayed"] == "true"
    with gateway.storage.transaction() as tx:
        assert tx.list_payment_links(SHOP.address)[1] == 1


def test_answers_survive_a_restart(tmp_path: Path, clock: Clock) -> None:
    from paycore_storage import SqlStorage

    url = f"sqlite:///{tmp_path / 'restart.sqlite3'}"
    before = build(SqlStorage(url), clock)
    first = Client(before, SHOP, SHOP_KEY).post("/invoice", invoice_body(), "k")
    before.close()
    after = build(SqlStorage(url), clock)
    try:
        shop = Client(after, Account.from_key(b"\x01" * 32), Account.from_key(b"\x05" * 32))
        retry = shop.post("/invoice", invoice_body(), "k")
        assert retry.body == first.body
        assert retry.headers["idempotent-replayed"] == "true"
        assert invoices_of(after, SHOP.address) == 1
    finally:
        after.close()


@pytest.mark.parametrize(
    "backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def test_twenty_concurrent_retries_make_one_invoice(
    backend: str, make_storage: Any, clock: Clock
) -> None:
    gateway = build(make_storage(backend), clock)
    try:
        shop = Client(gateway, SHOP, SHOP_KEY)
        requests = [shop.request("/invoice", invoice_body(), "order-7") for _ in range(20)]
        answers: list[Response] = []
        start = threading.Barrier(len(requests))

        def send(request: Request) -> None:
            start.wait(timeout=30)
            answers.append(handle(gateway, request))

        threads = [threading.Thread(target=send, args=(r,)) for r in requests]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert len(answers) == 20
        assert {a.status for a in answers} == {201}, [a.body for a in answers]
        assert len({a.body for a in answers}) == 1
        assert sum(a.headers.get("idempotent-replayed") == "true" for a in answers) == 19
        assert invoices_of(gateway, SHOP.address) == 1
    finally:
        gateway.close()


def test_every_creating_write_takes_a_key_and_documents_it() -> None:
    """A route that answers 201 makes something: a retry of it must be safe to send, so a
    new creating endpoint cannot be added without the key."""
    creating = [route for route in ROUTES if route.status == 201]
    assert {route.path for route in creating} >= {"/invoice", "/refund", "/link"}
    assert [route.path for route in creating if not route.idempotent] == []
    doc = document(ROUTES)
    for route in creating:
        operation = doc["paths"][route.path]["post"]
        assert "Idempotency-Key" in [p["name"] for p in operation["parameters"]]
        assert "409" in operation["responses"]
