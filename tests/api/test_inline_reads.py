"""``paycore.api.handle_inline``: the public invoice read answered on the caller's thread
(an event loop's) when it can be made without waiting, and ``None`` -- nothing done, the
adapter answers in a worker thread -- when it cannot: no idle pooled connection yet, an
expiry to write, session headers to verify, or a round trip to PostgreSQL (which worker
threads overlap and an event loop would wait out one at a time). On a real SQLite file and
PostgreSQL."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from sqlalchemy import text
from sqlalchemy.engine import URL

import paycore_storage.plugin
import paycore_storage.sql
from paycore import Gateway, Settings
from paycore.api import (
    Request,
    Response,
    handle,
    handle_inline,
    handle_inline_async,
    reads_inline_async,
)
from paycore.domain.records import Status

ETH_1 = "1:0x0000000000000000000000000000000000000000"
OWNER = "0x" + "33" * 20
NOW = 1_700_000_000.0


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'inline.sqlite3'}"
    url: URL = request.getfixturevalue("postgres_schema")()
    return url.render_as_string(hide_password=False)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def gateway(database: str, clock: Clock) -> Iterator[Gateway]:
    settings = Settings(database_url=database, prices={ETH_1: "2000"}, auth_mode="soft")
    gw = Gateway(settings, entry_points=False, plugins=[paycore_storage.plugin], clock=clock)
    yield gw
    gw.close()


def _invoice(gateway: Gateway) -> str:
    fields = {
        "value": "10", "chainId": 1, "description": "inline", "acceptedTokens": [ETH_1],
        "address": "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", "deadlineSecs": 60,
    }  # fmt: skip
    return gateway.create_invoice(OWNER, fields).guid


def _read(guid: str, **headers: str) -> Request:
    return Request("GET", f"/invoice/{guid}", headers=headers)


def test_postgresql_reads_are_never_made_inline(gateway: Gateway, database: str) -> None:
    guid = _invoice(gateway)
    assert handle(gateway, _read(guid)).status == 200
    assert (handle_inline(gateway, _read(guid)) is None) == database.startswith("postgresql")


@pytest.mark.parametrize("database", ["sqlite"], indirect=True)
def test_a_public_read_is_answered_inline_as_handle_answers_it(gateway: Gateway) -> None:
    guid = _invoice(gateway)
    threaded = handle(gateway, _read(guid))
    inline = handle_inline(gateway, _read(guid))
    assert inline is not None
    assert (inline.status, inline.body, dict(inline.headers)) == (
        threaded.status, threaded.body, dict(threaded.headers),
    )  # fmt: skip
    etag = threaded.headers["etag"]
    unchanged = handle_inline(gateway, _read(guid, **{"if-none-match": etag}))
    assert unchanged is not None and unchanged.status == 304


@pytest.mark.parametrize("database", ["sqlite"], indirect=True)
def test_a_poll_on_the_loop_reads_on_a_connection_of_its_own(
    gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a SQLite file the loop's read needs no pooled connection: its thread reads on a
    connection of its own, opened once and kept outside the pool (a checkout and check-in,
    with its reset, cost more than the ``SELECT``); the store's close closes it. Where
    SQLite would make that read wait (SQLITE_BUSY, as while a checkpoint restarts the log),
    the loop does not: a thread answers, and the reader stays."""
    guid = _invoice(gateway)
    storage: Any = gateway.storage
    expected = handle(gateway, _read(guid))  # this thread's reader, not the loop's
    storage.engine.pool.dispose()  # no idle pooled connection: none is needed
    before = storage._own_readers.held()
    first = handle_inline(gateway, _read(guid))
    _same(first, expected)
    assert storage.engine.pool.checkedout() == 0
    (reader,) = [r for r in storage._own_readers.held() if r not in before]
    assert handle_inline(gateway, _read(guid)) is not None
    assert storage._own_readers.held() == [*before, reader]
    busy = sqlite3.OperationalError("database is locked")
    busy.sqlite_errorcode = sqlite3.SQLITE_BUSY

    def waits(*_: Any) -> None:
        raise busy

    monkeypatch.setattr(paycore_storage.sql, "read_on", waits)
    assert handle_inline(gateway, _read(guid)) is None
    monkeypatch.undo()
    assert storage._own_readers.held() == [*before, reader]
    storage.close()
    assert storage._own_readers.held() == []


