"""Litestar on PostgreSQL answers the checkout page's poll (an unsigned ``GET
/invoice/{guid}``) on the event loop: the read awaited there
(``paycore.api.handle_inline_async``), no worker thread -- with the very status, headers
and body the thread's path gives, and the thread still answering what needs a write (an
expiry due) or a session. On a SQLite file signed reads and invoice creations are answered
on the loop too."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from litestar import Litestar
from litestar.testing import TestClient
from sqlalchemy.engine import URL

import paycore.api
import paycore_litestar.direct as direct
import paycore_litestar.handler as handler
import paycore_storage.plugin
from paycore import Gateway, Settings
from paycore.domain.records import Status
from paycore.errors import StorageUnavailable
from paycore.storage.invoice_read import WouldBlock
from paycore.testing.client import PaycoreClient
from paycore_litestar import PayCoreConfig, PayCorePlugin

ETH_1 = "1:0x0000000000000000000000000000000000000000"
OWNER = "0x" + "33" * 20
UNKNOWN = "00000000-0000-4000-8000-00000000dead"


class Clock:
    now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def gateway(postgres_schema: Any, clock: Clock) -> Iterator[Gateway]:
    url: URL = postgres_schema()
    settings = Settings(
        database_url=url.render_as_string(hide_password=False),
        prices={ETH_1: "2000"},
        auth_mode="soft",
    )
    gw = Gateway(settings, entry_points=False, plugins=[paycore_storage.plugin], clock=clock)
    yield gw
    gw.close()


@pytest.fixture
def threads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the calls the adapter sent to a worker thread (from its handlers, or
    from the middleware that answers without them: ``paycore_litestar.direct``)."""
    calls: list[str] = []
    original = handler.to_thread.run_sync

    async def counted(fn: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(getattr(fn, "__name__", ""))
        return await original(fn, *args, **kwargs)

    for module in (handler, direct):
        monkeypatch.setattr(module, "to_thread", attrs.make_class("T", [])())
        module.to_thread.run_sync = counted  # type: ignore[attr-defined]
    return calls


def _invoice(gateway: Gateway) -> str:
    fields = {
        "value": "10", "chainId": 1, "description": "poll", "acceptedTokens": [ETH_1],
        "address": "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", "deadlineSecs": 60,
    }  # fmt: skip
    return gateway.create_invoice(OWNER, fields).guid


def _answer(client: TestClient[Litestar], path: str, **headers: str) -> tuple[Any, ...]:
    got = client.get(path, headers=headers)
    kept = {k: v for k, v in got.headers.items() if k not in ("date", "server")}
    return got.status_code, got.content, kept


def test_the_poll_on_postgresql_is_answered_on_the_loop_as_the_thread_answers_it(
    gateway: Gateway, clock: Clock, threads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    guid = _invoice(gateway)
    path = f"/paycore/invoice/{guid}"
    app = Litestar(plugins=[PayCorePlugin(PayCoreConfig(gateway=gateway))])
    with TestClient(app) as client:

        def both(path: str, **headers: str) -> tuple[Any, ...]:
            """The answer on the loop (no thread), then the thread's: equal."""
            threads.clear()
            inline = _answer(client, path, **headers)
            assert threads == []
            with monkeypatch.context() as off:
                off.setattr(handler, "handle_inline_async", _never)
                off.setattr(direct, "handle_inline_async", _never)
                threaded = _answer(client, path, **headers)
            assert threads == ["handle_streamed"]
            assert inline == threaded
            return inline

        opened = both(path)
        assert opened[0] == 200 and b'"status":"init"' in opened[1].replace(b" ", b"")
        unchanged = both(path, **{"If-None-Match": opened[2]["etag"]})
        assert unchanged[0] == 304 and unchanged[1] == b""
        missing = both(f"/paycore/invoice/{UNKNOWN}")
        assert missing[0] == 404
        read = gateway.storage.read_invoice(guid)
        assert read is not None
        with gateway.storage.transaction() as tx:
            tx.update_invoice(attrs.evolve(read.invoice(), status=Status.PAID))
        paid = both(path)
        assert paid[0] == 200 and paid[2]["etag"] != opened[2]["etag"]
        signed = {"x-session-nonce": "1", "x-session-signature": "0x" + "00" * 65}
        threads.clear()
        assert _answer(client, path, **signed)[0] == 401
        assert threads == ["handle_streamed"]  # a session is never verified on the loop


def test_an_expiry_due_goes_to_the_thread_and_is_written_once(
    gateway: Gateway, clock: Clock, threads: list[str]
) -> None:
    guid = _invoice(gateway)
    path = f"/paycore/invoice/{guid}"
    app = Litestar(plugins=[PayCorePlugin(PayCoreConfig(gateway=gateway))])
    with TestClient(app) as client:
        assert _answer(client, path)[0] == 200
        assert threads == []
        clock.now += 61
        expired = _answer(client, path)
        assert threads == ["handle_streamed"]  # the write happened there
        assert b'"status":"expired"' in expired[1].replace(b" ", b"")
        threads.clear()
        assert _answer(client, path) == expired  # settled: on the loop again
        assert threads == []
    with gateway.storage.transaction() as tx:
        assert [e.type for e in tx.outbox_since(0, 10, OWNER).events] == ["invoice.expired"]


async def _never(*_args: Any) -> None:
    return None


@pytest.mark.parametrize("inline_writes", [True, False])
def test_signed_requests_on_a_sqlite_file_are_answered_on_the_loop(
    tmp_path: Path, threads: list[str], inline_writes: bool
) -> None:
    """Under Litestar on a SQLite file a signed read and a signed ``POST /invoice`` need no
    worker thread (their storage all or nothing on the loop), with the answers a thread
    gives; ``inline_writes=False`` sends them to the thread, as it always does a write that
    is not signed."""
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'signed.sqlite3'}",
        prices={ETH_1: "2000"},
        auth_mode="strict",
        inline_writes=inline_writes,
    )
    gateway = Gateway(settings, entry_points=False, plugins=[paycore_storage.plugin])
    app = Litestar(plugins=[PayCorePlugin(PayCoreConfig(gateway=gateway))])
    try:
        with TestClient(app) as client:
            merchant = PaycoreClient(client)
            merchant.register()
            fields = {
                "value": "10", "chainId": 1, "description": "signed", "acceptedTokens": [ETH_1],
                "address": "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
            }  # fmt: skip
            # Warming up, on threads: the first signed read checks the spending connection
            # out of the pool, and a write on the loop needs an idle one left in it.
            first = merchant.post("/invoice", fields)
            assert merchant.get(f"/invoice/{first.json['guid']}").json == first.json
            assert merchant.post("/invoice", fields).status == 201
            threads.clear()
            created = merchant.post("/invoice", fields)
            assert created.status == 201, created.body
            read = merchant.get(f"/invoice/{created.json['guid']}")
            assert read.status == 200 and read.json == created.json
            hops = [] if inline_writes else ["handle_streamed", "handle_streamed"]
            assert threads == hops
    finally:
        gateway.close()


