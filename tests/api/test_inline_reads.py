"""``paycore.api.handle_inline``: the public invoice read answered on the caller's thread
(an event loop's) when it can be made without waiting, and ``None`` -- nothing done, the
adapter answers in a worker thread -- when it cannot: no idle pooled connection yet, an
expiry to write, session headers to verify, or a round trip to PostgreSQL (which worker
threads overlap and an event loop would wait out one at a time). On a real SQLite file and
PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import URL

import paycore_storage.plugin
from paycore import Gateway, Settings
from paycore.api import Request, handle, handle_inline

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


def test_no_idle_connection_means_no_inline_answer(gateway: Gateway) -> None:
    guid = _invoice(gateway)
    storage: Any = gateway.storage
    storage.engine.pool.dispose()  # no idle connection: one would have to be opened
    assert handle_inline(gateway, _read(guid)) is None
    assert handle(gateway, _read(guid)).status == 200  # the thread's answer opens one


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


def test_session_headers_are_never_verified_inline(gateway: Gateway) -> None:
    guid = _invoice(gateway)
    handle(gateway, _read(guid))
    headers = {"x-session-nonce": "1", "x-session-signature": "0x" + "00" * 65}
    assert handle_inline(gateway, _read(guid, **headers)) is None
