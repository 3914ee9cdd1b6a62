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
        "paycore.runtime.cli",
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
@pytest.mark.slow  # `paycore serve` in a subprocess, per framework
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


SHELL_BLOCKS = re.findall(r"```sh\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
ROOT = README.parent


def test_every_setting_is_in_the_configuration_reference() -> None:
    import attrs

    from paycore.config import ChainConfig, Settings

    text = README.read_text(encoding="utf-8")
    missing = [f.name for f in attrs.fields(Settings) if f"| `{f.name}` | `PAYCORE_" not in text]
    missing += [f.name for f in attrs.fields(ChainConfig) if f"| `{f.name}` |" not in text]
    assert missing == [], "document these options in README.md's Configuration section"


def test_quickstart_commands_are_the_makefile_targets() -> None:
    """`make demo` and `make test` themselves run in CI (.ci/run) and tests/demo; here the
    block is checked to name exactly those targets, and make to know what they do."""
    [quickstart] = [b for b in SHELL_BLOCKS if "make demo" in b]
    commands = [line.split("#")[0].strip() for line in quickstart.splitlines() if line.strip()]
    assert commands == ["make demo", "make test"]
    for target, expected in (("demo", "paycore demo"), ("test", "-m pytest")):
        dry = subprocess.run(
            ["make", "-n", "-B", target], cwd=ROOT, capture_output=True, text=True, check=True
        )
        assert expected in dry.stdout


def test_working_commands_are_the_makefile_targets() -> None:
    """The fast tier README documents is what `make test-fast` runs: every slow tier left out."""
    [block] = [b for b in SHELL_BLOCKS if "make test-fast" in b]
    commands = [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]
    assert commands == ["make test-fast", "make lint", "make docs"]
    dry = subprocess.run(
        ["make", "-n", "-B", "test-fast", "lint", "docs"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    )  # fmt: skip
    tiers = "browser or anvil or postgres or redis or fuzz or node or slow"
    assert f'-m "not ({tiers})"' in dry.stdout
    assert f'-m "not ({tiers})"' in README.read_text(encoding="utf-8")
    assert "-n auto" in dry.stdout and "mypy src" in dry.stdout and "--strict" in dry.stdout


@pytest.mark.slow  # `paycore serve` in a subprocess
def test_serve_block_runs_as_written(tmp_path: Path) -> None:
    """The `paycore serve` block, run line by line (on a free port instead of 8000)."""
    [block] = [b for b in SHELL_BLOCKS if "paycore serve" in b]
    lines = [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]
    port = str(_free_port())
    serve_cmd, *curls = [line.replace("8000", port) for line in lines]
    args = serve_cmd.split()
    args[0] = str(Path(sys.executable).with_name("paycore"))
    args = [a.replace("sqlite:///gw.sqlite3", f"sqlite:///{tmp_path / 'gw.sqlite3'}") for a in args]
    proc = subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                httpx.get(f"http://127.0.0.1:{port}/paycore/prices", timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        for curl in curls:
            out = subprocess.run(curl.split(), capture_output=True, text=True, timeout=30)
            assert out.returncode == 0 and out.stdout.startswith("{"), curl
        assert '"openapi":"3.1.0"' in out.stdout
    finally:
        proc.terminate()
        proc.wait(timeout=10)
