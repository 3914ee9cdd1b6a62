"""One storage transaction per signed request (docs/decisions.md, "One transaction per
request"): the spent nonce and the request's work commit together, a refused request still
spends its nonce, notifiers hear of a change only once it is committed, and a block whose
error was swallowed cannot commit half of itself.

The commit counts come from SQLAlchemy's ``commit`` event on a real SQLite file and a real
PostgreSQL, so they count what the database was asked to make durable.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from eth_account import Account
from eth_account.messages import encode_defunct
from eth_account.signers.local import LocalAccount
from sqlalchemy import event

from paycore import Gateway, Settings
from paycore.api import Request, Response, handle
from paycore.domain.records import Json, SessionKey
from paycore.notify import BaseNotifier
from paycore.storage.memory import MemoryStorage
from paycore.storage.request_unit import RequestUnits, TaintedUnit
from paycore_storage import SqlStorage

NOW = 1_700_000_000
ETH_1 = "1:0x0000000000000000000000000000000000000000"
OWNER: LocalAccount = Account.from_key(b"\x01" * 32)
KEY: LocalAccount = Account.from_key(b"\x02" * 32)
BODY = json.dumps(
    {
        "value": "10",
        "chainId": 1,
        "description": "one transaction",
        "acceptedTokens": [ETH_1],
        "address": "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
        "deadlineSecs": 60,
    }
).encode()
BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


def sign(acct: LocalAccount, text: str) -> str:
    return "0x" + bytes(acct.sign_message(encode_defunct(text=text)).signature).hex()


class Clock:
    def __init__(self) -> None:
        self.now = float(NOW)

    def __call__(self) -> float:
        return self.now


class Client:
    """Signs like a client: the URI of a GET, the body of a POST, one nonce each."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.nonce = 0

    def request(self, method: str, path: str, body: bytes = b"") -> Request:
        self.nonce += 1
        uri = "/paycore" + path
        signed = uri.encode() if method == "GET" else body
        digest = hashlib.sha256(signed).hexdigest()
        headers = {
            "x-session-nonce": str(self.nonce),
            "x-session-signature": sign(KEY, f"sess:{self.nonce}:{digest}"),
            "content-type": "application/json",
        }
        return Request(method=method, path=path, headers=headers, body=body, raw_uri=uri)

    def send(self, request: Request) -> Response:
        return handle(self.gateway, request)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture(params=BACKENDS)
def gateway(request: pytest.FixtureRequest, make_storage: Any, clock: Clock) -> Iterator[Gateway]:
    store = make_storage(request.param)
    settings = Settings(auth_mode="strict", prices={ETH_1: "2000"})
    found = Gateway(settings, storage=store, entry_points=False, clock=clock)
    public_key = "0x04" + KEY._key_obj.public_key.to_bytes().hex()
    registration = {
        "ownerAddress": OWNER.address,
        "publicKey": public_key,
        "signature": sign(OWNER, public_key),
    }
    answer = handle(
        found,
        Request(
            method="POST", path="/auth/register-pubkey", body=json.dumps(registration).encode()
        ),
    )
    assert answer.status == 200, answer.body
    yield found
    found.close()


def commits_of(gateway: Gateway) -> list[str]:
    """What the gateway's SQL storage does from now on, as it happens: each connection taken
    from the pool ("checkout": one per transaction, including a nonce spent on its own in
    autocommit mode) and each commit SQLAlchemy makes."""
    store = gateway.storage
    assert isinstance(store, SqlStorage)
    seen: list[str] = []
    event.listen(store.engine, "commit", lambda _connection: seen.append("commit"))
    event.listen(store.engine.pool, "checkout", lambda *_: seen.append("checkout"))
    return seen


def test_a_signed_create_commits_once_and_a_signed_read_writes_only_its_nonce(
    gateway: Gateway,
) -> None:
    client = Client(gateway)
    commits = commits_of(gateway)
    # On a SQLite file every write of the process runs on the one connection it holds
    # (the registration's transaction checked it out): no checkout at all from now on.
    store = gateway.storage
    assert isinstance(store, SqlStorage)
    checkout = [] if store.url.get_backend_name() == "sqlite" else ["checkout"]
    created = client.send(client.request("POST", "/invoice", BODY))
    assert created.status == 201, created.body
    assert commits == [*checkout, "commit"]
    guid = json.loads(created.body)["guid"]
    request = client.request("GET", f"/invoice/{guid}")
    read = client.send(request)
    assert read.status == 200, read.body
    assert json.loads(read.body)["guid"] == guid
    # The read is no transaction of SQLAlchemy's (issue 30): its nonce is spent and the
    # invoice read on one pooled connection (``Storage.spend_nonce_then_read``: one
    # autocommitted statement on PostgreSQL; BEGIN IMMEDIATE to COMMIT, then the read, on
    # SQLite, on its held connection).
    assert commits == [*checkout, "commit", *checkout]
    replay = client.send(request)  # and the nonce is spent for good
    assert replay.status == 401 and b"already accepted" in replay.body