def test_a_signed_read_on_postgresql_spends_on_the_loop_once(
    gateway: Gateway, clock: Clock, threads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """On PostgreSQL a signed read's spend and read are awaited on the loop as one statement
    (``Gateway.spend_and_read_async``) and the answer made there -- the very answer of the
    thread's path. A replay is refused with the thread's text; an expiry due is written in
    a worker thread on the same spend: the request is answered, never refused as a replay
    of itself, and the expiry is written once."""
    core_hops: list[str] = []
    original = paycore.api.to_thread.run_sync

    async def counted(fn: Any, *args: Any, **kwargs: Any) -> Any:
        core_hops.append(getattr(fn, "__name__", ""))
        return await original(fn, *args, **kwargs)

    monkeypatch.setattr(paycore.api, "to_thread", attrs.make_class("T", [])())
    paycore.api.to_thread.run_sync = counted  # type: ignore[attr-defined]
    clock.now = time.time()  # the client's nonces are milliseconds of the real clock
    app = Litestar(plugins=[PayCorePlugin(PayCoreConfig(gateway=gateway))])
    with TestClient(app) as client:
        merchant = PaycoreClient(client)
        merchant.register()
        fields = {
            "value": "10", "chainId": 1, "description": "signed", "acceptedTokens": [ETH_1],
            "address": "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", "deadlineSecs": 60,
        }  # fmt: skip
        created = merchant.post("/invoice", fields)
        assert created.status == 201, created.body
        path = f"/paycore/invoice/{created.json['guid']}"

        def signed_get(headers: dict[str, str], on_loop: bool = True) -> tuple[Any, ...]:
            if on_loop:
                return _answer(client, path, **headers)
            with monkeypatch.context() as off:
                off.setattr(handler, "handle_inline_async", _never)
                off.setattr(direct, "handle_inline_async", _never)
                return _answer(client, path, **headers)

        threads.clear()
        first = merchant._headers(path.encode())
        inline = signed_get(first)
        assert inline[0] == 200 and threads == [] and core_hops == []
        threaded = signed_get(merchant._headers(path.encode()), on_loop=False)
        assert threads == ["handle_streamed"]
        assert inline == threaded
        # A replay: refused, with the thread's own words (it reads the stored key there).
        replayed = signed_get(first)
        assert replayed[0] == 401 and core_hops == ["on_thread"]
        assert replayed == signed_get(first, on_loop=False)
        # An expiry due: the thread writes it on the spend the loop made.
        clock.now += 61
        threads.clear()
        expired = signed_get(merchant._headers(path.encode()))
        assert expired[0] == 200, expired[1]
        assert b'"status":"expired"' in expired[1].replace(b" ", b"")
        assert threads == [] and core_hops == ["on_thread", "on_thread"]
    with gateway.storage.transaction() as tx:
        events = [e.type for e in tx.outbox_since(0, 20, merchant.address).events]
    assert events.count("invoice.expired") == 1


@pytest.mark.parametrize("failure", ["outage", "would block"])
def test_a_signed_read_whose_async_spend_fails_on_postgresql(
    gateway: Gateway, clock: Clock, monkeypatch: pytest.MonkeyPatch, failure: str
) -> None:
    """The spend's statement cut short by an outage may have spent: 503 with
    ``Retry-After``, as the sync path answers an outage, never a retry that would refuse
    the request as its own replay. ``WouldBlock`` (nothing sent): the thread answers the
    request whole, spending its nonce there, once."""
    clock.now = time.time()
    error = StorageUnavailable("connect", "refused") if failure == "outage" else WouldBlock()

    async def failing(*_args: Any) -> Any:
        raise error

    app = Litestar(plugins=[PayCorePlugin(PayCoreConfig(gateway=gateway))])
    with TestClient(app) as client:
        merchant = PaycoreClient(client)
        merchant.register()
        guid = _invoice(gateway)
        path = f"/paycore/invoice/{guid}"
        with monkeypatch.context() as broken:
            broken.setattr(gateway, "spend_and_read_async", failing)
            headers = merchant._headers(path.encode())
            answer = client.get(path, headers=headers)
        if failure == "outage":
            assert answer.status_code == 503 and "retry-after" in answer.headers
            assert answer.text == "storage unavailable, retry later"
        else:
            assert answer.status_code == 200 and answer.json()["guid"] == guid
            assert client.get(path, headers=headers).status_code == 401  # spent, once
