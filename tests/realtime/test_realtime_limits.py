"""The socket caps (``paycore.realtime.limits``) without a server, then through the embedded
Flask adapter (werkzeug, flask-sock: switched before paycore looks, so close 4429) and
Litestar under uvicorn in-process (429 before the switch)."""

from __future__ import annotations

import threading
from typing import Any

import httpx
import pytest
from realtime_helpers import (
    PREFIX,
    Client,
    Nonces,
    account,
    make_gateway,
    register_frame,
    registration,
    served,
    ws_url,
)
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from paycore import Settings
from paycore.errors import InvalidInput
from paycore.realtime import hub_for
from paycore.realtime.frames import CLOSE_TOO_MANY, Conversation, State
from paycore.realtime.limits import Admission, Refusal, SocketLimits


def test_an_address_gets_its_caps_and_a_release_gives_the_place_back() -> None:
    limits = SocketLimits(per_ip=3, unregistered_per_ip=2, per_owner=5, retry_after=30)
    first, second = limits.admit("10.0.0.1"), limits.admit("10.0.0.1")
    assert isinstance(first, Admission) and isinstance(second, Admission)
    refused = limits.admit("10.0.0.1")
    assert refused == Refusal(
        "2 sockets from this address not registered yet (ws_max_unregistered_per_ip)", 30
    )
    assert isinstance(limits.admit("10.0.0.2"), Admission)  # another address is apart
    # Registering moves a socket out of the unregistered count, not out of the open one.
    assert first.register("0xAbC") is None
    third = limits.admit("10.0.0.1")
    assert isinstance(third, Admission)
    assert limits.counts("10.0.0.1", "0xabc") == (3, 2, 1)
    assert limits.admit("10.0.0.1") == Refusal(
        "3 sockets open from this address (ws_max_per_ip)", 30
    )
    first.release()
    first.release()  # once only
    assert limits.counts("10.0.0.1", "0xabc") == (2, 2, 0)
    second.release()
    third.release()
    assert limits.counts("10.0.0.1") == (0, 0, 0)


def test_an_owner_gets_its_cap_across_addresses() -> None:
    limits = SocketLimits(per_ip=10, unregistered_per_ip=10, per_owner=2)
    sockets = [limits.admit(f"10.0.1.{i}") for i in range(3)]
    assert all(isinstance(s, Admission) for s in sockets)
    a, b, c = (s for s in sockets if isinstance(s, Admission))
    assert a.register("0xOWNER") is None and b.register("0xowner") is None
    refused = c.register("0xowner")
    assert refused is not None
    assert (
        refused.message
        == "too many sockets: 2 sockets registered for this owner (ws_max_per_owner)"
    )
    assert refused.http_text.startswith("too many requests: 2 sockets registered")
    a.release()
    assert c.register("0xowner") is None  # the place a closed socket gave back


def test_counting_from_many_threads_loses_nothing() -> None:
    limits = SocketLimits(per_ip=10_000, unregistered_per_ip=10_000, per_owner=10_000)

    def churn() -> None:
        for _ in range(500):
            admitted = limits.admit("10.0.2.1")
            assert isinstance(admitted, Admission)
            admitted.register("0xowner")
            admitted.release()

    threads = [threading.Thread(target=churn) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert limits.counts("10.0.2.1", "0xowner") == (0, 0, 0)


def test_settings_carry_the_caps_and_refuse_zero() -> None:
    settings = Settings(
        ws_max_per_ip=7, ws_max_unregistered_per_ip=3, ws_max_per_owner=2, ws_register_timeout=4.5
    )
    limits = SocketLimits.from_settings(settings)
    assert (limits.per_ip, limits.unregistered_per_ip, limits.per_owner) == (7, 3, 2)
    assert limits.retry_after == 5
    env = {"PAYCORE_WS_MAX_PER_OWNER": "9"}
    assert Settings.from_env(env).ws_max_per_owner == 9
    with pytest.raises(InvalidInput):
        Settings(ws_max_per_ip=0)


def test_a_cap_is_a_4429_close_from_the_conversation() -> None:
    conversation = Conversation()
    close = conversation.too_many("too many sockets: 1 sockets open from this address")
    assert close.code == CLOSE_TOO_MANY == 4429
    assert conversation.state is State.CLOSED
    assert close.frame == (
        '{"type":"error","message":"too many sockets: 1 sockets open from this address"}'
    )


@pytest.mark.slow  # real servers in threads
def test_embedded_flask_closes_a_socket_past_the_address_cap_with_4429() -> None:
    gateway = make_gateway(ws_max_unregistered_per_ip=1)
    try:
        with served("flask", gateway) as base:
            first = Client(base)
            second = connect(ws_url(base), open_timeout=10, close_timeout=5)
            frames: list[Any] = []
            with pytest.raises(Exception):  # noqa: B017 - any close ends the loop
                while True:
                    frames.append(second.recv(timeout=10))
            close = second.protocol.close_rcvd
            assert close is not None and close.code == CLOSE_TOO_MANY
            assert frames == [
                '{"type":"error","message":"too many sockets: 1 sockets from this address'
                ' not registered yet (ws_max_unregistered_per_ip)"}'
            ]
            first.close()
    finally:
        gateway.close()


@pytest.mark.slow  # real servers in threads
def test_litestar_refuses_the_upgrade_with_429_and_counts_registered_owners() -> None:
    gateway = make_gateway(ws_max_unregistered_per_ip=1, ws_max_per_owner=1)
    owner, key = account("limits owner"), account("limits key")
    nonces = Nonces()
    try:
        with served("litestar", gateway) as base:
            answer = httpx.post(
                base + PREFIX + "/auth/register-pubkey", json=registration(owner, key)
            )
            assert answer.status_code == 200, answer.text
            first = Client(base)
            with pytest.raises(InvalidStatus) as refused:
                connect(ws_url(base), open_timeout=10)
            response = refused.value.response
            assert response.status_code == 429
            assert response.headers["Retry-After"] == "30"
            assert response.body == (
                b"too many requests: 1 sockets from this address not registered yet"
                b" (ws_max_unregistered_per_ip)"
            )
            assert first.register(key, nonces.next())["type"] == "registered"
            second = Client(base)  # the first registered: its unregistered place is free
            second.send(register_frame(key, second.challenge, nonces.next()))
            assert second.closed().code == CLOSE_TOO_MANY
            assert hub_for(gateway).limits.counts("127.0.0.1", owner.address)[2] == 1
            first.close()
    finally:
        gateway.close()
