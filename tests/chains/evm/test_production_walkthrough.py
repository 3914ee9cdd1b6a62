"""docs/production.md, executed: its marked shell blocks run in order, on anvil and PostgreSQL.

The page is the operator's path to a real chain, so it is run rather than copied here:
``<!-- step -->`` blocks run in one shell whose exported variables carry from step to step
(a state file, as one terminal would keep them), ``<!-- step: background -->`` blocks start
the long-running processes, and only the values of the ``<!-- environment -->`` block are
taken from the page's local variant (``<!-- environment: local -->``), but for the ports and
the database, which are this machine's. The merchant's step registers a session key and a
webhook and creates an invoice through ``paycore serve``; the test then pays it from another
account, and the worker the page started marks it paid. Then both processes are stopped with
SIGTERM.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from evm_chain import Chain
from sqlalchemy.engine import URL

from paycore.chains.evm.deploy import batch_pay_address

pytestmark = pytest.mark.slow

PAGE = Path(__file__).parents[3] / "docs" / "production.md"
ETH = "31337:0x0000000000000000000000000000000000000000"
BLOCK = re.compile(
    r"<!-- (step(?:: background)?|environment(?:: local)?) -->\s*\n```sh\n(.*?)```", re.S
)
#: What the local variant sets beyond the production environment.
LOCAL_ONLY = {"PAYCORE_WEBHOOK_ALLOW_PRIVATE"}


def blocks() -> list[tuple[str, str]]:
    return [(kind, code) for kind, code in BLOCK.findall(PAGE.read_text())]


def exported_names(code: str) -> set[str]:
    return set(re.findall(r"^export (\w+)=", code, re.M))


def local_environment() -> dict[str, str]:
    """The local variant's values, as the shell reads them (quotes removed, comments dropped)."""
    [code] = [code for kind, code in blocks() if kind == "environment: local"]
    values: dict[str, str] = {}
    for line in code.splitlines():
        words = shlex.split(line, comments=True)
        if words:
            assert words[0] == "export", line
            name, _, value = words[1].partition("=")
            values[name] = value
    return values


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


