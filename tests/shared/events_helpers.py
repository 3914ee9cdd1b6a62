"""Real parts for the webhook tests: an HTTP receiver on 127.0.0.1 that verifies signatures
the way a merchant's would (the ``standardwebhooks`` package), and a merchant that makes
invoices change.

The receiver can be down (nothing listening: connection refused), failing (500), slow, or
up, and records every request it sees, so tests can count deliveries by ``webhook-id``.
"""

from __future__ import annotations

import json
import math
import secrets
import select
import socket
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs
from standardwebhooks import Webhook

from paycore import Deposit, Gateway, Settings
from paycore.domain.changes import ALL_TYPES
from paycore.storage import Storage
from paycore.webhooks.config import set_webhook

CHAIN = 31337
TOKEN = "0x5FbDB2315678afecb367f032d93F642f64180aa3"
USDC = f"{CHAIN}:{TOKEN}"
OWNER = "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359"
OTHER_OWNER = "0x2222222222222222222222222222222222222222"
PAYER = "0x" + "22" * 20

#: Retries in tenths of a second, so an outage and its recovery fit in a test.
FAST = {
    "webhook_retry_schedule": (0.05, 0.1, 0.2),
    "webhook_retry_every": 0.3,
    "webhook_retry_horizon": 120.0,
    "webhook_timeout": 2.0,
    "webhook_lease": 3.0,
    "webhook_allow_private": True,
    "webhook_concurrency": 4,
    "worker_poll_interval": 0.05,
    "worker_sweep_interval": 0.1,
}

#: The same as environment variables, for worker subprocesses.
FAST_ENV = {
    "PAYCORE_" + name.upper(): ",".join(map(str, value)) if isinstance(value, tuple) else str(value)
    for name, value in FAST.items()
}


def fast_settings(database_url: str = "memory://", **overrides: Any) -> Settings:
    return Settings(database_url=database_url, prices={USDC: "1"}, **{**FAST, **overrides})


def wait_until(check: Callable[[], bool], timeout: float = 20.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.02)


@attrs.frozen
class Received:
    webhook_id: str
    guid: str
    status: str
    payments: int  # how many payments the invoice had: rises with each event of an invoice
    accepted: bool  # answered 2xx
    verified: bool  # the signature checked out with the owner's secret
    at: float  # time.time() on arrival
    body: dict[str, Any]
    headers: dict[str, str]


