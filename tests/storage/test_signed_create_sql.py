"""A signed ``POST /invoice`` on PostgreSQL made as one statement -- on the event loop
(``paycore.api.handle_inline_async``; ``SqlStorage.spend_nonce_then_insert_invoice_async``)
or on a sync host's thread (``paycore.api.handle_streamed``;
``SqlStorage.spend_nonce_then_insert_invoice``): the core's own rules run with the request's
writes recorded, then the nonce's spend, the invoice and its owner's count commit together
in one round trip, guarded on the session key this process last saw. Checked on a real
PostgreSQL in both nonce modes and both ways: the invoice and its count are what the
ordinary path stores; a replay, a changed key, a request that needs another storage call or
is refused go to the ordinary path with nothing written, where it answers them; the storage
call alone spends, inserts and counts all or nothing; and a request the loop tried is not
tried again on its thread."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Iterator
from typing import Any

import attrs
import pytest
from anyio import to_thread
from coincurve import PrivateKey
from sqlalchemy.engine import URL

import paycore_storage.plugin
from paycore import Gateway, Settings, api
from paycore.api import Request, Response, handle, handle_inline_async
from paycore.auth.signatures import personal_message_hash, public_key_to_address
from paycore.domain.records import SessionKey
from paycore.storage.invoice_read import WouldBlock
from paycore_storage import SqlStorage

pytestmark = pytest.mark.postgres

ETH_1 = "1:0x0000000000000000000000000000000000000000"
NOW = 1_700_000_000.0
OWNER_KEY = PrivateKey(hashlib.sha256(b"signed-create-owner").digest())
OWNER = public_key_to_address(OWNER_KEY.public_key.format(compressed=False))
SESSION_KEY = PrivateKey(hashlib.sha256(b"signed-create-session").digest())
SESSION = public_key_to_address(SESSION_KEY.public_key.format(compressed=False))
OTHER_KEY = (
    "0x" + PrivateKey(hashlib.sha256(b"other").digest()).public_key.format(compressed=False).hex()
)
FIELDS = {
    "value": "10", "chainId": 1, "description": "made on the loop", "acceptedTokens": [ETH_1],
    "address": "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", "deadlineSecs": 60,
}  # fmt: skip


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now


def _sign(key: PrivateKey, message: str) -> str:
    signature = key.sign_recoverable(personal_message_hash(message), hasher=None)
    return "0x" + signature[:64].hex() + f"{signature[64] + 27:02x}"


def _post(nonce: int, fields: dict[str, Any] | None = None, **extra: str) -> Request:
    body = json.dumps(FIELDS if fields is None else fields).encode()
    digest = hashlib.sha256(body).hexdigest()
    headers = {
        "x-session-nonce": str(nonce),
        "x-session-signature": _sign(SESSION_KEY, f"sess:{nonce}:{digest}"),
        "content-type": "application/json",
        **extra,
    }  # fmt: skip
    return Request("POST", "/invoice", headers=headers, body=body)


@pytest.fixture(params=["strict", "window"])
def gateway(request: pytest.FixtureRequest, postgres_schema: Any) -> Iterator[Gateway]:
    url: URL = postgres_schema()
    settings = Settings(
        database_url=url.render_as_string(hide_password=False), prices={ETH_1: "2000"},
        auth_mode="strict", nonce_mode=request.param,
    )  # fmt: skip
    gw = Gateway(settings, entry_points=False, plugins=[paycore_storage.plugin], clock=Clock())
    public_key = "0x" + SESSION_KEY.public_key.format(compressed=False).hex()
    registration = {
        "ownerAddress": OWNER, "publicKey": public_key, "signature": _sign(OWNER_KEY, public_key),
    }  # fmt: skip
    answer = handle(
        gw,
        Request("POST", "/auth/register-pubkey", body=json.dumps(registration).encode(),
                headers={"content-type": "application/json"}),
    )  # fmt: skip
    assert answer.status == 200, answer.body
    yield gw
    gw.close()


def _loop(gateway: Gateway, request: Request) -> Response | None:
    return asyncio.run(handle_inline_async(gateway, request))


def _thread(gateway: Gateway, request: Request) -> Response | None:
    """The sync host's attempt alone (what ``handle_streamed`` tries before dispatching)."""
    return api._signed_create(gateway, request)


@pytest.fixture(params=["loop", "thread"])
def at_once(request: pytest.FixtureRequest) -> Any:
    """The one-statement creation as an async host makes it, or as a sync one does: the
    answer, or None when the request must go the ordinary way (nothing written)."""
    return _loop if request.param == "loop" else _thread


def _count(gateway: Gateway) -> int:
    with gateway.storage.transaction() as tx:
        return tx.count_invoices(owner=OWNER)


def _key(gateway: Gateway) -> SessionKey:
    with gateway.storage.transaction() as tx:
        found = tx.get_session_key(SESSION)
    assert found is not None
    return found


def _stored(gateway: Gateway, answer: Response) -> Any:
    with gateway.storage.transaction() as tx:
        return tx.get_invoice(json.loads(answer.body)["guid"])