def test_the_nonce_and_the_invoice_commit_together(gateway: Gateway) -> None:
    client = Client(gateway)
    request = client.request("POST", "/invoice", BODY)
    created = client.send(request)
    assert created.status == 201
    with gateway.storage.transaction() as tx:
        key = tx.get_session_key(KEY.address)
        assert tx.get_invoice(json.loads(created.body)["guid"]) is not None
    assert key is not None and key.last_seen_nonce == client.nonce
    replay = client.send(request)
    assert (replay.status, replay.body) == (
        401,
        b"session signature: this nonce was already accepted for this request (a replay)",
    )


def test_a_refused_request_stays_spent_and_leaves_no_work(gateway: Gateway) -> None:
    """The handler's error rolls the one transaction back, nonce included; the nonce is then
    spent on its own, so the captured request cannot pass later, once the state changed."""
    client = Client(gateway)
    bad = json.loads(BODY)
    bad["value"] = "-1"
    request = client.request("POST", "/invoice", json.dumps(bad).encode())
    refused = client.send(request)
    assert refused.status == 400, refused.body
    replay = client.send(request)
    assert replay.status == 401
    assert b"already accepted" in replay.body
    with gateway.storage.transaction() as tx:
        assert tx.list_invoices(owner=OWNER.address) == ([], 0)


class CommittedView(BaseNotifier):
    """Reads the SQLite file through a connection of its own when told of a change: it sees
    only what is committed, so it tells whether the notice came after the commit."""

    name = "committed-view"

    def __init__(self, path: Path) -> None:
        self.path = path
        self.seen: list[tuple[str, str | None]] = []

    def invoice_changed(self, owner: str, payload: Json) -> None:
        with sqlite3.connect(self.path) as connection:
            row = connection.execute(
                "SELECT status FROM paycore_invoices WHERE guid = ?", (payload["guid"],)
            ).fetchone()
        self.seen.append((payload["status"], None if row is None else row[0]))


def test_notifiers_hear_of_a_change_made_inside_the_request_after_it_commits(
    tmp_path: Path, clock: Clock
) -> None:
    path = tmp_path / "paycore.sqlite3"
    store = SqlStorage(f"sqlite:///{path}")
    gateway = Gateway(
        Settings(auth_mode="strict", prices={ETH_1: "2000"}),
        storage=store,
        entry_points=False,
        clock=clock,
    )
    view = CommittedView(path)
    gateway.add_notifier(view)
    public_key = "0x04" + KEY._key_obj.public_key.to_bytes().hex()
    registration = {
        "ownerAddress": OWNER.address,
        "publicKey": public_key,
        "signature": sign(OWNER, public_key),
    }
    handle(
        gateway,
        Request(
            method="POST", path="/auth/register-pubkey", body=json.dumps(registration).encode()
        ),
    )
    client = Client(gateway)
    created = client.send(client.request("POST", "/invoice", BODY))
    guid = json.loads(created.body)["guid"]
    clock.now += 3600  # past the deadline: the signed read expires it (lazy expiry)
    read = client.send(client.request("GET", f"/invoice/{guid}"))
    assert json.loads(read.body)["status"] == "expired"
    assert view.seen == [("expired", "expired")]
    gateway.close()


# -- the unit itself, on the in-memory store ------------------------------------------------

KEY_RECORD = SessionKey(
    address=KEY.address,
    public_key="0x04" + "ab" * 64,
    owner=OWNER.address,
    registered_at=NOW,
    expires_at=NOW + 3600,
)


def test_a_caught_error_inside_a_joined_block_rolls_the_whole_unit_back() -> None:
    units = RequestUnits(MemoryStorage())
    told: list[str] = []
    with pytest.raises(TaintedUnit), units.unit():
        with units.transaction() as tx:
            tx.put_session_key(KEY_RECORD)
        units.after_commit(lambda: told.append("after"))
        try:
            with units.transaction() as tx:
                tx.allocate_wallet_index(OWNER.address, 1)
                raise ValueError("refused half-way")
        except ValueError:
            pass
    with units.transaction() as tx:
        assert tx.get_session_key(KEY.address) is None
        assert tx.allocate_wallet_index(OWNER.address, 1) == 0
    assert told == []


def test_a_unit_commits_once_and_then_runs_what_waited_for_it() -> None:
    units = RequestUnits(MemoryStorage())
    told: list[int] = []
    assert units.after_commit(lambda: told.append(0)) is False  # no unit open
    with units.unit():
        with units.transaction() as tx:
            tx.put_session_key(KEY_RECORD)
        spent = units.spend_nonce(KEY.address, 7, "ab" * 32, window=10, now=NOW)
        assert spent is not None and spent.last_seen_nonce == 7
        assert units.after_commit(lambda: told.append(1)) is True
        assert told == []
    assert told == [1]
    with units.transaction() as tx:
        stored = tx.get_session_key(KEY.address)
    assert stored is not None and stored.last_seen_nonce == 7