class Receiver:
    """A merchant's webhook endpoint on 127.0.0.1; ``mode`` is "up", "error" or "slow",
    and ``down()``/``up()`` close and reopen the listening socket on the same port."""

    def __init__(self, secret: str = "", *, slow_seconds: float = 1.0) -> None:
        self.secret = secret
        self.mode = "up"
        self.slow_seconds = slow_seconds
        self.requests: list[Received] = []
        self.lock = threading.Lock()
        self.in_flight = 0
        self.port = 0
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._listen()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks/paycore"

    def _listen(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                receiver._handle(self)

            def log_message(self, *_args: object) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        server.daemon_threads = True
        self.port = server.server_address[1]
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    def _handle(self, request: BaseHTTPRequestHandler) -> None:
        body = request.rfile.read(int(request.headers.get("content-length", "0")))
        headers = {k.lower(): v for k, v in request.headers.items()}
        try:
            Webhook(self.secret).verify(body, headers)
            verified = True
        except Exception:
            verified = False
        mode = self.mode
        data = json.loads(body)
        record = Received(
            webhook_id=headers.get("webhook-id", ""),
            guid=data["guid"],
            status=data["status"],
            payments=len(data["payments"]),
            accepted=mode != "error",
            verified=verified,
            at=time.time(),
            body=data,
            headers=headers,
        )
        with self.lock:
            self.requests.append(record)
            self.in_flight += 1
        try:
            if mode == "slow":
                time.sleep(self.slow_seconds)
            status = 500 if mode == "error" else 200
            request.send_response(status)
            request.send_header("content-length", "2")
            request.end_headers()
            request.wfile.write(b"ok")
        except OSError:
            pass  # the dispatcher went away mid-request (a killed worker)
        finally:
            with self.lock:
                self.in_flight -= 1

    def down(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def up(self, mode: str = "up") -> None:
        self.mode = mode
        if self._server is None:
            self._listen()

    def close(self) -> None:
        self.down()

    # -- what arrived ---------------------------------------------------------------------
    def snapshot(self) -> list[Received]:
        with self.lock:
            return list(self.requests)

    def accepted(self) -> list[Received]:
        return [r for r in self.snapshot() if r.accepted]

    def accepted_ids(self) -> Counter[str]:
        return Counter(r.webhook_id for r in self.accepted())

    def order_by_invoice(self) -> dict[str, list[int]]:
        """Per invoice, the payment counts of accepted events in arrival order."""
        seen: dict[str, list[int]] = defaultdict(list)
        for r in self.accepted():
            seen[r.guid].append(r.payments)
        return dict(seen)


class Merchant:
    """Makes invoices and pays them in parts, so each invoice emits a known run of events:
    ``parts`` deposits -> ``parts`` events (partialPaid ..., then paid)."""

    def __init__(self, gateway: Gateway, owner: str = OWNER) -> None:
        self.gateway = gateway
        self.owner = owner
        self.count = 0
        # Addresses and tx hashes unique across merchants sharing one database.
        self.prefix = secrets.token_hex(4)

    def webhook(self, url: str) -> str:
        """Set the webhook URL and return the owner's secret."""
        return set_webhook(self.gateway.storage, self.owner, url, allow_private=True).secret

    def endpoint(self, url: str, types: Iterable[str] = ALL_TYPES) -> str:
        """Add a webhook endpoint sent ``types`` (every type by default); its secret."""
        return self.gateway.webhooks.endpoints.create(self.owner, url, types).secret

    def invoice(self, **extra: Any) -> tuple[str, str]:
        """(guid, deposit address) of a new 100 USD invoice at its own address."""
        self.count += 1
        address = f"0x{self.prefix}{self.count:032x}"
        fields = {
            "value": "100",
            "chainId": CHAIN,
            "description": f"order {self.count}",
            "acceptedTokens": [USDC],
            "address": address,
            **extra,
        }
        invoice = self.gateway.create_invoice(self.owner, fields)
        return invoice.guid, invoice.address

    def pay(self, address: str, amount: str, n: int) -> None:
        deposit = Deposit(
            CHAIN,
            f"0x{self.prefix}{n:056x}",
            0,
            TOKEN,
            PAYER,
            address,
            Decimal(amount),
            self.gateway.now(),
        )
        assert self.gateway.record_deposit(deposit), "the deposit changed nothing"

    def invoices_paid_in_parts(self, invoices: int, parts: int = 3) -> list[str]:
        """Interleaved across invoices, so per-invoice order is tested against a mixed queue."""
        created = [self.invoice() for _ in range(invoices)]
        amounts = [f"{Decimal(100) / parts:.6f}"] * (parts - 1)
        amounts.append(str(Decimal(100) - sum(Decimal(a) for a in amounts)))
        n = self.count * 1000
        for amount in amounts:
            for _guid, address in created:
                n += 1
                self.pay(address, amount, n)
        return [guid for guid, _ in created]


def gateway_on(storage: Storage, settings: Settings | None = None) -> Gateway:
    return Gateway(settings or fast_settings(), storage=storage, entry_points=False)


class Dripper:
    """A hostile webhook target on 127.0.0.1: it answers ``HTTP/1.1 200 OK`` one byte every
    ``every`` seconds and never finishes -- at most ``most`` bytes, then it hangs up. Each
    connection's (start, end) is kept, the end being when the client hung up (seen at once
    with ``select``) or the drip ran out, so tests can tell how many POSTs it held at once
    and for how long."""

    def __init__(self, every: float = 1.0, most: int = 30) -> None:
        self.every = every
        self.most = most
        self.server = socket.create_server(("127.0.0.1", 0))
        self.lock = threading.Lock()
        self.spans: list[list[float]] = []  # [start, end or inf] per connection
        self.closed = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.getsockname()[1]}/hook"

    def _serve(self) -> None:
        while not self.closed.is_set():
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            span = [time.monotonic(), math.inf]
            with self.lock:
                self.spans.append(span)
            threading.Thread(target=self._drip, args=(conn, span), daemon=True).start()

    def _drip(self, conn: socket.socket, span: list[float]) -> None:
        answer = (b"HTTP/1.1 200 OK\r\n" * self.most)[: self.most]
        try:
            with conn:
                for byte in answer:
                    readable, _, _ = select.select([conn], [], [], self.every)
                    if readable and not conn.recv(65536):
                        return  # the client hung up
                    if self.closed.is_set():
                        return
                    conn.sendall(bytes([byte]))
        except OSError:
            return
        finally:
            with self.lock:
                span[1] = time.monotonic()

    def connections(self) -> int:
        with self.lock:
            return len(self.spans)

    def held_at_once(self, slack: float = 0.2) -> int:
        """The most connections open at one instant (``slack`` s of a hang-up's news allowed
        to overlap the next connection)."""
        with self.lock:
            spans = [(start, end - slack) for start, end in self.spans]
        return max((sum(1 for s, e in spans if s <= t < e) for t, _ in spans), default=0)

    def durations(self) -> list[float]:
        """Seconds each finished connection lasted."""
        with self.lock:
            return [end - start for start, end in self.spans if end != math.inf]

    def close(self) -> None:
        self.closed.set()
        self.server.close()