class Shell:
    """One operator's terminal: steps run in ``cwd`` and exported variables persist."""

    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        self.cwd = cwd
        self.state = cwd / "state.sh"
        self.state.write_text("".join(f"export {k}={shlex.quote(v)}\n" for k, v in env.items()))
        self.base = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
        self.base.pop("PAYCORE_DATABASE_URL", None)
        self.background: list[tuple[str, subprocess.Popen[bytes]]] = []

    def run(self, code: str) -> str:
        script = f"set -eo pipefail\nsource {self.state}\n{code}\nexport -p > {self.state}.next\n"
        done = subprocess.run(
            ["bash", "-c", script],
            cwd=self.cwd,
            env=self.base,
            capture_output=True,
            timeout=240,
        )
        output = (done.stdout + done.stderr).decode(errors="replace")
        assert done.returncode == 0, f"step failed ({done.returncode}):\n{code}\n{output}"
        (self.cwd / "state.sh.next").replace(self.state)
        return output

    def start(self, code: str) -> subprocess.Popen[bytes]:
        name = f"bg{len(self.background)}"
        log = open(self.cwd / f"{name}.log", "wb")  # noqa: SIM115 - the child owns it
        process = subprocess.Popen(
            ["bash", "-c", f"source {self.state}\nexec {code.strip()}"],
            cwd=self.cwd,
            env=self.base,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        self.background.append((name, process))
        return process

    def log(self, process: subprocess.Popen[bytes]) -> str:
        name = next(n for n, p in self.background if p is process)
        return (self.cwd / f"{name}.log").read_text(errors="replace")

    def variable(self, name: str) -> str:
        found = re.search(rf"^declare -x {name}=\"(.*)\"$", self.state.read_text(), re.M)
        return found.group(1) if found else ""


@pytest.fixture
def shell_env(
    anvil_chain: Chain, postgres_schema: Callable[[], URL], tmp_path: Path
) -> Iterator[tuple[Shell, Chain, int]]:
    chain = anvil_chain
    port = free_port()
    environment = {
        **local_environment(),
        # this machine's: free ports and a fresh schema
        "RPC_URL": chain.rpc_url,
        "PAYCORE_DATABASE_URL": postgres_schema().render_as_string(hide_password=False),
        "PAYCORE_PUBLIC_URL": f"http://127.0.0.1:{port}",
        "PORT": str(port),
    }
    assert environment["CHAIN_ID"] == str(chain.chain_id)
    assert environment["PAYCORE_DEPLOYER_KEY"] == "0x" + bytes(chain.accounts[9].key).hex()
    with chain.isolated():
        shell = Shell(tmp_path, environment)
        try:
            yield shell, chain, port
        finally:
            for _, process in shell.background:
                if process.poll() is None:
                    process.kill()
                    process.wait(timeout=30)


def test_the_local_variant_gives_every_variable_the_page_needs() -> None:
    """The local variant replaces the environment blocks: the same names, both ways, and
    nothing more than the loopback webhook's permission."""
    production: set[str] = set()
    for kind, code in blocks():
        if kind == "environment":
            production |= exported_names(code)
    assert {"CHAIN_ID", "MERCHANT_KEY", "WEBHOOK_URL", "PAYCORE_PRICES"} <= production
    assert set(local_environment()) == production | LOCAL_ONLY
    assert local_environment()["PAYCORE_COINGECKO_ENABLED"] == "false"
    assert ETH in local_environment()["PAYCORE_PRICES"]
    kinds = [kind for kind, _ in blocks()]
    assert kinds.count("step") >= 6 and kinds.count("step: background") == 2


def test_production_walkthrough_on_anvil_and_postgres(
    shell_env: tuple[Shell, Chain, int],
) -> None:
    shell, chain, port = shell_env
    base = f"http://127.0.0.1:{port}"
    started: list[subprocess.Popen[bytes]] = []
    for kind, code in blocks():
        if kind.startswith("environment"):
            continue
        if kind == "step: background":
            started.append(shell.start(code))
            if len(started) == 1:  # the web processes: the next steps talk to them
                wait_until(lambda: _up(base), 60, f"paycore serve:\n{shell.log(started[0])}")
            else:
                wait_until(lambda: "worker started" in shell.log(started[1]), 60, "paycore worker")
            continue
        output = shell.run(code)
        if "contracts deploy" in code:
            factory = shell.variable("FACTORY")
            assert re.fullmatch(r"0x[0-9a-fA-F]{40}", factory), output
            assert chain.w3.eth.get_code(factory) != b""
            batch_pay = shell.variable("BATCH_PAY")
            assert batch_pay == batch_pay_address(), output
            assert chain.w3.eth.get_code(batch_pay) != b""
            assert "PAYCORE_DEPLOYER_KEY" not in shell.state.read_text()
        if "chains check" in code:
            assert f"chain {chain.chain_id}" in output or str(chain.chain_id) in output
    web, worker = started

    # The merchant's step created the invoice; the buyer's checkout reads it publicly.
    guid = shell.variable("INVOICE")
    with httpx.Client(base_url=f"{base}/paycore", timeout=30) as http:
        invoice = http.get(f"/invoice/{guid}").json()
        assert invoice["status"] == "init" and invoice["value"] == "30", invoice
        assert invoice["paymentUrl"].startswith(f"{base}/paycore/checkout")
        chain.send_value(chain.accounts[3], invoice["address"], 15 * 10**15)  # 0.015 ETH
        wait_until(
            lambda: http.get(f"/invoice/{guid}").json()["status"] == "paid",
            90,
            f"the worker to mark the invoice paid:\n{shell.log(worker)}",
        )

    sent = time.monotonic()
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=30) == 0, shell.log(worker)
    assert time.monotonic() - sent < 10.0 + 5.0  # webhook_timeout + 5 s
    web.send_signal(signal.SIGTERM)
    assert web.wait(timeout=30) == 0, shell.log(web)


def _up(base: str) -> bool:
    try:
        return httpx.get(base + "/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False