@pytest.mark.parametrize("database", ["sqlite"], indirect=True)
def test_a_poll_on_a_plain_thread_reads_on_a_connection_of_its_own(gateway: Gateway) -> None:
    """A host's WSGI server answers the poll on its own threads: each reads on a connection
    of its own too (with the pool's busy timeout, since a thread may wait), up to a
    bound; past it a thread reads on a pooled connection, and answers the same."""
    guid = _invoice(gateway)
    storage: Any = gateway.storage
    storage.engine.pool.dispose()
    answers: list[Response] = []

    def poll() -> None:
        answers.append(handle(gateway, _read(guid)))

    poll()
    assert storage.engine.pool.checkedin() == 0  # no pooled connection was opened
    (reader,) = storage._own_readers.held()
    assert reader.execute("PRAGMA busy_timeout").fetchone()[0] > 0
    poll()
    assert storage._own_readers.held() == [reader]  # kept, not opened again
    storage._own_readers._most = 1  # the bound reached: another thread uses the pool
    other = threading.Thread(target=poll)
    other.start()
    other.join()
    assert storage._own_readers.held() == [reader]
    assert storage.engine.pool.checkedin() == 1
    for answer in answers[1:]:
        _same(answer, answers[0])
    assert answers[0].status == 200
    storage.close()
    assert storage._own_readers.held() == []


@pytest.mark.parametrize("database", ["sqlite"], indirect=True)
def test_an_expiry_due_is_left_to_the_thread_and_happens_there_once(
    gateway: Gateway, clock: Clock
) -> None:
    guid = _invoice(gateway)
    handle(gateway, _read(guid))  # a pooled connection is idle now
    clock.now += 61
    assert handle_inline(gateway, _read(guid)) is None
    with gateway.storage.transaction() as tx:
        assert tx.outbox_since(0, 10, OWNER).events == []  # nothing was written inline
    answer = handle(gateway, _read(guid))
    assert b'"status":"expired"' in answer.body
    with gateway.storage.transaction() as tx:
        assert [e.type for e in tx.outbox_since(0, 10, OWNER).events] == ["invoice.expired"]
    assert handle_inline(gateway, _read(guid)) is not None  # settled: inline again


def test_session_headers_are_verified_inline_only_where_the_store_spends_inline(
    gateway: Gateway, database: str
) -> None:
    """A SQLite file spends a nonce on the loop all or nothing, so a signed read is made
    there, its refusals included (a bad signature needs no storage at all); PostgreSQL's
    spend is a round trip, left to a thread (tests/storage/test_signed_read_sql.py has
    the spends themselves)."""
    guid = _invoice(gateway)
    handle(gateway, _read(guid))
    headers = {"x-session-nonce": "1", "x-session-signature": "0x" + "00" * 65}
    answered = handle_inline(gateway, _read(guid, **headers))
    if database.startswith("sqlite"):
        assert answered is not None
        _same(answered, handle(gateway, _read(guid, **headers)))
        assert answered.status == 401
    else:
        assert answered is None


# ``handle_inline_async``: on PostgreSQL the read is awaited on the loop (the store's
# ``read_invoice_async``), then the sync rules answer inline on what it read.

postgres_only = pytest.mark.parametrize(
    "database", [pytest.param("postgresql", marks=pytest.mark.postgres)], indirect=True
)


def _inline_async(gateway: Gateway, request: Request) -> Response | None:
    return asyncio.run(handle_inline_async(gateway, request))


def _same(one: Response | None, other: Response) -> None:
    assert one is not None
    assert (one.status, one.body, dict(one.headers), one.content_type) == (
        other.status, other.body, dict(other.headers), other.content_type,
    )  # fmt: skip