def test_a_creation_is_one_statement_once_the_key_is_known(gateway: Gateway, at_once: Any) -> None:
    """The first creation of a key the process has not seen goes the ordinary way; from
    then on one statement makes it: the same answer and the same stored invoice as the
    ordinary path's, the owner's count moved by one, the nonce spent."""
    assert gateway.creates_async and gateway.creates_at_once
    assert at_once(gateway, _post(1)) is None  # the key unknown yet: nothing written
    assert _count(gateway) == 0
    by_thread = api.dispatch(gateway, api._shared_router(), _post(1))
    assert by_thread.status == 201 and _count(gateway) == 1
    made = at_once(gateway, _post(2))
    assert made is not None and made.status == 201, made and made.body
    assert _count(gateway) == 2
    assert _key(gateway).last_seen_nonce == 2
    ours, theirs = json.loads(made.body), json.loads(by_thread.body)
    assert ours.keys() == theirs.keys()
    differ = {k for k in ours if ours[k] != theirs[k]}
    assert differ <= {"guid", "paymentUrl"}, differ
    stored, reference = _stored(gateway, made), _stored(gateway, by_thread)
    assert stored is not None and stored.owner == OWNER
    assert attrs.evolve(stored, guid=reference.guid, checkout_url=reference.checkout_url) == (
        reference
    )
    # The answer reads back as the stored invoice does.
    read = handle(gateway, Request("GET", f"/invoice/{ours['guid']}"))
    assert {k: v for k, v in json.loads(read.body).items() if k in ours} == ours


def test_a_replay_goes_the_ordinary_way_with_nothing_written(
    gateway: Gateway, at_once: Any
) -> None:
    assert handle(gateway, _post(1)).status == 201
    assert at_once(gateway, _post(2)) is not None
    assert at_once(gateway, _post(2)) is None  # refused by the statement
    assert _count(gateway) == 2
    refused = handle(gateway, _post(2))
    assert refused.status == 401 and b"nonce" in refused.body
    assert _count(gateway) == 2


@pytest.mark.parametrize("change", ["encryption", "owner"])
def test_a_key_changed_since_it_was_seen_writes_nothing(
    gateway: Gateway, change: str, at_once: Any
) -> None:
    """The statement is guarded on the key the loop's rules ran with: a key whose
    encryption key (or owner) changed meanwhile spends nothing and creates nothing, and
    the thread then answers with the key as it is (encrypted, here) on the same nonce."""
    assert handle(gateway, _post(1)).status == 201
    key = _key(gateway)
    changed = (
        attrs.evolve(key, encryption_public_key=OTHER_KEY)
        if change == "encryption"
        else attrs.evolve(key, owner="0x" + "44" * 20)
    )
    with gateway.storage.transaction() as tx:
        tx.put_session_key(changed)
    assert at_once(gateway, _post(2)) is None
    assert _count(gateway) == 1 and _key(gateway).last_seen_nonce == 1
    if change == "encryption":
        answer = handle(gateway, _post(2))
        assert answer.status == 201 and answer.headers.get("content-type") != "application/json"
        assert _count(gateway) == 2 and _key(gateway).last_seen_nonce == 2
        # The thread's spend taught the process the key as it is now.
        assert at_once(gateway, _post(3)) is not None and _count(gateway) == 3


@pytest.mark.parametrize(
    "request_of",
    [
        pytest.param(
            lambda n: _post(n, {k: v for k, v in FIELDS.items() if k != "address"}),
            id="derived-address",
        ),
        pytest.param(lambda n: _post(n, **{"idempotency-key": "k-1"}), id="idempotency-key"),
        pytest.param(lambda n: _post(n, {**FIELDS, "value": "-1"}), id="refused"),
    ],
)
def test_what_needs_more_than_the_recorded_writes_goes_the_ordinary_way(
    gateway: Gateway, request_of: Any, at_once: Any
) -> None:
    """A derived address (an index to allocate), an idempotency key (its stored answer)
    or a refusal: nothing written in one statement, the nonce unspent for the ordinary
    path."""
    assert handle(gateway, _post(1)).status == 201
    assert at_once(gateway, request_of(2)) is None
    assert _count(gateway) == 1 and _key(gateway).last_seen_nonce == 1


def _invoice_of(gateway: Gateway, nonce: int) -> Any:
    """An invoice as the core makes one for the owner (not stored)."""
    from paycore.domain.invoices import CreateInvoice, parse_new_invoice
    from paycore.domain.reading import read

    request = read(CreateInvoice, FIELDS)
    return parse_new_invoice(gateway.settings, request, OWNER, int(NOW) + nonce, None)


