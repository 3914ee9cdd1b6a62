"""A signed ``GET /invoice/{guid}`` on the SQL stores, where its nonce is spent and the
invoice read in one storage call (``SqlStorage.spend_nonce_then_read``: one statement on
PostgreSQL, one pooled connection on SQLite): the answer is the public read's, byte for
byte with its ETag; a replay is refused with the same text as ever and changes nothing;
an unknown guid is a 404 whose nonce stays spent; a due invoice is expired on the way."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from coincurve import PrivateKey
from sqlalchemy import event
from sqlalchemy.engine import URL

import paycore_storage.plugin
from paycore import Gateway, Settings
from paycore.api import Request, Response, handle, handle_inline
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


def _strict_gateway(database: str) -> Gateway:
    """A gateway on ``database`` in strict auth mode, with the SQL store's plugin."""
    settings = Settings(database_url=database, prices={ETH_1: "2000"}, auth_mode="strict")
    return Gateway(settings, entry_points=False, plugins=[paycore_storage.plugin])


def _registered_invoice(gateway: Gateway) -> str:
    """A session key registered for the owner, and an invoice it made (nonce 1): its URI."""
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
    return f"/invoice/{json.loads(created.body)['guid']}"


def _same_as_public(answer: Response | None, public: Response) -> None:
    assert answer is not None
    assert (answer.status, answer.body) == (200, public.body)
    assert answer.headers["etag"] == public.headers["etag"]


def _refused_as_replay(answer: Response) -> None:
    assert (answer.status, answer.body) == (
        401, b"session signature: this nonce was already accepted for this request (a replay)",
    )  # fmt: skip


def test_a_signed_read_on_sql_is_the_public_read_with_its_nonce_spent(gateway: Gateway) -> None:
    uri = _registered_invoice(gateway)
    public = handle(gateway, Request("GET", uri))
    _same_as_public(handle(gateway, _signed_get(uri, 2)), public)
    _refused_as_replay(handle(gateway, _signed_get(uri, 2)))
    unknown = "00000000-0000-4000-8000-00000000dead"
    missing = handle(gateway, _signed_get(f"/invoice/{unknown}", 3))
    assert (missing.status, missing.body) == (404, f"invoice {unknown} not found".encode())
    assert handle(gateway, _signed_get(f"/invoice/{unknown}", 3)).status == 401
    gateway.clock.now += 61  # type: ignore[attr-defined]
    expired = handle(gateway, _signed_get(uri, 4))
    assert expired.status == 200 and json.loads(expired.body)["status"] == "expired"
    assert handle(gateway, Request("GET", uri)).body == expired.body


# ``handle_inline`` on a signed read: made on the caller's thread (an event loop's) where
# the store spends all or nothing there (``has_inline_spend``: SQLite, with the store's own
# ``spend_nonce_then_read``), else None; every None leaves the nonce unspent, so the
# thread's ``handle`` then answers the same request as if no attempt had been made.


def _inline_here(gateway: Gateway, database: str) -> bool:
    return database.startswith("sqlite") and not isinstance(gateway._given, PlainStore)


def test_a_signed_read_is_made_inline_as_handle_makes_it(gateway: Gateway, database: str) -> None:
    uri = _registered_invoice(gateway)
    public = handle(gateway, Request("GET", uri))
    handle(gateway, _signed_get(uri, 2))  # the first spend checks its connection out
    answered = handle_inline(gateway, _signed_get(uri, 3))
    if not _inline_here(gateway, database):
        assert answered is None
        assert gateway.spends_inline is False
        assert handle(gateway, _signed_get(uri, 3)).status == 200  # nothing was spent
        return
    _same_as_public(answered, public)
    # A replay is refused by a thread (the refusal's reason is a second read), and the
    # inline attempt before it changed nothing.
    assert handle_inline(gateway, _signed_get(uri, 3)) is None
    _refused_as_replay(handle(gateway, _signed_get(uri, 3)))
    unknown = "00000000-0000-4000-8000-00000000dead"
    missing = handle_inline(gateway, _signed_get(f"/invoice/{unknown}", 4))
    assert missing is not None and missing.status == 404  # a 404 writes nothing: inline
    assert handle(gateway, _signed_get(f"/invoice/{unknown}", 4)).status == 401


