"""Fan-out through the real Redis: between Hubs, across reconnections and outages, and
across real web worker processes sharing one SQLite database, where a client connected to
one worker receives the change another worker (or ``paycore worker``) made. On that SQLite
file the web process pushes from its outbox feed (``test_realtime_outbox``), so these last
tests hold with Redis configured as before; Redis itself is no longer what carries them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
import redis
from realtime_helpers import (
    ETH,
    PREFIX,
    Client,
    Merchant,
    Nonces,
    account,
    free_port,
    make_gateway,
    registration,
    session_headers,
    start_serve_process,
    wait_until,
)

from paycore.realtime import Hub, hub_for
from paycore.realtime.frames import encode_event
from paycore.realtime.redis_fanout import RedisFanout

pytestmark = pytest.mark.slow  # real servers and worker processes

OWNER = "0xdBB105387e6f362A7b58c1C8DD2aF3Bf16E6Bb22"


@pytest.fixture
def hubs(redis_url: str, channel: str) -> Iterator[Callable[[], Hub]]:
    made: list[Hub] = []

    def make() -> Hub:
        hub = Hub(queue_size=1000, fanout=RedisFanout(redis_url, channel))
        made.append(hub)
        return hub

    yield make
    for hub in made:
        hub.close()


def drain(subscription: object, count: int, timeout: float = 10.0) -> list[str]:
    got: list[str] = []
    wait_until(
        lambda: bool(got.extend(subscription.take()) or len(got) >= count),  # type: ignore[attr-defined]
        timeout=timeout,
        what=f"{count} events",
    )
    return got


def test_a_change_in_one_hub_reaches_the_others_once(hubs: Callable[[], Hub]) -> None:
    a, b, c = hubs(), hubs(), hubs()
    at_a = a.subscribe(OWNER, lambda: None)
    at_b = b.subscribe(OWNER, lambda: None)
    at_c = c.subscribe(OWNER, lambda: None)
    for n in range(50):
        a.invoice_changed(OWNER, {"guid": f"g{n}", "value": "1.5"})
    expected = [encode_event({"guid": f"g{n}", "value": "1.5"}) for n in range(50)]
    assert drain(at_b, 50) == expected and drain(at_c, 50) == expected
    # Delivered locally at once; its own echo through Redis is skipped, never doubled.
    assert at_a.take() == expected
    time.sleep(0.2)
    assert at_a.take() == [] and at_b.take() == []


def test_messages_paycore_did_not_publish_are_ignored(
    hubs: Callable[[], Hub], redis_url: str, channel: str
) -> None:
    hub = hubs()
    sub = hub.subscribe(OWNER, lambda: None)
    client = redis.Redis.from_url(redis_url)
    for junk in ["hello", f"v2 x {OWNER} {{}}", f"v1 abc {OWNER} not-json", b"\xff\xfe"]:
        client.publish(channel, junk)
    client.publish(channel, f'v1 someoneelse {OWNER} {{"guid":"real"}}')
    assert drain(sub, 1) == ['{"guid":"real"}']
    client.close()


def test_the_listener_reconnects_after_its_connection_is_killed(
    hubs: Callable[[], Hub], redis_url: str
) -> None:
    sender, receiver = hubs(), hubs()
    sub = receiver.subscribe(OWNER, lambda: None)
    fanout = receiver.fanout
    assert isinstance(fanout, RedisFanout) and fanout.listening
    admin = redis.Redis.from_url(redis_url, decode_responses=True)
    [victim] = [c for c in admin.client_list() if c["name"] == fanout.listener_name]
    admin.client_kill_filter(_id=victim["id"])
    wait_until(lambda: not fanout.listening, timeout=5, what="the listener to notice")
    wait_until(lambda: fanout.listening, timeout=10, what="the listener to resubscribe")
    sender.invoice_changed(OWNER, {"guid": "after"})
    assert drain(sub, 1) == ['{"guid":"after"}']
    admin.close()


def test_redis_down_never_fails_a_change(channel: str) -> None:
    """Nothing listens on the port: every change commits, this process's sockets still get
    each one, and publishing pauses instead of paying a timeout per change."""
    dead = f"redis://127.0.0.1:{free_port()}/0"
    gateway = make_gateway(redis_url=dead, redis_channel=channel)
    hub = hub_for(gateway)
    fanout = hub.fanout
    assert isinstance(fanout, RedisFanout)
    fanout.ready_timeout = 0.3
    owner = account("redis down owner")
    sub = hub.subscribe(owner.address, lambda: None)  # returns although it cannot subscribe
    merchant = Merchant(gateway, owner)
    invoices = [merchant.invoice(value="1000") for _ in range(20)]
    started = time.monotonic()
    for invoice in invoices:  # a status change each
        assert merchant.pay(invoice, "0.0001")
    assert time.monotonic() - started < 5
    assert fanout.dropped == 20
    assert len(drain(sub, 20)) == 20
    hub.close()
    gateway.close()


# -- real worker processes -----------------------------------------------------------------


@pytest.fixture
def shared_db(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'shared.sqlite3'}"
    done = subprocess.run(
        [sys.executable, "-m", "paycore.runtime.cli", "migrate", "--database-url", url],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return url


@pytest.fixture
def worker_env(redis_url: str, channel: str) -> dict[str, str]:
    return {
        "PAYCORE_REDIS_URL": redis_url,
        "PAYCORE_REDIS_CHANNEL": channel,
        "PAYCORE_PRICES": json.dumps({ETH: "2000"}),
        "PAYCORE_WORKER_SWEEP_INTERVAL": "0.1",
        "PAYCORE_WORKER_POLL_INTERVAL": "0.1",
    }


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in started:
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)


def create_invoice(base: str, key: object, nonce: int, **fields: object) -> dict[str, object]:
    body = json.dumps(
        {
            "description": "cross-process",
            "value": "20",
            "chainId": 31337,
            "acceptedTokens": [ETH],
            "address": "0x" + os.urandom(20).hex(),
            **fields,
        }
    ).encode()
    headers = {"content-type": "application/json", **session_headers(key, nonce, body)}  # type: ignore[arg-type]
    answer = httpx.post(base + PREFIX + "/invoice", content=body, headers=headers, timeout=10)
    assert answer.status_code == 201, answer.text
    created: dict[str, object] = answer.json()
    return created


@pytest.mark.parametrize(
    ("a_framework", "b_framework"), [("flask", "litestar"), ("litestar", "flask")]
)
def test_a_client_on_worker_a_receives_the_change_worker_b_made(
    a_framework: str,
    b_framework: str,
    shared_db: str,
    worker_env: dict[str, str],
    processes: list[subprocess.Popen[bytes]],
    tmp_path: Path,
) -> None:
    a, base_a = start_serve_process(a_framework, shared_db, worker_env, str(tmp_path / "a.log"))
    processes.append(a)
    b, base_b = start_serve_process(b_framework, shared_db, worker_env, str(tmp_path / "b.log"))
    processes.append(b)
    owner, key, nonces = account("cross owner"), account("cross key"), Nonces()
    answer = httpx.post(base_b + PREFIX + "/auth/register-pubkey", json=registration(owner, key))
    assert answer.status_code == 200, answer.text

    client = Client(base_a)  # the key was registered through B: one database
    assert client.register(key, nonces.next())["ownerAddress"] == owner.address
    invoice = create_invoice(base_b, key, nonces.next(), deadlineSecs=1)
    time.sleep(max(0.0, float(invoice["deadline"]) + 1.05 - time.time()))  # type: ignore[arg-type]
    read = httpx.get(f"{base_b}{PREFIX}/invoice/{invoice['guid']}", timeout=10).json()
    assert read["status"] == "expired"  # B applied the expiry on this read and published it
    pushed = client.recv(timeout=10)
    # A SQLite file: the push comes from A's outbox feed, with its event id.
    assert pushed == {"ownerAddress": owner.address, "events": [read], "eventIds": [1]}
    assert client.nothing_within(0.3)  # once, although two processes listen
    client.close()


def test_the_worker_process_sweeper_pushes_expiry_through_redis(
    shared_db: str,
    worker_env: dict[str, str],
    processes: list[subprocess.Popen[bytes]],
    tmp_path: Path,
) -> None:
    """No one reads the invoice: ``paycore worker`` expires it and its Hub publishes."""
    web, base = start_serve_process("litestar", shared_db, worker_env, str(tmp_path / "web.log"))
    processes.append(web)
    owner, key, nonces = account("sweep owner"), account("sweep key"), Nonces()
    assert httpx.post(base + PREFIX + "/auth/register-pubkey", json=registration(owner, key))
    client = Client(base)
    client.register(key, nonces.next())
    invoice = create_invoice(base, key, nonces.next(), deadlineSecs=1)

    log = open(tmp_path / "worker.log", "wb")  # noqa: SIM115 - the child owns it
    command = [sys.executable, "-m", "paycore.runtime.worker", "--database-url", shared_db]
    worker = subprocess.Popen(
        [*command, "--no-dispatch"],
        env={**os.environ, **worker_env},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    log.close()
    processes.append(worker)
    pushed = client.recv(timeout=20)
    [event] = pushed["events"]
    assert (event["guid"], event["status"]) == (invoice["guid"], "expired")
    client.close()