def _paid(gateway: Gateway, guid: str) -> None:
    read = gateway.storage.read_invoice(guid)
    assert read is not None
    with gateway.storage.transaction() as tx:
        tx.update_invoice(attrs.evolve(read.invoice(), status=Status.PAID))


@postgres_only
def test_on_postgresql_the_async_read_answers_as_handle_answers(gateway: Gateway) -> None:
    """Open, paid and unknown, a 304 on the ETag, HEAD: the very answers the thread's
    ``handle`` gives, with no blocking read made (``handle_inline`` alone refuses)."""
    assert reads_inline_async(gateway)
    guid = _invoice(gateway)
    unknown = "00000000-0000-4000-8000-00000000dead"
    for _state in ("open", "paid"):
        for request in (_read(guid), _read(unknown), Request("HEAD", f"/invoice/{guid}")):
            _same(_inline_async(gateway, request), handle(gateway, request))
        etag = handle(gateway, _read(guid)).headers["etag"]
        unchanged = _read(guid, **{"if-none-match": etag})
        _same(_inline_async(gateway, unchanged), handle(gateway, unchanged))
        assert handle(gateway, unchanged).status == 304
        assert handle_inline(gateway, _read(guid)) is None  # the sync read would block
        _paid(gateway, guid)
    assert b'"status":"paid"' in handle(gateway, _read(guid)).body


@postgres_only
def test_an_expiry_due_on_postgresql_falls_back_to_the_thread_and_is_written_once(
    gateway: Gateway, clock: Clock
) -> None:
    guid = _invoice(gateway)
    assert _inline_async(gateway, _read(guid)) is not None
    clock.now += 61
    assert _inline_async(gateway, _read(guid)) is None
    with gateway.storage.transaction() as tx:
        assert tx.outbox_since(0, 10, OWNER).events == []  # nothing was written inline
    answer = handle(gateway, _read(guid))
    assert b'"status":"expired"' in answer.body
    _same(_inline_async(gateway, _read(guid)), handle(gateway, _read(guid)))
    with gateway.storage.transaction() as tx:
        assert [e.type for e in tx.outbox_since(0, 10, OWNER).events] == ["invoice.expired"]


@postgres_only
def test_a_broken_async_connection_is_discarded_and_the_next_poll_works(
    gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A backend killed while its connection sat idle: dropped at checkout (its socket
    reads the server's goodbye), the poll answered on a new one. Killed where checkout
    cannot tell (the check fooled): the statement fails, the connection is closed and
    not kept, the adapter's thread answers that poll, and the next one connects anew."""
    import paycore_storage.async_read as async_read
    from paycore_storage.prepared import kept_cursor

    guid = _invoice(gateway)
    store: Any = gateway.storage
    reads = store._async_reads

    async def polls(kill: bool) -> list[Response | None]:
        first = await handle_inline_async(gateway, _read(guid))
        assert reads.idle() == 1
        (connection,) = reads._pool().idle
        kept = kept_cursor(connection)
        await handle_inline_async(gateway, _read(guid))
        assert reads._pool().idle == [connection]
        assert kept_cursor(connection) is kept  # the connection's one cursor serves each
        if kill:
            (connection,) = reads._pool().idle
            with store.engine.begin() as sql:
                sql.execute(
                    text("SELECT pg_terminate_backend(:pid)"), {"pid": connection.info.backend_pid}
                )
            await asyncio.sleep(0.2)
        second = await handle_inline_async(gateway, _read(guid))
        third = await handle_inline_async(gateway, _read(guid))
        return [first, second, third]

    threaded = handle(gateway, _read(guid))
    first, second, third = asyncio.run(polls(kill=True))
    for answer in (first, second, third):
        _same(answer, threaded)
    monkeypatch.setattr(async_read, "_readable", lambda _fd: False)
    first, second, third = asyncio.run(polls(kill=True))
    _same(first, threaded)
    assert second is None  # the broken statement: the thread answers this one
    _same(third, threaded)
