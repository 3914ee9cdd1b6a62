"""``paycore demo`` as a user runs it: a real subprocess, its printed story, its exit status,
and -- the part a demo most often gets wrong -- nothing left running afterwards, whether it
finished, failed or was stopped with Ctrl-C.

"Nothing left" is checked from the outside: anvil's process group has no member, the
ports anvil, the shop and the webhook receiver printed refuse connections, and the temp
dir holding the SQLite file is gone.
"""

from __future__ import annotations

import contextlib
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from paycore.demo import chain as demo_chain
from paycore.demo.errors import DemoError

pytestmark = pytest.mark.slow  # the demo runs as a process tree

RUN_TIMEOUT = 60.0
#: How long a Ctrl-C may take to stop everything: the worker, the servers, anvil.
PROMPT = 5.0


def _command() -> list[str]:
    script = Path(sys.executable).with_name("paycore")
    return [str(script)] if script.exists() else [sys.executable, "-m", "paycore.runtime.cli"]


def _require_anvil() -> None:
    try:
        demo_chain.find_anvil()
    except DemoError as exc:
        if os.environ.get("PAYCORE_REQUIRE_NODE") == "1":
            pytest.fail(f"PAYCORE_REQUIRE_NODE=1 but {exc}")
        pytest.skip(str(exc))


