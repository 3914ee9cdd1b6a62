"""README's Python blocks run as written, so the documentation cannot drift from the code.

Blocks that talk to a gateway over HTTP find it through ``PAYCORE_URL``; the test serves one
with ``paycore serve`` (the command the README shows) in a real subprocess, for each
framework.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
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
    """The fast tiers README documents are what `make test-core` and `make test-fast` run:
    every slow tier left out; test-core only the core and conformance suites."""
    [block] = [b for b in SHELL_BLOCKS if "make test-fast" in b]
    commands = [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]
    assert commands == ["make test-core", "make test-fast", "make lint", "make docs"]
    core = subprocess.run(
        ["make", "-n", "-B", "test-core"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert "tests/domain tests/accounting" in core.stdout and "tests/conformance" in core.stdout
    dry = subprocess.run(
        ["make", "-n", "-B", "test-core", "test-fast", "lint", "docs"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    )  # fmt: skip
    tiers = "browser or anvil or postgres or redis or fuzz or node or slow"
    assert f'-m "not ({tiers})"' in dry.stdout
    assert f'-m "not ({tiers})"' in README.read_text(encoding="utf-8")
    assert "-n auto" in dry.stdout and "mypy src" in dry.stdout and "--strict" in dry.stdout


@pytest.mark.slow  # `paycore serve` in a subprocess
def test_serve_block_runs_as_written(tmp_path: Path) -> None:
    """The `paycore serve` block, run line by line (on a free port instead of 8000)."""
    [block] = [b for b in SHELL_BLOCKS if "paycore serve" in b and "curl" in b]
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


def _commands(block: str) -> list[str]:
    lines = [line.split("#")[0].strip() for line in block.splitlines()]
    return [line for line in lines if line]


def _answering(proc: subprocess.Popen[bytes], url: str) -> None:
    deadline = time.monotonic() + 60
    while True:
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, f"nothing answered {url}"
        time.sleep(0.2)


def _stopped(proc: subprocess.Popen[bytes]) -> int:
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise


@pytest.mark.slow  # gunicorn and the worker in subprocesses
def test_production_block_runs_as_written(tmp_path: Path) -> None:
    """ "Running in production": the exports, `paycore migrate`, then the web processes and
    the worker side by side -- on a SQLite file instead of the PostgreSQL host, without the
    Redis one, on a free port -- until SIGTERM stops both cleanly."""
    [block] = [b for b in SHELL_BLOCKS if "paycore worker" in b and "--workers" in b]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAYCORE_")}
    bin_dir = Path(sys.executable).parent
    port = str(_free_port())
    started: list[subprocess.Popen[bytes]] = []
    try:
        for command in _commands(block):
            if command.startswith("export "):
                name, _, value = command.removeprefix("export ").partition("=")
                if name == "PAYCORE_DATABASE_URL":
                    assert value.startswith("postgresql://")
                    env[name] = f"sqlite:///{tmp_path / 'paycore.sqlite3'}"
                else:
                    assert name == "PAYCORE_REDIS_URL"
                continue
            args = command.replace("8000", port).split()
            args[0] = str(bin_dir / args[0])
            if args[1] == "migrate":
                subprocess.run(args, env=env, check=True, capture_output=True, timeout=60)
                continue
            started.append(
                subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            )
        web, worker = started
        assert "--workers" in web.args
        _answering(web, f"http://127.0.0.1:{port}/paycore/prices")
        assert worker.poll() is None
    finally:
        codes = [_stopped(proc) for proc in started]
    assert codes == [0, 0]


@pytest.mark.slow  # gunicorn in subprocesses
def test_gunicorn_commands_run_as_written(tmp_path: Path) -> None:
    """Each host app under gunicorn directly, as README.md writes the command."""
    [block] = [
        b for b in SHELL_BLOCKS if b.lstrip().startswith("# Flask: behind paycore's ASGI front")
    ]
    commands = _commands(block)
    assert [c.split("'")[1] for c in commands] == [
        "paycore_flask:create_asgi_app()",
        "paycore_litestar:create_app()",
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAYCORE_")}
    env["PAYCORE_DATABASE_URL"] = f"sqlite:///{tmp_path / 'paycore.sqlite3'}"
    for command in commands:
        port = str(_free_port())
        args = shlex.split(command.replace("0.0.0.0:8000", f"127.0.0.1:{port}"))
        args[0] = str(Path(sys.executable).with_name(args[0]))
        proc = subprocess.Popen(
            args, env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        try:
            _answering(proc, f"http://127.0.0.1:{port}/paycore/prices")
        finally:
            assert _stopped(proc) == 0
