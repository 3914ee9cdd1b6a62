"""The checkout page's browser-test plumbing: a real server in a thread, the Node driver.

Shared by tests/checkout (deposits recorded by hand) and tests/chains/evm (payments on anvil made
from the very link the page shows), so both drive the page alike.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from paycore import Gateway

PREFIX = "/paycore"
ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "node" / "checkout_browser.mjs"
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = "/usr/bin/chromium"
STEP_TIMEOUT = 60.0


def missing_tools() -> str | None:
    if shutil.which("node") is None:
        return "node is not installed"
    if not (ROOT / "node_modules" / "playwright-core" / "package.json").is_file():
        return "node_modules/playwright-core is missing (run npm ci)"
    if not os.access(CHROMIUM, os.X_OK):
        return f"{CHROMIUM} is missing (apt-get install -y chromium)"
    return None


# -- a real server in a thread ------------------------------------------------------------------


@contextmanager
def serve_litestar(gateway: Gateway, port: int) -> Iterator[None]:
    import uvicorn

    from paycore_litestar import create_app

    app = create_app(gateway=gateway, prefix=PREFIX)
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        yield
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@contextmanager
def serve_flask(gateway: Gateway, port: int) -> Iterator[None]:
    from werkzeug.serving import make_server

    from paycore_flask import create_app

    server = make_server("127.0.0.1", port, create_app(gateway=gateway, prefix=PREFIX), True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield
    finally:
        server.shutdown()
        thread.join(timeout=10)


def wait_until_up(base: str) -> None:
    import httpx

    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            if httpx.get(base + "/prices", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    raise AssertionError(f"{base} did not come up")


# -- the Node side -------------------------------------------------------------------------------


class Browser:
    """The Node driver as a subprocess: its JSON lines in, our "next" lines out."""

    def __init__(self, scenario: str, base: str, artifacts: Path, **extra: Any) -> None:
        """``scenario`` names the walk in checkout_browser.mjs; ``artifacts`` gets its
        screenshots; ``extra`` goes to the script as is (such as the invoice's guid)."""
        artifacts.mkdir(parents=True, exist_ok=True)
        config = {
            "scenario": scenario,
            "base": base,
            "artifacts": str(artifacts),
            "chromium": CHROMIUM,
            "allowNoStream": not has_event_stream(),
            **extra,
        }
        self.proc = subprocess.Popen(
            ["node", str(SCRIPT), json.dumps(config)],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def step(self, name: str) -> dict[str, Any]:
        try:
            line = self.lines.get(timeout=STEP_TIMEOUT)
        except queue.Empty:
            raise AssertionError(f"no {name!r} step from the browser in {STEP_TIMEOUT} s") from None
        if line is None:
            raise AssertionError(f"the browser driver ended before {name!r}: {self.stderr()}")
        data: dict[str, Any] = json.loads(line)
        assert data["step"] == name, data
        return data

    def next(self, arg: str = "") -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"next {arg}\n")
        self.proc.stdin.flush()

    def stderr(self) -> str:
        self.proc.wait(timeout=30)
        return self.proc.stderr.read()[-3000:] if self.proc.stderr else ""

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=30)


def has_event_stream() -> bool:
    """Whether the route table has the invoice's public event stream; without it the page's
    EventSource gets a 404 (Chromium logs it as a console error) and the page polls."""
    from paycore.api.table import ROUTES

    return any(route.path == "/invoice/{guid}/events" for route in ROUTES)


def require_browser() -> None:
    """Skip without node, playwright-core or chromium; fail instead in CI."""
    missing = missing_tools()
    if missing is not None:
        if os.environ.get("PAYCORE_REQUIRE_NODE") == "1":
            pytest.fail(f"PAYCORE_REQUIRE_NODE=1 but {missing}")
        pytest.skip(missing)


@contextmanager
def serve(framework: str, gateway: Gateway) -> Iterator[str]:
    """``gateway`` behind ``framework`` on a free loopback port; yields the API base URL."""
    port = free_port()
    run = serve_litestar if framework == "litestar" else serve_flask
    base = f"http://127.0.0.1:{port}{PREFIX}"
    with run(gateway, port):
        wait_until_up(base)
        yield base


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port