class Demo:
    """A running ``paycore demo``; its output is read on a thread so waits can time out."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [*_command(), "demo"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,  # signals come from this test only, not a terminal
        )
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def until(self, marker: str, timeout: float = RUN_TIMEOUT) -> str:
        """Read until a line containing ``marker``; fail on timeout or end of output."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                pytest.fail(f"no {marker!r} within {timeout} s:\n" + self.text)
            if line is None:
                pytest.fail(f"the demo ended before {marker!r}:\n" + self.text)
            self.lines.append(line)
            if marker in line:
                return line

    def finish(self, timeout: float) -> int:
        status = self.process.wait(timeout=timeout)
        while (line := self._queue.get(timeout=5)) is not None:
            self.lines.append(line)
        return status

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def found(self, pattern: str) -> re.Match[str]:
        match = re.search(pattern, self.text)
        assert match, f"{pattern!r} not in:\n{self.text}"
        return match

    def kill_leftovers(self) -> None:
        """After a failed assertion: do not let this test leak what the demo did not stop."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
        anvil = re.search(r"anvil pid (\d+) at http://127\.0\.0\.1:(\d+)", self.text)
        if anvil is None:
            return
        pid, port = anvil.groups()
        try:  # only the very anvil this demo printed: a pid alone may have been reused
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            return
        if b"--port" in cmdline and port.encode() in cmdline:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(int(pid), signal.SIGKILL)


def _demo_factory_address() -> str:
    from paycore.chains.deploy import FactoryArgs
    from paycore.chains.evm.deploy import factory_address

    admin, recipient = demo_chain.dev_account(0), demo_chain.dev_account(1)
    return factory_address(
        FactoryArgs(
            admin.address, recipient.address, demo_chain.WITHDRAW_FEE, demo_chain.MAX_FEE, 0xFF
        )
    )


@pytest.fixture
def demo() -> Iterator[Demo]:
    _require_anvil()
    running = Demo()
    try:
        yield running
    finally:
        running.kill_leftovers()


def _group_members(pgid: int) -> list[int]:
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            # Fields after the parenthesised name: state, ppid, pgrp, ...
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _assert_nothing_left(demo: Demo) -> None:
    anvil = demo.found(r"anvil pid (\d+) at http://127\.0\.0\.1:(\d+)")
    pid, ports = int(anvil.group(1)), [int(anvil.group(2))]
    assert _group_members(pid) == [], "anvil's process group outlived the demo"
    for pattern in (r"shop http://127\.0\.0\.1:(\d+)/", r"webhook http://127\.0\.0\.1:(\d+)/"):
        if match := re.search(pattern, demo.text):
            ports.append(int(match.group(1)))
    assert [p for p in ports if _listening(p)] == []
    if storage := re.search(r"storage (\S+)/shop\.sqlite3", demo.text):
        assert not Path(storage.group(1)).exists(), "the temp dir was left behind"


@pytest.mark.node  # anvil comes from npm
@pytest.mark.anvil
def test_the_demo_tells_the_whole_story_and_cleans_up(demo: Demo) -> None:
    started = time.monotonic()
    demo.until("paycore demo:", RUN_TIMEOUT)  # the headline
    status = demo.finish(RUN_TIMEOUT)
    took = time.monotonic() - started
    assert status == 0, demo.text
    assert took < 30, f"the demo took {took:.1f} s"
    steps = re.findall(r"^\[\s*(\d+)/(\d+)\s+[\d.]+s\] (\S+)", demo.text, re.M)
    assert [int(n) for n, _total, _label in steps] == list(range(1, 14))
    assert [label for *_, label in steps] == [
        "anvil", "contracts", "shop", "owner", "session", "webhook", "invoice",
        "pay", "pay", "paid", "wallet", "withdraw", "balance",
    ]  # fmt: skip
    guid = demo.found(r"invoice ([0-9a-f-]{36}) \(init\)").group(1)
    url = demo.found(r"paymentUrl (\S+)").group(1)
    assert re.fullmatch(rf"http://127\.0\.0\.1:\d+/paycore/checkout/\?invoice={guid}", url)
    short = guid[:8]
    for channel in ("poll    ", "webhook "):  # both channels, in the order of the changes
        seen = re.findall(rf"{channel} invoice {short} (\w+): paid (\S+) of 10 USD", demo.text)
        assert seen == [("partialPaid", "4"), ("paid", "10")], demo.text
    assert demo.text.count("signature verified") == 2
    # The factory as `paycore contracts deploy` puts it: at its CREATE2 address.
    factory = demo.found(r"PaycoreFactory (0x[0-9a-fA-F]{40}) through the deterministic").group(1)
    assert factory == _demo_factory_address()
    # The invoice asked for "31337:USDT" and the page names the token from the chain's entry.
    demo.found(r"checkout asks: Send 10 USDT \(6 decimals, from the chain's token entry\)")
    demo.found(r"status paid: 10 of 10 USD in 2 payments")
    demo.found(r"wallet 0x[0-9a-fA-F]{40} deployed")
    demo.found(r"unsigned withdraw of 10 USDT from deposit index\(es\) \[0\], fee 0\.001 ETH")
    demo.found(r"recipient 0x[0-9a-fA-F]{40} holds 10 USDT")
    assert demo.lines[-2:] == [
        "cleaned up: worker stopped, shop stopped, receiver stopped, anvil stopped, "
        "temp dir removed",
        demo.lines[-1],
    ]
    assert re.fullmatch(
        r"paycore demo: the invoice is paid and its money withdrawn \([\d.]+ s\)", demo.lines[-1]
    )
    _assert_nothing_left(demo)


@pytest.mark.node
@pytest.mark.anvil
@pytest.mark.parametrize(
    "marker",
    [
        "[ 2/13",  # deploying: only anvil runs
        "[ 8/13",  # waiting for the watcher: worker, shop and receiver all busy
        "[12/13",  # withdrawing
    ],
)
def test_ctrl_c_stops_everything_promptly(demo: Demo, marker: str) -> None:
    demo.until(marker)
    demo.process.send_signal(signal.SIGINT)
    sent = time.monotonic()
    status = demo.finish(PROMPT + 10)
    assert time.monotonic() - sent < PROMPT, demo.text
    assert status == 130, demo.text
    last = demo.lines[-1]
    assert re.fullmatch(r"paycore demo: interrupted at step \d+/13 \(.+\) \([\d.]+ s\)", last)
    assert "anvil stopped" in demo.lines[-2] and "temp dir removed" in demo.lines[-2]
    _assert_nothing_left(demo)


def test_a_missing_anvil_says_to_run_npm_ci(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(demo_chain, "REPO_ROOT", tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(DemoError, match="run `npm ci`"):
        demo_chain.find_anvil()


def test_a_failed_step_exits_1_with_one_line() -> None:
    done = subprocess.run(
        [*_command(), "demo", "--anvil", "/nonexistent/anvil"],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    assert done.returncode == 1
    [line] = done.stderr.splitlines()
    assert re.fullmatch(
        r"paycore demo: failed at step 1/13 \(anvil\): --anvil /nonexistent/anvil: "
        r"no executable file there \([\d.]+ s\)",
        line,
    )
