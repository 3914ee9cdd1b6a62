"""Real parts for the GET /ws tests: both adapters under real servers on loopback ports, a
real WebSocket client (``websockets``), keys signed with eth-account (not paycore's code),
and a merchant whose invoices change through the gateway.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

import attrs
import httpx
from eth_account import Account
from eth_account.messages import encode_defunct
from eth_account.signers.local import LocalAccount
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from paycore import Deposit, Gateway, Invoice, Settings
from paycore.domain.tokens import NATIVE

PREFIX = "/paycore"
CHAIN = 31337
ETH = f"{CHAIN}:{NATIVE}"
PAYER = "0x" + "22" * 20
FRAMEWORKS = ["flask", "litestar"]


# -- keys and signatures -------------------------------------------------------------------
def account(label: str) -> LocalAccount:
    acct: LocalAccount = Account.from_key(hashlib.sha256(label.encode()).digest())
    return acct


def sign(acct: LocalAccount, text: str) -> str:
    return "0x" + bytes(acct.sign_message(encode_defunct(text=text)).signature).hex()


def public_key(acct: LocalAccount) -> str:
    return "0x04" + acct._key_obj.public_key.to_bytes().hex()


def registration(owner: LocalAccount, key: LocalAccount, **extra: Any) -> dict[str, Any]:
    pub = public_key(key)
    return {"ownerAddress": owner.address, "publicKey": pub, "signature": sign(owner, pub), **extra}


def register_frame(key: LocalAccount, challenge: str, nonce: int, **extra: Any) -> str:
    """What a client sends: ``sess:{nonce}:{sha256hex(challenge text)}``, signed."""
    digest = hashlib.sha256(challenge.encode("ascii")).hexdigest()
    frame = {"type": "register", "nonce": nonce, "signature": sign(key, f"sess:{nonce}:{digest}")}
    return json.dumps({**frame, **extra})


def session_headers(key: LocalAccount, nonce: int, signed: bytes) -> dict[str, str]:
    digest = hashlib.sha256(signed).hexdigest()
    return {
        "x-session-nonce": str(nonce),
        "x-session-signature": sign(key, f"sess:{nonce}:{digest}"),
    }


class Nonces:
    """Millisecond-timestamp nonces, strictly increasing within the test process."""

    def __init__(self) -> None:
        self.last = int(time.time() * 1000)

    def next(self) -> int:
        self.last = max(self.last + 1, int(time.time() * 1000))
        return self.last


# -- a clock the tests can move ------------------------------------------------------------
@attrs.define
class Clock:
    offset: float = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset


def make_gateway(clock: Clock | None = None, **overrides: Any) -> Gateway:
    values: dict[str, Any] = {
        "database_url": "memory://",
        "prices": {ETH: "2000"},
        "checkout_url": "http://127.0.0.1/checkout",
        "ws_recheck_interval": 0.2,
    }
    values.update(overrides)
    return Gateway(Settings(**values), entry_points=False, clock=clock or Clock())


# -- the merchant side ---------------------------------------------------------------------
class Merchant:
    """Creates invoices at unique addresses and pays them with confirmed deposits."""

    def __init__(self, gateway: Gateway, owner: LocalAccount) -> None:
        self.gateway = gateway
        self.owner = owner
        self.tag = secrets.token_hex(4)
        self.count = 0

    def invoice(self, value: str = "20", **extra: Any) -> Invoice:
        self.count += 1
        fields = {
            "description": f"order {self.count}",
            "value": value,
            "chainId": CHAIN,
            "acceptedTokens": [ETH],
            "address": f"0x{self.tag}{self.count:032x}",
            **extra,
        }
        return self.gateway.create_invoice(self.owner.address, fields)

    def pay(self, invoice: Invoice, eth: str) -> list[Invoice]:
        self.count += 1
        deposit = Deposit(
            CHAIN,
            f"0x{self.tag}{self.count:056x}",
            -1,
            NATIVE,
            PAYER,
            invoice.address,
            Decimal(eth),
            self.gateway.now(),
        )
        return self.gateway.record_deposit(deposit)


# -- servers -------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_until(check: Callable[[], bool], timeout: float = 20.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.01)


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1).status_code == 200
    except httpx.TransportError:
        return False


@contextlib.contextmanager
def served(framework: str, gateway: Gateway) -> Iterator[str]:
    """The framework's standalone host app around ``gateway``, under its real server in a
    thread of this process (werkzeug threaded / uvicorn; ``flask-asgi``: the Flask app
    behind paycore's ASGI front with two threads, under uvicorn); yields
    ``http://127.0.0.1:port``."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    if framework == "flask":
        from werkzeug.serving import make_server

        from paycore_flask import create_app as flask_app

        server = make_server("127.0.0.1", port, flask_app(gateway=gateway), threaded=True)
        thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        thread.start()
        try:
            wait_until(lambda: _answers(base + "/health"), what="the flask server")
            yield base
        finally:
            server.shutdown()
            thread.join(timeout=10)
        return
    import uvicorn

    app: Any
    if framework == "flask-asgi":  # Flask behind paycore's ASGI front, as paycore serve runs it
        from paycore_flask import create_app as flask_app
        from paycore_flask.asgi import AsgiFront

        app = AsgiFront.for_app(flask_app(gateway=gateway), threads=2)
    else:
        from paycore_litestar import create_app as litestar_app

        app = litestar_app(gateway=gateway)
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
    uv = uvicorn.Server(config)
    thread = threading.Thread(target=uv.run, daemon=True)
    thread.start()
    try:
        wait_until(lambda: _answers(base + "/health"), what="the uvicorn server")
        yield base
    finally:
        uv.should_exit = True
        thread.join(timeout=10)


def ws_url(base: str) -> str:
    return base.replace("http://", "ws://", 1) + PREFIX + "/ws"


def start_serve_process(
    framework: str, database_url: str, env: dict[str, str], log_path: str
) -> tuple[subprocess.Popen[bytes], str]:
    """``paycore serve`` as its own process (a web worker); returns it and its base URL."""
    port = free_port()
    command = [sys.executable, "-m", "paycore.runtime.cli", "serve", "--framework", framework]
    command += ["--port", str(port), "--database-url", database_url]
    log = open(log_path, "wb")  # noqa: SIM115 - the child owns it
    process = subprocess.Popen(
        command, env={**os.environ, **env}, stdout=log, stderr=subprocess.STDOUT
    )
    log.close()
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while not _answers(base + "/health"):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            with open(log_path, errors="replace") as output:
                raise AssertionError(f"{framework} worker did not start:\n{output.read()}")
        time.sleep(0.05)
    return process, base


# -- the WebSocket client ------------------------------------------------------------------
@attrs.define
class Closed:
    code: int | None
    reason: str
    frames: list[Any]  # what arrived before the close, decoded


class Client:
    """A real client over a real socket: ``websockets``' sync client."""

    def __init__(self, base: str) -> None:
        self.conn: ClientConnection = connect(ws_url(base), open_timeout=10, close_timeout=5)
        first = self.recv()
        assert first["type"] == "challenge", first
        self.challenge: str = first["challenge"]

    def recv(self, timeout: float = 10.0) -> Any:
        return json.loads(self.conn.recv(timeout=timeout))

    def send(self, data: str | bytes) -> None:
        self.conn.send(data)

    def register(self, key: LocalAccount, nonce: int, **extra: Any) -> dict[str, Any]:
        self.send(register_frame(key, self.challenge, nonce, **extra))
        answer: dict[str, Any] = self.recv()
        return answer

    def closed(self, timeout: float = 10.0) -> Closed:
        """Read until the server closes; what came first and the close code and reason."""
        frames: list[Any] = []
        deadline = time.monotonic() + timeout
        try:
            while True:
                frames.append(json.loads(self.conn.recv(timeout=deadline - time.monotonic())))
        except ConnectionClosed:
            pass
        close = self.conn.protocol.close_rcvd
        return Closed(close.code if close else None, close.reason if close else "", frames)

    def nothing_within(self, seconds: float) -> bool:
        try:
            self.conn.recv(timeout=seconds)
        except TimeoutError:
            return True
        return False

    def close(self) -> None:
        self.conn.close()
