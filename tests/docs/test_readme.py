"""README's Python blocks run as written, so the documentation cannot drift from the code.

Blocks that talk to a gateway over HTTP find it through ``PAYCORE_URL``; the test serves one
with ``paycore serve`` (the command the README shows) in a real subprocess, for each
framework.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module", params=["litestar", "flask"])
def served(request: pytest.FixtureRequest) -> Iterator[str]:
    port = _free_port()
    cmd = [
        sys.executable,
        "-m",
        "paycore.cli",
        "serve",
        "--framework",
        request.param,
        "--port",
        str(port),
        "--database-url",
        "memory://",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}/paycore"
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            try:
                if httpx.get(f"{base}/prices", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        else:
            pytest.fail("paycore serve did not answer within 30 s")
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_readme_has_python_examples() -> None:
    assert len(BLOCKS) >= 4, "README.md lost its Python examples"
    assert OVER_HTTP, "README.md lost its HTTP session example"


def _run(code: str) -> dict[str, object]:
    namespace: dict[str, object] = {"__name__": "readme"}
    exec(compile(code, str(README), "exec"), namespace)  # noqa: S102 - our own README
    return namespace


LOCAL = [b for b in BLOCKS if "PAYCORE_URL" not in b]
OVER_HTTP = [b for b in BLOCKS if "PAYCORE_URL" in b]


@pytest.mark.parametrize("code", LOCAL, ids=[f"local{i}" for i in range(len(LOCAL))])
def test_readme_python_block_runs(
    code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _run(code)


@pytest.mark.parametrize("code", OVER_HTTP, ids=[f"http{i}" for i in range(len(OVER_HTTP))])
def test_readme_http_session_against_paycore_serve(
    code: str, served: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(os.environ, "PAYCORE_URL", served)
    namespace = _run(code)
    read, invoice = namespace["read"], namespace["invoice"]
    assert isinstance(read, dict) and isinstance(invoice, dict)
    assert read["status"] == "init" and read["guid"] == invoice["guid"]
    # paycore serve points paymentUrl at its own checkout page, which answers.
    assert read["paymentUrl"].startswith(served + "/checkout/?invoice=")
    assert httpx.get(read["paymentUrl"]).status_code == 200
