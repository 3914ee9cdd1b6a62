"""A Tron watcher whose node is down says so once, without a traceback, and backs off:
the wait between passes doubles from ``poll_interval`` up to ``NODE_BACKOFF_CAP``, instead
of a 100-line traceback every two seconds. The node is a loopback port nobody listens on."""

from __future__ import annotations

import logging
import socket
import threading
import time

import pytest
from tron_env import make_chain, make_gateway, watcher


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_dead_node_is_said_once_and_asked_less_and_less(
    caplog: pytest.LogCaptureFixture,
) -> None:
    chain = make_chain()
    gateway = make_gateway(f"http://127.0.0.1:{_closed_port()}", chain, poll_interval=0.05)
    w = watcher(gateway)
    passes: list[float] = []
    step = w.step

    def counted(stop: threading.Event | None = None):  # type: ignore[no-untyped-def]
        passes.append(time.monotonic())
        return step(stop)

    w.step = counted  # type: ignore[method-assign]
    stop = threading.Event()
    caplog.set_level(logging.DEBUG, logger="paycore.watcher")
    runner = threading.Thread(target=w.run, args=(stop,), daemon=True)
    runner.start()
    time.sleep(1.6)
    stop.set()
    runner.join(timeout=10)
    gateway.close()
    failures = [r for r in caplog.records if "watcher pass failed" in r.getMessage()]
    warnings = [r for r in failures if r.levelno == logging.WARNING]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    assert warnings[0].exc_info is None  # one line, no traceback
    assert "chain node" in warnings[0].getMessage()
    assert all(r.levelno == logging.DEBUG for r in failures[1:])
    # 0.05, 0.1, 0.2, 0.4, 0.8 s between passes: about 5 in 1.6 s, not 32.
    assert 3 <= len(passes) <= 7, len(passes)
    gaps = [b - a for a, b in zip(passes, passes[1:], strict=False)]
    assert gaps == sorted(gaps) or all(g > 0.04 for g in gaps), gaps
    assert gaps[-1] > 2 * gaps[0], gaps
