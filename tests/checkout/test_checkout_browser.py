"""The checkout page in a real Chromium against a real server, under both adapters.

The server runs in this process on a loopback port with a memory gateway the test holds, so
the test can record deposits the way a chain watcher would and watch the open page go from
init to partialPaid to paid without a reload. Screenshots land in test-artifacts/.

Needs Debian's chromium (``apt-get install -y chromium``) and the npm package playwright-core;
skipped without them unless ``PAYCORE_REQUIRE_NODE=1`` (CI), where that is a failure.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from checkout_helpers import (
    CHAIN,
    DEPOSIT,
    PREFIX,
    USDT_ADDRESS,
    free_port,
    make_gateway,
    new_invoice,
    pay,
)

from paycore import Gateway

pytestmark = pytest.mark.node

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "node" / "checkout_browser.mjs"
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = "/usr/bin/chromium"
STEP_TIMEOUT = 60.0


def _missing() -> str | None:
    if shutil.which("node") is None:
        return "node is not installed"
    if not (ROOT / "node_modules" / "playwright-core" / "package.json").is_file():
        return "node_modules/playwright-core is missing (run npm ci)"
    if not os.access(CHROMIUM, os.X_OK):
        return f"{CHROMIUM} is missing (apt-get install -y chromium)"
    return None


@pytest.fixture(scope="module", autouse=True)
def _tools() -> None:
    missing = _missing()
    if missing is not None:
        if os.environ.get("PAYCORE_REQUIRE_NODE") == "1":
            pytest.fail(f"PAYCORE_REQUIRE_NODE=1 but {missing}")
        pytest.skip(missing)


# -- a real server in a thread ------------------------------------------------------------------


@contextmanager
def _serve_litestar(gateway: Gateway, port: int) -> Iterator[None]:
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
def _serve_flask(gateway: Gateway, port: int) -> Iterator[None]:
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


def _wait_until_up(base: str) -> None:
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


@pytest.fixture(params=["litestar", "flask"])
def served(request: pytest.FixtureRequest) -> Iterator[tuple[str, Gateway, str]]:
    gateway = make_gateway()
    port = free_port()
    serve = _serve_litestar if request.param == "litestar" else _serve_flask
    base = f"http://127.0.0.1:{port}{PREFIX}"
    try:
        with serve(gateway, port):
            _wait_until_up(base)
            yield base, gateway, request.param
    finally:
        gateway.close()


# -- the Node side -------------------------------------------------------------------------------


class Browser:
    """The Node driver as a subprocess: its JSON lines in, our "next" lines out."""

    def __init__(self, config: dict[str, Any]) -> None:
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


def test_checkout_page_follows_an_invoice_to_paid(served: tuple[str, Gateway, str]) -> None:
    base, gateway, framework = served
    invoice = new_invoice(gateway)
    artifacts = ARTIFACTS / framework
    artifacts.mkdir(parents=True, exist_ok=True)
    browser = Browser(
        {
            "base": base,
            "guid": invoice.guid,
            "artifacts": str(artifacts),
            "chromium": CHROMIUM,
        }
    )
    try:
        _follow(browser, gateway, invoice.guid)
    finally:
        browser.close()
    for name in ("init", "init-mobile", "partial", "paid", "not-found", "expired"):
        assert (artifacts / f"checkout-{name}.png").stat().st_size > 5000


def _follow(browser: Browser, gateway: Gateway, guid: str) -> None:
    step = browser.step("rendered")
    first, later = step["first"], step["later"]
    assert (first["state"], first["status"], first["badge"]) == ("init", "init", "Awaiting payment")
    assert first["description"] == "Order #1042: two mugs"
    assert first["amountVs"] == "$25.00"
    assert first["amountToken"] == "0.0125 ETH"  # 25 USD at 2000 USD/ETH
    assert first["address"] == DEPOSIT
    assert first["network"] == f"anvil (chain {CHAIN})"
    link = f"ethereum:{DEPOSIT}@{CHAIN}?value=12500000000000000"
    assert first["walletHref"] == link
    assert first["qrSrc"].endswith("checkout/qr?data=" + _quoted(link))
    assert first["qrWidth"] > 0 and first["qrVisible"] and first["qrReason"] == "exact"
    assert "0.0125 ETH" in first["qrAlt"]
    assert first["choices"] == ["ETH", "USDT", "0xe7f1…0512"]
    assert not first["paidVisible"] and not first["paymentsVisible"]
    # 90 hours by default, counting down
    assert 89 * 3600 < first["seconds"] <= 90 * 3600 and first["countdown"].startswith("3 d 17 h")
    assert later["seconds"] < first["seconds"]

    usdt, unpriced = step["usdt"], step["unpriced"]
    assert usdt["amountToken"] == "25 USDT"
    assert usdt["walletHref"] == (
        f"ethereum:{USDT_ADDRESS}@{CHAIN}/transfer?address={DEPOSIT}&uint256=25000000"
    )
    assert unpriced["qrReason"] == "price" and "no price" in unpriced["amountToken"]
    assert unpriced["walletHref"] == f"ethereum:{DEPOSIT}@{CHAIN}"
    assert step["copied"] == {
        "button": "Copied",
        "clipboard": DEPOSIT,
        "announced": f"Copied {DEPOSIT}",  # for screen readers, in a live region
    }

    pay(gateway, "0.005", tx=1)  # $10 of $25
    browser.next()
    step = browser.step("partial")
    partial = step["partial"]
    assert (partial["state"], partial["badge"]) == ("partialPaid", "Partially paid")
    assert partial["marker"] == "no reload" and step["url"].endswith(f"?invoice={guid}")
    assert partial["paidVisible"] and partial["paidVs"] == "$10.00"
    assert (partial["tokenLabel"], partial["amountToken"]) == ("Still to send", "0.0075 ETH")
    assert partial["walletHref"] == f"ethereum:{DEPOSIT}@{CHAIN}?value=7500000000000000"
    assert partial["waitedMs"] < 8000  # polled every 2.5 s
    assert partial["paymentsVisible"]
    payments = [p.split("\n") for p in partial["payments"]]
    assert payments == [["0.005 ETH", "$10.00", "0x0000…0001"]]  # amount, value, tx

    pay(gateway, "0.0075", tx=2)  # the remaining $15
    browser.next()
    paid = browser.step("paid")["paid"]
    assert (paid["state"], paid["badge"]) == ("paid", "Paid")
    assert paid["marker"] == "no reload"
    assert paid["paidVs"] == "$25.00" and paid["countdown"] == "Paid"
    assert not paid["qrVisible"]  # nothing left to send
    assert len(paid["payments"]) == 2 and paid["payments"][1].startswith("0.0075 ETH")
    assert paid["title"].startswith("Paid")

    errors = browser.step("errors")
    missing = "00000000-0000-4000-8000-000000000000"
    assert f'No invoice "{missing}" exists' in errors["notFound"]["text"]
    assert not errors["notFound"]["invoiceVisible"]
    assert "names no invoice" in errors["noGuid"]
    assert "exists" in errors["badGuid"]

    expiring = new_invoice(gateway, deadlineSecs=5, description="A quick one")
    browser.next(expiring.guid)
    expiry = browser.step("expired")
    assert expiry["before"]["status"] == "init" and expiry["before"]["seconds"] <= 5
    assert expiry["before"]["description"] == "A quick one"
    expired = expiry["expired"]
    assert (expired["badge"], expired["countdown"]) == ("Expired", "Expired")
    assert not expired["qrVisible"] and "Do not send" in expired["statusText"]

    done = browser.step("done")
    assert done["problems"] == [] and done["foreign"] == []  # no errors, nothing off-origin
    assert gateway.get_invoice(guid).status.value == "paid"


def _quoted(text: str) -> str:
    from urllib.parse import quote

    # encodeURIComponent leaves A-Z a-z 0-9 - _ . ! ~ * ' ( ) alone
    return quote(text, safe="-_.!~*'()")