@pytest.mark.parametrize("way", ["async", "sync"])
def test_the_statement_spends_inserts_and_counts_all_or_nothing(gateway: Gateway, way: str) -> None:
    """The storage call alone, awaited or not: a spend on the expected key creates and
    counts; a replay, a key other than expected, or a taken guid writes nothing at all."""
    store = gateway._given
    assert isinstance(store, SqlStorage)
    strict = gateway.settings.nonce_mode == "strict"
    key = _key(gateway)

    async def create(nonce: int, expect: SessionKey, invoice: Any) -> SessionKey | None:
        terms: dict[str, Any] = {
            "window": 100, "strict": strict, "now": int(NOW), "expect": expect,
            "invoice": invoice,
        }  # fmt: skip
        if way == "sync":
            return store.spend_nonce_then_insert_invoice(SESSION, nonce, f"{nonce:064x}", **terms)
        return await store.spend_nonce_then_insert_invoice_async(
            SESSION, nonce, f"{nonce:064x}", **terms
        )

    first = _invoice_of(gateway, 1)
    spent = asyncio.run(create(5, key, first))
    assert spent is not None and spent.owner == OWNER and spent.last_seen_nonce == 5
    assert _count(gateway) == 1
    with gateway.storage.transaction() as tx:
        assert tx.get_invoice(first.guid) == first
    second = _invoice_of(gateway, 2)
    assert asyncio.run(create(5, key, second)) is None  # a replay
    assert asyncio.run(create(6, attrs.evolve(key, owner="0x" + "55" * 20), second)) is None
    assert (
        asyncio.run(create(6, attrs.evolve(key, encryption_public_key=OTHER_KEY), second)) is None
    )
    with pytest.raises(Exception) as failed:  # the guid taken: rolled back whole
        asyncio.run(create(6, key, attrs.evolve(second, guid=first.guid)))
    assert not isinstance(failed.value, WouldBlock)
    assert _count(gateway) == 1 and _key(gateway).last_seen_nonce == 5
    with gateway.storage.transaction() as tx:
        assert tx.get_invoice(second.guid) is None
    assert asyncio.run(create(6, key, second)) is not None  # 6 was never spent
    assert _count(gateway) == 2


def test_a_sync_host_creates_in_one_statement_and_a_loop_tried_request_is_not_retried(
    gateway: Gateway,
) -> None:
    """``handle_streamed`` (every sync host's call) makes a known key's creation in one
    statement; a request an event loop already tried (here: one with an
    ``Idempotency-Key``, whose stored answer is another write) is answered on its thread
    without a second try, in the context anyio's and Flask's ASGI front's threads run in."""
    store = gateway._given
    assert isinstance(store, SqlStorage)
    made: list[int] = []
    one_call = store.spend_nonce_then_insert_invoice

    def counted(*args: Any, **kwargs: Any) -> SessionKey | None:
        made.append(kwargs["nonce"])
        return one_call(*args, **kwargs)

    store.spend_nonce_then_insert_invoice = counted  # type: ignore[method-assign]
    assert handle(gateway, _post(1)).status == 201  # the key unknown: no statement tried
    second = handle(gateway, _post(2))
    assert second.status == 201 and made == [2] and _count(gateway) == 2
    tries: list[int] = []
    recording = gateway.recording

    def recorded(*args: Any, **kwargs: Any) -> Any:
        tries.append(1)
        return recording(*args, **kwargs)

    gateway.recording = recorded  # type: ignore[method-assign]
    derived = _post(3, **{"idempotency-key": "k-3"})

    async def loop_then_thread() -> Response:
        assert await handle_inline_async(gateway, derived) is None
        return await to_thread.run_sync(handle, gateway, derived)

    answer = asyncio.run(loop_then_thread())
    assert answer.status == 201, answer.body
    assert tries == [1] and made == [2] and _count(gateway) == 3
    # Outside a loop's context the thread tries again (here: nothing to record either).
    assert handle(gateway, _post(4, {**FIELDS, "value": "-1"})).status == 400
    assert tries == [1, 1]


def test_a_flask_app_under_its_own_wsgi_server_creates_in_one_statement(
    gateway: Gateway,
) -> None:
    """The deployment README shows for Flask -- the extension in the shop's own app, served
    by the shop's WSGI server -- makes a known key's creation in one statement: the
    answer is the ordinary one, the invoice is stored and counted, and a replay of it is
    refused with nothing more written."""
    from flask import Flask

    from paycore_flask import PayCore

    store = gateway._given
    assert isinstance(store, SqlStorage)
    made: list[int] = []
    one_call = store.spend_nonce_then_insert_invoice

    def counted(*args: Any, **kwargs: Any) -> SessionKey | None:
        made.append(kwargs["nonce"])
        return one_call(*args, **kwargs)

    store.spend_nonce_then_insert_invoice = counted  # type: ignore[method-assign]
    app = Flask("shop")
    PayCore(app, gateway=gateway, prefix="/paycore")
    client = app.test_client()

    def post(nonce: int) -> Any:
        sent = _post(nonce)
        return client.post("/paycore/invoice", data=sent.body, headers=dict(sent.headers))

    assert post(1).status_code == 201 and made == []  # the key not seen yet
    second = post(2)
    assert second.status_code == 201, second.data
    assert made == [2] and _count(gateway) == 2
    stored = _stored(gateway, Response(201, second.data))
    assert stored is not None and stored.owner == OWNER and stored.description == "made on the loop"
    replay = post(2)
    assert replay.status_code == 401 and made == [2, 2] and _count(gateway) == 2
