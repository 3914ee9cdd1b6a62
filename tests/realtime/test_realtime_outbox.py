"""Pushes read from the durable outbox, with no Redis: a change committed by another
process (a second Gateway on its own connections, or the real ``paycore worker``) reaches a
socket of the web app, on PostgreSQL and on a SQLite file; a reconnecting socket resumes
after the last event id it saw; a killed LISTEN connection comes back; an owner's socket
never sees another owner's events."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from eth_account.signers.local import LocalAccount
from realtime_helpers import (
    ETH,
    PREFIX,
    Client,
    Clock,
    Merchant,
    Nonces,
    account,
    registration,
    served,
    sign,
    wait_until,
)
from sqlalchemy import URL, create_engine, text

import paycore_storage.plugin
from paycore import Gateway, Settings
from paycore.realtime import CLOSE_AUTH, hub_for

pytestmark = pytest.mark.slow  # real servers, databases and processes


def sql_gateway(database_url: str, **overrides: Any) -> Gateway:
    """A gateway as ``paycore serve`` builds one on ``database_url`` (no Redis)."""
    values: dict[str, Any] = {
        "database_url": database_url,
        "prices": {ETH: "2000"},
        "checkout_url": "http://127.0.0.1/checkout",
        "ws_recheck_interval": 0.2,
        **overrides,
    }
    return Gateway(
        Settings(**values), entry_points=False, plugins=[paycore_storage.plugin], clock=Clock()
    )


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'shared.sqlite3'}"
    new_schema: Callable[[], URL] = request.getfixturevalue("postgres_schema")
    return new_schema().render_as_string(hide_password=False)


@pytest.fixture
def web(db_url: str) -> Iterator[Gateway]:
    """The web process: its gateway is served with sockets."""
    gw = sql_gateway(db_url)
    gw.storage.migrate()  # type: ignore[attr-defined]
    yield gw
    gw.close()


@pytest.fixture
def other(db_url: str, web: Gateway) -> Iterator[Gateway]:
    """Another process writing the same database (its own engine and connections)."""
    gw = sql_gateway(db_url)
    yield gw
    gw.close()


@pytest.fixture(params=["flask", "litestar"])
def base(request: pytest.FixtureRequest, web: Gateway) -> Iterator[str]:
    with served(request.param, web) as url:
        yield url


def register_key(base: str, owner: LocalAccount, key: LocalAccount) -> None:
    answer = httpx.post(base + PREFIX + "/auth/register-pubkey", json=registration(owner, key))
    assert answer.status_code == 200, answer.text


def register_after(client: Client, key: LocalAccount, nonce: int, after: int) -> Any:
    """A resuming register frame: the signature covers ``{challenge}:after={after}``."""
    digest = hashlib.sha256(f"{client.challenge}:after={after}".encode("ascii")).hexdigest()
    frame = {"type": "register", "nonce": nonce, "signature": sign(key, f"sess:{nonce}:{digest}")}
    client.send(json.dumps({**frame, "after": after}))
    return client.recv()


def pushed(client: Client, count: int, timeout: float = 10.0) -> tuple[list[Any], list[int]]:
    """The next ``count`` events and their ids, however the server batched them."""
    events: list[Any] = []
    ids: list[int] = []
    while len(events) < count:
        frame = client.recv(timeout=timeout)
        assert len(frame["events"]) == len(frame["eventIds"]), frame
        events += frame["events"]
        ids += frame["eventIds"]
    assert len(events) == count, events
    return events, ids


def test_a_change_another_process_commits_reaches_the_socket(
    base: str, web: Gateway, other: Gateway
) -> None:
    owner, key, nonces = account("outbox owner"), account("outbox key"), Nonces()
    register_key(base, owner, key)
    client = Client(base)
    assert client.register(key, nonces.next())["type"] == "registered"
    merchant = Merchant(other, owner)
    invoice = merchant.invoice(value="20")  # 0.01 ETH
    merchant.pay(invoice, "0.004")
    merchant.pay(invoice, "0.006")
    events, ids = pushed(client, 2)
    assert [(e["guid"], e["status"]) for e in events] == [
        (invoice.guid, "partialPaid"),
        (invoice.guid, "paid"),
    ]
    assert ids == sorted(ids) and len(set(ids)) == 2
    assert events[1] == httpx.get(f"{base}{PREFIX}/invoice/{invoice.guid}").json()
    assert client.nothing_within(0.3)  # once each
    # The writing process serves no socket: it never started reading the outbox.
    feed = hub_for(other).feed
    assert feed is not None and feed.position is None
    client.close()


def test_the_web_process_own_changes_come_once_through_the_same_feed(
    base: str, web: Gateway
) -> None:
    owner, key, nonces = account("own owner"), account("own key"), Nonces()
    register_key(base, owner, key)
    client = Client(base)
    client.register(key, nonces.next())
    merchant = Merchant(web, owner)
    invoice = merchant.invoice(value="20")
    merchant.pay(invoice, "0.01")
    [event], [event_id] = pushed(client, 1)
    assert event["status"] == "paid" and event_id > 0
    assert client.nothing_within(0.3)  # not pushed directly as well
    client.close()


def test_a_socket_resumes_after_the_last_event_id_it_saw(
    base: str, web: Gateway, other: Gateway
) -> None:
    owner, key, nonces = account("resume owner"), account("resume key"), Nonces()
    register_key(base, owner, key)
    merchant = Merchant(other, owner)
    first = Client(base)
    first.register(key, nonces.next())
    merchant.pay(merchant.invoice(value="1000"), "0.001")
    _, [seen] = pushed(first, 1)
    first.close()

    # While disconnected: three status changes (a further part payment would be none).
    missed = [merchant.pay(merchant.invoice(value="1000"), "0.001")[0] for _ in range(3)]
    again = Client(base)
    registered = register_after(again, key, nonces.next(), seen)
    assert registered["type"] == "registered"
    events, ids = pushed(again, 3)
    assert [e["paidAmount"] for e in events] == [i.to_wire()["paidAmount"] for i in missed]
    assert ids == sorted(ids) and ids[0] > seen
    [now] = merchant.pay(merchant.invoice(value="1000"), "0.001")  # then live, without a gap
    [live], [live_id] = pushed(again, 1)
    assert live_id > ids[-1] and live["paidAmount"] == now.to_wire()["paidAmount"]
    assert again.nothing_within(0.3)  # and without a duplicate
    again.close()


def test_resume_is_signed_and_bounded(db_url: str, other: Gateway, tmp_path: Path) -> None:
    gw = sql_gateway(db_url, ws_queue_size=3)
    try:
        with served("litestar", gw) as base:
            owner, key, nonces = account("cap owner"), account("cap key"), Nonces()
            register_key(base, owner, key)
            merchant = Merchant(other, owner)
            for _ in range(5):
                merchant.pay(merchant.invoice(value="1000"), "0.001")
            # "after" changed from what was signed: not the register frame the key signed.
            forged = Client(base)
            forged.send(
                json.dumps(
                    {
                        **json.loads(_plain_register(forged, key, nonces.next())),
                        "after": 0,
                    }
                )
            )
            assert forged.closed().code == CLOSE_AUTH
            client = Client(base)
            assert register_after(client, key, nonces.next(), 0)["type"] == "registered"
            resync = client.recv()
            assert resync["type"] == "resync" and "more than 3 events" in resync["message"]
            [now] = merchant.pay(merchant.invoice(value="1000"), "0.001")  # live pushes go on
            [live], _ = pushed(client, 1)
            assert live["paidAmount"] == now.to_wire()["paidAmount"]
            client.close()
    finally:
        gw.close()


def _plain_register(client: Client, key: LocalAccount, nonce: int) -> str:
    digest = hashlib.sha256(client.challenge.encode("ascii")).hexdigest()
    return json.dumps(
        {"type": "register", "nonce": nonce, "signature": sign(key, f"sess:{nonce}:{digest}")}
    )


def test_another_owners_events_never_reach_the_socket(
    base: str, web: Gateway, other: Gateway
) -> None:
    mine, theirs = account("isolated owner"), account("other owner")
    key, nonces = account("isolated key"), Nonces()
    register_key(base, mine, key)
    client = Client(base)
    client.register(key, nonces.next())
    for_them = Merchant(other, theirs)
    for_me = Merchant(other, mine)
    their_invoice = for_them.invoice(value="20")
    for_them.pay(their_invoice, "0.01")
    my_invoice = for_me.invoice(value="20")
    for_them.pay(their_invoice, "0.001")
    for_me.pay(my_invoice, "0.01")
    [event], _ = pushed(client, 1)
    assert event["guid"] == my_invoice.guid
    assert client.nothing_within(0.5)
    client.close()
    # A replay from the very start holds the owner's event only.
    replay = Client(base)
    register_after(replay, key, nonces.next(), 0)
    events, _ = pushed(replay, 1)
    assert [e["guid"] for e in events] == [my_invoice.guid]
    assert replay.nothing_within(0.3)
    replay.close()


@pytest.fixture
def pg_url(postgres_schema: Callable[[], URL]) -> str:
    return postgres_schema().render_as_string(hide_password=False)


def test_a_killed_listen_connection_comes_back_and_loses_nothing(pg_url: str) -> None:
    web_gw = sql_gateway(pg_url)
    web_gw.storage.migrate()  # type: ignore[attr-defined]
    writer = sql_gateway(pg_url)
    admin = create_engine(pg_url)
    try:
        with served("litestar", web_gw) as base:
            owner, key, nonces = account("listen owner"), account("listen key"), Nonces()
            register_key(base, owner, key)
            client = Client(base)
            client.register(key, nonces.next())
            feed = hub_for(web_gw).feed
            assert feed is not None and feed.connected and feed.signal is not None
            pid = feed.signal.backend_pid  # type: ignore[attr-defined]
            with admin.begin() as connection:
                connection.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
            merchant = Merchant(writer, owner)
            invoice = merchant.invoice(value="20")
            merchant.pay(invoice, "0.004")  # committed while the listener is down
            wait_until(lambda: feed.reconnects >= 1, timeout=10, what="the feed to notice")
            wait_until(lambda: feed.connected, timeout=10, what="the feed to listen again")
            assert feed.signal.backend_pid != pid  # type: ignore[attr-defined]
            merchant.pay(invoice, "0.006")
            events, ids = pushed(client, 2)
            assert [e["status"] for e in events] == ["partialPaid", "paid"]
            assert ids == sorted(ids)
            assert client.nothing_within(0.3)
            client.close()
    finally:
        admin.dispose()
        writer.close()
        web_gw.close()


def test_the_paycore_worker_process_expiry_reaches_a_socket_without_redis(
    pg_url: str, tmp_path: Path
) -> None:
    web_gw = sql_gateway(pg_url)
    web_gw.storage.migrate()  # type: ignore[attr-defined]
    assert web_gw.settings.redis_url is None
    worker: subprocess.Popen[bytes] | None = None
    try:
        with served("flask", web_gw) as base:
            owner, key, nonces = account("worker owner"), account("worker key"), Nonces()
            register_key(base, owner, key)
            client = Client(base)
            client.register(key, nonces.next())
            invoice = web_gw.create_invoice(
                owner.address,
                {
                    "description": "expires in the worker",
                    "value": "20",
                    "chainId": 31337,
                    "acceptedTokens": [ETH],
                    "address": "0x" + os.urandom(20).hex(),
                    "deadlineSecs": 1,
                },
            )
            env = {
                **{k: v for k, v in os.environ.items() if not k.startswith("PAYCORE_REDIS")},
                "PAYCORE_PRICES": json.dumps({ETH: "2000"}),
                "PAYCORE_WORKER_SWEEP_INTERVAL": "0.1",
                "PAYCORE_WORKER_POLL_INTERVAL": "0.1",
            }
            log = open(tmp_path / "worker.log", "wb")  # noqa: SIM115 - the child owns it
            command = [sys.executable, "-m", "paycore.runtime.worker", "--database-url", pg_url]
            worker = subprocess.Popen(
                [*command, "--no-dispatch"], env=env, stdout=log, stderr=subprocess.STDOUT
            )
            log.close()
            started = time.monotonic()
            [event], [event_id] = pushed(client, 1, timeout=30)
            assert (event["guid"], event["status"]) == (invoice.guid, "expired"), (
                time.monotonic() - started
            )
            assert event_id > 0
            client.close()
    finally:
        if worker is not None:
            worker.terminate()
            worker.wait(timeout=15)
        web_gw.close()


def test_on_memory_storage_a_resume_is_answered_with_resync(
    server: str, registered: LocalAccount, nonces: Nonces
) -> None:
    """``memory://`` pushes changes as they are made, without ids: it cannot replay."""
    client = Client(server)
    assert register_after(client, registered, nonces.next(), 0)["type"] == "registered"
    resync = client.recv()
    assert resync["type"] == "resync" and "polling" in resync["message"]
    client.close()
