"""A fault-injecting JSON-RPC proxy in front of anvil: what hosted providers do, on loopback.

anvil answers every call, over any range, as fast as it can. Hosted providers do not: they
refuse ``eth_getLogs`` over too many blocks or with too many results (each in its own
words), answer 429 with ``Retry-After``, fail with 5xx, stall past a client's timeout, and
behind a load balancer one request may reach a node a few blocks behind the one that
answered the request before. :class:`FaultProxy` is a small threaded HTTP server that
forwards JSON-RPC to anvil and does each of these on demand (:class:`Faults`), so the
watcher is tested against the behaviour and not against a mock of itself.

Every HTTP request is answered by one "node", as a load balancer does: with ``lag`` set,
every ``lag_every``-th request goes to a node ``lag`` blocks behind anvil's head, which
answers ``eth_blockNumber`` with its own head, ``null`` for blocks and receipts it does not
have, and ``eth_getLogs`` for the blocks it has only -- silently, as real nodes do.

``requests`` records what came in (request number, time, the methods), ``refused`` what was
refused and why, for the tests' assertions.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs
import httpx


@attrs.define
class Faults:
    """What the proxy does; a test may change it between passes."""

    #: eth_getLogs over more blocks than this is refused with ``range_error``.
    max_blocks: int | None = None
    #: (JSON-RPC code, message) of a range refusal; a code of 413 answers HTTP 413 instead.
    #: ``{limit}`` is replaced by ``max_blocks``.
    range_error: tuple[int, str] = (-32602, "query exceeds max block range {limit}")
    #: eth_getLogs answers with more logs than this are refused with ``results_error``.
    max_results: int | None = None
    results_error: tuple[int, str] = (-32005, "query returned more than {limit} results")
    #: Add "Try with this block range [0x.., 0x..]" to a results refusal, as some do.
    suggest_range: bool = False
    #: Every n-th request is answered 429 with ``retry_after`` (0: never).
    rate_limit_every: int = 0
    retry_after: str | None = "1"
    #: Every n-th request is answered ``fail_status`` (0: never).
    fail_every: int = 0
    fail_status: int = 503
    #: Every n-th request stalls ``stall_seconds`` before it is answered (0: never).
    stall_every: int = 0
    stall_seconds: float = 3.0
    #: Every ``lag_every``-th request is answered by a node ``lag`` blocks behind.
    lag: int = 0
    lag_every: int = 0
    #: Every request is answered 503: an endpoint that is down.
    down: bool = False
    #: A batch of more calls than this is refused: with HTTP 413 when ``batch_error`` is
    #: 413, else with one JSON-RPC error of that code for the whole batch.
    max_batch: int | None = None
    batch_error: int = -32600


@attrs.define
class Seen:
    number: int
    at: float
    methods: list[str]
    answer: str  # "ok", "429", "503", "stall", "413", "lagging"


class FaultProxy:
    """Forwards JSON-RPC to ``upstream`` (anvil) and misbehaves as ``faults`` says."""

    def __init__(self, upstream: str, faults: Faults | None = None) -> None:
        self.upstream = upstream
        self.faults = faults or Faults()
        self.requests: list[Seen] = []
        self.refused: list[tuple[str, int, int, str]] = []  # (method, from, to, why)
        self.log_ranges: list[tuple[int, int]] = []  # every eth_getLogs range answered
        self._count = 0
        self._lock = threading.Lock()
        self._client = httpx.Client(timeout=30)
        self._server: ThreadingHTTPServer | None = None

    # -- serving ----------------------------------------------------------------------------
    @contextmanager
    def running(self) -> Iterator[str]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out in two writes

            def do_POST(self) -> None:  # noqa: N802 - the http.server protocol
                length = int(self.headers.get("content-length") or 0)
                status, headers, body = proxy.handle(self.rfile.read(length))
                try:
                    self.send_response(status)
                    for name, value in {**headers, "content-length": str(len(body))}.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:  # the client gave up (a stall past its timeout)
                    pass

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        self._server = server
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}"
        finally:
            server.shutdown()
            server.server_close()
            thread.join(timeout=10)
            self._client.close()

    def handle(self, raw: bytes) -> tuple[int, dict[str, str], bytes]:
        faults = self.faults
        payload = json.loads(raw)
        calls = payload if isinstance(payload, list) else [payload]
        methods = [str(c.get("method")) for c in calls]
        with self._lock:
            self._count += 1
            number = self._count

        def seen(answer: str) -> None:
            with self._lock:
                self.requests.append(Seen(number, time.monotonic(), methods, answer))

        if faults.down:
            seen("503")
            return 503, {"content-type": "text/plain"}, b"down"
        if faults.rate_limit_every and number % faults.rate_limit_every == 0:
            seen("429")
            headers = {"content-type": "application/json"}
            if faults.retry_after is not None:
                headers["retry-after"] = faults.retry_after
            return 429, headers, b'{"error":"too many requests"}'
        if faults.fail_every and number % faults.fail_every == 0:
            seen(str(faults.fail_status))
            return faults.fail_status, {"content-type": "text/html"}, b"<html>bad gateway</html>"
        if faults.stall_every and number % faults.stall_every == 0:
            seen("stall")
            time.sleep(faults.stall_seconds)
        if isinstance(payload, list) and faults.max_batch and len(payload) > faults.max_batch:
            seen("413" if faults.batch_error == 413 else "batch")
            if faults.batch_error == 413:
                return 413, {"content-type": "text/plain"}, b"Request Entity Too Large"
            refusal = {"code": faults.batch_error, "message": "batch size limit exceeded"}
            body = json.dumps({"jsonrpc": "2.0", "id": None, "error": refusal}).encode()
            return 200, {"content-type": "application/json"}, body
        lagging = bool(faults.lag and faults.lag_every and number % faults.lag_every == 0)
        node_head = self._head() - faults.lag if lagging else None
        answers = []
        for call in calls:
            answer = self._answer(call, node_head)
            if answer is None:  # HTTP 413
                seen("413")
                return 413, {"content-type": "text/plain"}, b"Request Entity Too Large"
            answers.append(answer)
        seen("lagging" if lagging else "ok")
        body = answers if isinstance(payload, list) else answers[0]
        return 200, {"content-type": "application/json"}, json.dumps(body).encode()

    # -- one call ---------------------------------------------------------------------------
    def _upstream(self, method: str, params: list[Any]) -> dict[str, Any]:
        response = self._client.post(
            self.upstream, json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        )
        answer: dict[str, Any] = response.json()
        return answer

    def _head(self) -> int:
        return int(self._upstream("eth_blockNumber", [])["result"], 16)

    def _answer(self, call: dict[str, Any], node_head: int | None) -> dict[str, Any] | None:
        method, params, call_id = call["method"], list(call.get("params") or []), call.get("id")

        def result(value: Any) -> dict[str, Any]:
            return {"jsonrpc": "2.0", "id": call_id, "result": value}

        def error(code: int, message: str) -> dict[str, Any]:
            return {"jsonrpc": "2.0", "id": call_id, "error": {"code": code, "message": message}}

        if node_head is not None:  # the lagging node's view
            if method == "eth_blockNumber":
                return result(hex(node_head))
            numbered = method == "eth_getBlockByNumber" and params[0].startswith("0x")
            if numbered and int(params[0], 16) > node_head:
                return result(None)
            if method == "eth_getLogs":
                flt = dict(params[0])
                if int(flt["toBlock"], 16) > node_head:
                    flt["toBlock"] = hex(node_head)
                if int(flt["fromBlock"], 16) > node_head:
                    return result([])
                params = [flt]
        if method == "eth_getLogs":
            flt = params[0]
            first, last = int(flt["fromBlock"], 16), int(flt["toBlock"], 16)
            faults = self.faults
            if faults.max_blocks is not None and last - first + 1 > faults.max_blocks:
                code, text = faults.range_error
                with self._lock:
                    self.refused.append((method, first, last, "range"))
                if code == 413:
                    return None
                return error(code, text.format(limit=faults.max_blocks))
            answer = self._upstream(method, params)
            logs = answer.get("result") or []
            if faults.max_results is not None and len(logs) > faults.max_results:
                code, text = faults.results_error
                message = text.format(limit=faults.max_results)
                if faults.suggest_range:
                    # The longest start of the range whose logs fit, as some providers say.
                    overflow = int(logs[faults.max_results]["blockNumber"], 16)
                    fits = max(first, overflow - 1)
                    message += f" Try with this block range [{hex(first)}, {hex(fits)}]."
                with self._lock:
                    self.refused.append((method, first, last, "results"))
                return error(code, message)
            with self._lock:
                self.log_ranges.append((first, last))
            return {**answer, "id": call_id}
        if node_head is not None and method == "eth_getTransactionReceipt":
            answer = self._upstream(method, params)
            receipt = answer.get("result")
            if receipt is not None and int(receipt["blockNumber"], 16) > node_head:
                return result(None)
            return {**answer, "id": call_id}
        if node_head is not None and method in ("debug_traceBlockByHash", "trace_block"):
            if method == "trace_block":
                if int(params[0], 16) > node_head:
                    return result(None)
            else:
                block = self._upstream("eth_getBlockByHash", [params[0], False]).get("result")
                if block is None or int(block["number"], 16) > node_head:
                    return error(-32000, f"block {params[0]} not found")
        return {**self._upstream(method, params), "id": call_id}
