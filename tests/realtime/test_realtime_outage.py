"""A WebSocket while storage is down: the register frame cannot be checked, so the socket
closes with 1013 ("try again later", the HTTP side's 503) rather than a 4401 that would tell
a good client its key is bad; an open socket keeps its key until storage answers again, and
the outage is logged once per interval, not once per socket."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import pytest
from realtime_helpers import account, make_gateway, register_frame, registration

from paycore.errors import StorageUnavailable
from paycore.realtime.connection import SocketSession
from paycore.realtime.frames import CLOSE_TRY_LATER, Close, Register


def _down(*_: Any, **__: Any) -> Any:
    raise StorageUnavailable("connection", "server closed the connection unexpectedly")


def test_register_during_an_outage_closes_1013_and_logs_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    gateway = make_gateway()
    monkeypatch.setattr(gateway.sessions, "verify", _down)
    closes = []
    with caplog.at_level(logging.WARNING):
        for _ in range(5):
            session = SocketSession(gateway)
            challenge = json.loads(session.opening())["challenge"]
            frame = session.receive(register_frame(account("ws-key"), challenge, 1))
            assert isinstance(frame, Register)
            closes.append(session.register(frame, lambda: None))
    assert all(isinstance(c, Close) and c.code == CLOSE_TRY_LATER for c in closes)
    assert {c.reason for c in closes if isinstance(c, Close)} == {
        "storage unavailable, retry later"
    }
    outage_lines = [r for r in caplog.records if "storage unavailable" in r.getMessage()]
    assert len(outage_lines) == 1 and not any(r.exc_info for r in caplog.records)
    gateway.close()


def test_an_open_socket_keeps_its_key_while_storage_is_down(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gateway = make_gateway(ws_recheck_interval=0.001)
    owner, key = account("ws-owner"), account("ws-key-2")
    gateway.sessions.register(registration(owner, key), session=None)
    session = SocketSession(gateway)
    challenge = json.loads(session.opening())["challenge"]
    frame = session.receive(register_frame(key, challenge, 1))
    assert isinstance(frame, Register)
    assert isinstance(session.register(frame, lambda: None), str)
    monkeypatch.setattr(gateway.sessions, "current", _down)
    time.sleep(0.01)  # past the recheck interval: check_key asks storage
    assert session.check_due()
    assert session.check_key() is None  # kept: the key was valid at the last look
    session.end()
    gateway.close()
