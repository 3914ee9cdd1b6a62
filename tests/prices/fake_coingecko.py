"""A CoinGecko look-alike on loopback: a real HTTP server in a thread, answering
``/api/v3/simple/price`` and ``/api/v3/simple/token_price/{platform}`` in the public API's
shapes from a table the test sets, or with whatever a test scripts instead (429s with
Retry-After, 5xx, slow answers, garbage). Every request is recorded.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import attrs


@attrs.define
class Scripted:
    """One canned answer, used once, for the next request whose path starts with ``path``."""

    path: str
    status: int = 200
    body: bytes = b"{}"
    headers: dict[str, str] = attrs.field(factory=dict)
    delay: float = 0.0


@attrs.define
class Seen:
    path: str
    query: dict[str, str]
    headers: dict[str, str]


class FakeCoinGecko:
    def __init__(self) -> None:
        #: coin id -> {currency: price}; prices are Decimal strings so JSON keeps every digit.
        self.coins: dict[str, dict[str, str]] = {}
        #: platform -> lowercase contract address -> {currency: price}
        self.tokens: dict[str, dict[str, dict[str, str]]] = {}
        self.updated_at: int | None = None
        self.script: list[Scripted] = []
        self.seen: list[Seen] = []
        self.lock = threading.Lock()
        self.url = ""

    # -- what the test sets up ----------------------------------------------------------------
    def answer_next(self, path: str, **kwargs: Any) -> None:
        with self.lock:
            self.script.append(Scripted(path, **kwargs))

    def requests_to(self, prefix: str) -> list[Seen]:
        with self.lock:
            return [s for s in self.seen if s.path.startswith(prefix)]

    # -- the server side -------------------------------------------------------------------
    def handle(self, path: str, query: dict[str, str]) -> Scripted:
        with self.lock:
            for i, item in enumerate(self.script):
                if path.startswith(item.path):
                    return self.script.pop(i)
        wanted = [c for c in query.get("vs_currencies", "").split(",") if c]
        stamp = query.get("include_last_updated_at") == "true" and self.updated_at
        if path == "/api/v3/simple/price":
            table = {i: self.coins[i] for i in query.get("ids", "").split(",") if i in self.coins}
        elif path.startswith("/api/v3/simple/token_price/"):
            platform = self.tokens.get(path.rsplit("/", 1)[1], {})
            addresses = query.get("contract_addresses", "").lower().split(",")
            table = {a: platform[a] for a in addresses if a in platform}
        else:
            return Scripted(path, 404, b'{"error":"Not Found"}')
        out: dict[str, Any] = {}
        for key, prices in table.items():
            entry: dict[str, Any] = {c: _Raw(prices[c]) for c in wanted if c in prices}
            if stamp:
                entry["last_updated_at"] = self.updated_at
            out[key] = entry
        return Scripted(path, 200, _dumps(out))


class _Raw(str):
    """A number written into JSON exactly as given (no float round trip)."""


def _dumps(data: Any) -> bytes:
    def encode(value: Any) -> str:
        if isinstance(value, _Raw):
            return str(value)
        if isinstance(value, dict):
            return "{" + ",".join(f"{json.dumps(k)}:{encode(v)}" for k, v in value.items()) + "}"
        if isinstance(value, Decimal):
            return str(value)
        return json.dumps(value)

    return encode(data).encode()


def _handler(fake: FakeCoinGecko) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            parts = urlsplit(self.path)
            query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
            with fake.lock:
                fake.seen.append(
                    Seen(parts.path, query, {k.lower(): v for k, v in self.headers.items()})
                )
            answer = fake.handle(parts.path, query)
            if answer.delay:
                time.sleep(answer.delay)
            try:
                self.send_response(answer.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(answer.body)))
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(answer.body)
            except OSError:  # the client gave up (a timeout test)
                pass

        def log_message(self, *_args: Any) -> None:
            pass

    return Handler


@contextmanager
def serve() -> Iterator[FakeCoinGecko]:
    fake = FakeCoinGecko()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    server.daemon_threads = True
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