def test_an_expiry_due_sends_the_signed_read_to_a_thread_with_its_nonce_unspent(
    gateway: Gateway, database: str
) -> None:
    uri = _registered_invoice(gateway)
    handle(gateway, _signed_get(uri, 2))
    gateway.clock.now += 61  # type: ignore[attr-defined]
    assert handle_inline(gateway, _signed_get(uri, 3)) is None
    expired = handle(gateway, _signed_get(uri, 3))  # the same nonce: it was rolled back
    assert expired.status == 200 and json.loads(expired.body)["status"] == "expired"
    owner = public_key_to_address(OWNER_KEY.public_key.format(compressed=False))
    with gateway.storage.transaction() as tx:
        events = tx.outbox_since(0, 10, owner)
    assert [e.type for e in events.events].count("invoice.expired") == 1
    if _inline_here(gateway, database):  # settled: inline again
        again = handle_inline(gateway, _signed_get(uri, 4))
        assert again is not None and again.body == expired.body


def test_a_writer_of_another_process_sends_the_signed_read_to_a_thread_at_once(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Another connection holding SQLite's write lock (as a worker process would) is not
    waited for on the loop: the attempt returns at once, with the busy timeout of the
    spending connection as it was, and the thread's spend of the same nonce then waits
    for that writer as any write does."""
    database = f"sqlite:///{tmp_path / 'other-writer.sqlite3'}"
    settings = Settings(database_url=database, prices={ETH_1: "2000"}, auth_mode="strict")
    gateway = Gateway(settings, entry_points=False, plugins=[paycore_storage.plugin], clock=Clock())
    request.addfinalizer(gateway.close)
    uri = _registered_invoice(gateway)
    handle(gateway, _signed_get(uri, 2))
    other = sqlite3.connect(database.removeprefix("sqlite:///"), isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        started = time.monotonic()
        assert handle_inline(gateway, _signed_get(uri, 3)) is None
        assert time.monotonic() - started < 1.0  # not the 30 s busy timeout
    finally:
        other.execute("ROLLBACK")
        other.close()
    store = gateway._given
    assert isinstance(store, SqlStorage)
    held: Any = store._writers[next(iter(store._writers))][0].dbapi_connection
    assert held.execute("PRAGMA busy_timeout").fetchone() == (30_000,)
    assert handle(gateway, _signed_get(uri, 3)).status == 200  # unspent until now
    # This process's own writer lock, held by a thread, is not waited for either.
    assert store._shared_connection is not None
    with store._shared_connection:
        assert handle_inline(gateway, _signed_get(uri, 4)) is None
    assert handle_inline(gateway, _signed_get(uri, 4)) is not None


# A signed ``POST /invoice`` made inline: its one transaction (the nonce, the invoice) is
# begun on the loop only where nothing is waited for, and commits whole or not at all.

FIELDS = {
    "value": "10", "chainId": 1, "description": "inline write", "acceptedTokens": [ETH_1],
    "address": "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", "deadlineSecs": 60,
}  # fmt: skip


def _invoices(gateway: Gateway) -> int:
    owner = public_key_to_address(OWNER_KEY.public_key.format(compressed=False))
    with gateway.storage.transaction() as tx:
        return tx.count_invoices(owner=owner)


def test_a_signed_write_is_made_inline_whole_or_not_at_all(gateway: Gateway, database: str) -> None:
    _registered_invoice(gateway)
    body = json.dumps(FIELDS).encode()
    created = handle_inline(gateway, _signed_post("/invoice", body, 2))
    if not _inline_here(gateway, database):
        assert created is None and _invoices(gateway) == 1
        assert handle(gateway, _signed_post("/invoice", body, 2)).status == 201
        return
    assert created is not None and created.status == 201, created
    assert json.loads(created.body)["description"] == "inline write"
    assert _invoices(gateway) == 2
    # A replay is refused inline: the refusal's read joins the transaction that spent.
    replayed = handle_inline(gateway, _signed_post("/invoice", body, 2))
    assert replayed is not None
    _refused_as_replay(replayed)
    # A bad body: rolled back with its nonce; the nonce is spent again on its own, which
    # waits, so the thread answers -- as if the loop had never tried.
    bad = json.dumps({**FIELDS, "value": "-1"}).encode()
    assert handle_inline(gateway, _signed_post("/invoice", bad, 3)) is None
    refused = handle(gateway, _signed_post("/invoice", bad, 3))
    assert refused.status == 400
    _refused_as_replay(handle(gateway, _signed_post("/invoice", bad, 3)))  # spent once
    assert _invoices(gateway) == 2


class Deriver:
    """A chain backend's one call an invoice without an address makes, recording where."""

    def __init__(self) -> None:
        self.calls = 0

    def deposit_address(self, owner: str, chain_id: int, index: int) -> str:
        self.calls += 1
        return "0x" + f"{index + 1:040x}"


def test_an_address_to_derive_sends_the_signed_write_to_a_thread(tmp_path: Path) -> None:
    """A backend may ask its node for an address: never on the loop. The attempt rolls
    back before the call, and the thread's answer is the one the request gets."""
    database = f"sqlite:///{tmp_path / 'derive.sqlite3'}"
    gateway = _strict_gateway(database)
    try:
        deriver = Deriver()
        gateway.chains[1] = deriver  # type: ignore[assignment]
        _registered_invoice(gateway)
        fields = {k: v for k, v in FIELDS.items() if k != "address"}
        request = _signed_post("/invoice", json.dumps(fields).encode(), 2)
        assert handle_inline(gateway, request) is None
        assert deriver.calls == 0 and _invoices(gateway) == 1
        created = handle(gateway, request)
        assert created.status == 201 and deriver.calls == 1
        assert json.loads(created.body)["address"] == "0x" + f"{1:040x}"
    finally:
        gateway.close()


def test_a_writer_of_another_process_sends_the_signed_write_to_a_thread_at_once(
    tmp_path: Path,
) -> None:
    database = f"sqlite:///{tmp_path / 'write-other.sqlite3'}"
    gateway = _strict_gateway(database)
    try:
        _registered_invoice(gateway)
        request = _signed_post("/invoice", json.dumps(FIELDS).encode(), 2)
        other = sqlite3.connect(database.removeprefix("sqlite:///"), isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        try:
            started = time.monotonic()
            assert handle_inline(gateway, request) is None
            assert time.monotonic() - started < 1.0
        finally:
            other.execute("ROLLBACK")
            other.close()
        assert handle(gateway, request).status == 201 and _invoices(gateway) == 2
    finally:
        gateway.close()


@pytest.mark.parametrize(("held", "wait"), [(0.001, 2.0), (0.2, 0.01)])
def test_a_signed_write_waits_on_the_loop_for_this_process_writer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, held: float, wait: float
) -> None:
    """A worker thread of this process writing (here: a transaction held open): the
    request waits for the writer on the loop, which goes on serving meanwhile, and is made
    there once the writer is free; held past the wait, it goes to a thread with its nonce
    unspent. (The wait is set wide of the hold either way: a loaded machine's thread
    switches are not what is tested.)"""
    import asyncio
    import threading

    import paycore.api
    from paycore.api import handle_inline_async

    monkeypatch.setattr(paycore.api, "_TURN_WAIT", wait)

    database = f"sqlite:///{tmp_path / 'turn.sqlite3'}"
    gateway = _strict_gateway(database)
    try:
        _registered_invoice(gateway)
        request = _signed_post("/invoice", json.dumps(FIELDS).encode(), 2)
        entered, release = threading.Event(), threading.Event()

        def writer() -> None:
            with gateway.storage.transaction():
                entered.set()
                release.wait(5)

        async def attempt() -> tuple[Response | None, int, bool]:
            ticks = 0

            async def ticking() -> None:  # the loop serves other work while it waits
                nonlocal ticks
                while True:
                    await asyncio.sleep(0.0001)
                    ticks += 1

            ticker = asyncio.create_task(ticking())
            asyncio.get_running_loop().call_later(held, release.set)
            free_before = gateway.inline_turn_free()
            answered = await handle_inline_async(gateway, request)
            ticker.cancel()
            return answered, ticks, free_before

        thread = threading.Thread(target=writer)
        thread.start()
        assert entered.wait(5)
        answered, ticks, free_before = asyncio.run(attempt())
        release.set()
        thread.join(5)
        assert free_before is False and ticks > 0
        if held < wait:  # freed within the wait: made on the loop
            assert answered is not None and answered.status == 201
            _refused_as_replay(handle(gateway, request))
        else:
            assert answered is None and _invoices(gateway) == 1
            assert handle(gateway, request).status == 201
        assert _invoices(gateway) == 2
    finally:
        gateway.close()


def test_inline_writes_off_sends_every_signed_request_to_a_thread(tmp_path: Path) -> None:
    """``inline_writes=False`` (a disk whose fsync is slow): nothing signed is tried on the
    loop, and nothing was spent by asking."""
    database = f"sqlite:///{tmp_path / 'off.sqlite3'}"
    settings = Settings.from_env({
        "PAYCORE_DATABASE_URL": database, "PAYCORE_PRICES": json.dumps({ETH_1: "2000"}),
        "PAYCORE_AUTH_MODE": "strict", "PAYCORE_INLINE_WRITES": "false",
    })  # fmt: skip
    assert settings.inline_writes is False  # as docs/operations.md spells it
    gateway = Gateway(settings, entry_points=False, plugins=[paycore_storage.plugin])
    try:
        uri = _registered_invoice(gateway)
        handle(gateway, _signed_get(uri, 2))
        assert gateway.spends_inline is False
        assert handle_inline(gateway, _signed_get(uri, 3)) is None
        body = json.dumps(FIELDS).encode()
        assert handle_inline(gateway, _signed_post("/invoice", body, 4)) is None
        assert handle(gateway, _signed_get(uri, 3)).status == 200
        assert handle(gateway, _signed_post("/invoice", body, 4)).status == 201
    finally:
        gateway.close()


@pytest.mark.postgres
def test_a_signed_read_on_postgresql_takes_the_held_connection_when_it_is_free(
    postgres_schema: Any,
) -> None:
    """A sync host's signed read is one autocommitted statement; once the process holds a
    connection for its spends, the read takes that one when no other call has it (no pool
    checkout, no switch to autocommit and back), and a pooled one when another call does.
    Either way the answer is the public read's."""
    gateway = _strict_gateway(postgres_schema().render_as_string(hide_password=False))
    try:
        uri = _registered_invoice(gateway)
        public = handle(gateway, Request("GET", uri))
        storage: Any = gateway.storage
        checkouts: list[object] = []
        event.listen(storage.engine.pool, "checkout", lambda *_: checkouts.append(1))
        _same_as_public(handle(gateway, _signed_get(uri, 2)), public)
        _same_as_public(handle(gateway, _signed_get(uri, 3)), public)
        assert checkouts == [], "the held connection (the public read took it), free"
        assert storage._held_lock.acquire(blocking=False)  # another call has it now
        try:
            _same_as_public(handle(gateway, _signed_get(uri, 4)), public)
        finally:
            storage._held_lock.release()
        assert len(checkouts) == 1, "held elsewhere: a pooled connection"
        _refused_as_replay(handle(gateway, _signed_get(uri, 4)))
        before = len(checkouts)  # a refusal reads why in a transaction of its own
        _same_as_public(handle(gateway, _signed_get(uri, 5)), public)
        assert len(checkouts) == before, "free again: the held one"
    finally:
        gateway.close()


@pytest.mark.postgres
def test_a_public_read_on_postgresql_takes_the_held_connection_when_it_is_free(
    postgres_schema: Any,
) -> None:
    """The checkout page's poll under a sync host is one autocommitted statement too: on
    the held connection when no other call has it, on a pooled one when another does, and
    the same answer, ETag included, either way."""
    gateway = _strict_gateway(postgres_schema().render_as_string(hide_password=False))
    try:
        uri = _registered_invoice(gateway)
        first = handle(gateway, Request("GET", uri))  # the first use: the held connection
        storage: Any = gateway.storage
        checkouts: list[object] = []
        event.listen(storage.engine.pool, "checkout", lambda *_: checkouts.append(1))
        _same_as_public(handle(gateway, Request("GET", uri)), first)
        assert checkouts == [], "the held connection, free: no checkout"
        assert storage._held_lock.acquire(blocking=False)  # another call has it now
        try:
            _same_as_public(handle(gateway, Request("GET", uri)), first)
        finally:
            storage._held_lock.release()
        assert len(checkouts) == 1, "held elsewhere: a pooled connection"
        _same_as_public(handle(gateway, Request("GET", uri)), first)
        assert len(checkouts) == 1, "free again: the held one"
    finally:
        gateway.close()
