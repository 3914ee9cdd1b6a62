"""The full-node HTTP API (java-tron's ``/wallet/*``, as TronGrid serves it) through tronpy.

tronpy's ``HTTPProvider`` gives the pooled ``requests`` session; paycore sends the requests
on it itself and takes the answers raw (plain dicts), as the EVM backend does with
JSON-RPC, because the watcher reads a handful of fields from large blocks and must not pay
for more -- and must see an answer's size, its HTTP status and a rate limit's
``Retry-After``, which tronpy's ``make_request`` hides.

Requests keep to the chain's ``rate_limit`` (``pacing.RateLimiter``, shared by everything
in the process that talks to the node), and a refusal for rate (:class:`RateLimited`)
pauses them all for the penalty the node names. An answer can be capped in size
(:class:`AnswerTooLarge`), so a request for too many blocks fails early instead of filling
memory; the watcher then asks for fewer.

Two things are set here rather than left to tronpy: the ``TRON-PRO-API-KEY`` header is sent
only when the operator configured a key (tronpy would otherwise rotate its own bundled
keys for any URL containing "trongrid", sharing their quota with every tronpy user), and
every failure -- transport, HTTP status, or an ``Error`` body -- becomes one
:class:`NodeError`, a 502 for the HTTP helpers and a retry for the watcher.

A call the node answers but cannot run is another matter: the contract's checks refused it
or the TVM failed on it. :func:`call_fails` tells the two apart from java-tron's
``result.code`` and message, so a helper answers "would fail: <the node's reason>" (4xx)
for the one and 502 for the other.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from typing import Any

import requests
from tronpy.providers import HTTPProvider

from paycore.errors import PaycoreError

from .pacing import RateLimiter

API_KEY_HEADER = "TRON-PRO-API-KEY"


class NodeError(PaycoreError):
    """The node refused a request or could not be reached (status 502, like ``RpcError``)."""

    status = 502

    def __init__(self, path: str, detail: object) -> None:
        self.path = path
        self.detail = detail
        super().__init__(f"chain node: {path}: {str(detail)[:300]}")


#: ``result.code`` values meaning the call itself cannot run: the checks before execution
#: refused it (no contract there, "Cannot transfer TRX to yourself.", too little TRX for
#: ``call_value``) or execution failed. java-tron's ``Return.response_code``.
CALL_FAILURE_CODES = frozenset({"CONTRACT_VALIDATE_ERROR", "CONTRACT_EXE_ERROR"})

#: java-tron answers any other exception as ``OTHER_ERROR`` with ``"class <name> : <text>"``;
#: those of the TVM (out of energy, an illegal operation, a bad jump, a stack overflow...)
#: and of contract validation or execution are the call's failure, not the node's.
_CALL_EXCEPTIONS = re.compile(
    r"org\.tron\.core\.vm\.|org\.tron\.common\.runtime\.vm\.|VMIllegalException"
    r"|ContractValidateException|ContractExeException"
)
_EXCEPTION_TEXT = re.compile(r"^class\s+[\w.$]*?([A-Za-z]\w*)\s*:\s*(.*)$", re.DOTALL)

#: The most of a node's message a refusal repeats.
MESSAGE_CHARS = 200


def node_message(raw: object, default: str = "no reason given") -> str:
    """``result.message`` as text: java-tron writes it as hex-encoded UTF-8 unless the
    request was ``visible``, and as ``class <exception> : <text>`` for an exception (shown
    as ``<Exception>: <text>``). One line, at most ``MESSAGE_CHARS`` characters."""
    text = _decoded(raw)
    found = _EXCEPTION_TEXT.match(text)
    if found:
        name, rest = found.groups()
        text = f"{name}: {rest}" if rest.strip() and rest.strip() != "null" else name
    text = " ".join(text.split())
    return text[:MESSAGE_CHARS] or default


def _decoded(raw: object) -> str:
    """The message's text: hex-encoded UTF-8 decoded, anything else as it came."""
    text = str(raw or "").strip()
    if text and len(text) % 2 == 0 and re.fullmatch(r"[0-9a-fA-F]+", text):
        # Hex digits that are not hex-encoded text stay the message as it came.
        with contextlib.suppress(UnicodeDecodeError):
            text = bytes.fromhex(text).decode("utf-8").strip()
    return text


def call_fails(code: object, message: object) -> bool:
    """Whether a ``result`` with ``result: false`` (or a code other than SUCCESS) says the
    call cannot run -- the caller's problem, a 4xx -- rather than that the node is in
    trouble (``SERVER_BUSY``, ``NO_CONNECTION``, an internal exception: a 502)."""
    if code in CALL_FAILURE_CODES:
        return True
    return code == "OTHER_ERROR" and bool(_CALL_EXCEPTIONS.search(_decoded(message)))


class RateLimited(NodeError):
    """The node refused a request for rate (429; 403 or 503 with TronGrid's frequency or
    quota text; java-tron's own "lack of computing resources"). ``retry_after`` is the
    pause it asked for, when it named one; ``quota`` says the daily quota is spent."""

    def __init__(
        self,
        path: str,
        detail: object,
        retry_after: float | None,
        *,
        quota: bool = False,
        sent: bool = True,
    ) -> None:
        super().__init__(path, detail)
        self.retry_after = retry_after
        self.quota = quota
        #: False when the request was not even sent: the pause left was longer than the
        #: caller would wait.
        self.sent = sent


class AnswerTooLarge(NodeError):
    """An answer over the size the request allowed, dropped mid-read, or refused by the
    node as too large (413): ask for less."""


class NodeTimeout(NodeError):
    """No (whole) answer within the timeout: for a request of many blocks, ask for fewer."""


#: TronGrid's texts for a refusal for rate ("The key exceeds the frequency limit(15), and
#: the query server is suspended for 30s"; "Exceed the user daily usage") and java-tron's
#: own rate limiter's ("lack of computing resources", an ``Error`` body with status 200).
_RATE_TEXT = re.compile(r"frequency limit|daily usage|lack of computing resources", re.I)
_QUOTA_TEXT = re.compile(r"daily usage", re.I)
_SUSPENDED = re.compile(r"suspended for (\d+(?:\.\d+)?)\s*s", re.I)
#: How long a spent daily quota pauses requests before paycore tries again.
QUOTA_PAUSE = 60.0
#: The most a request from an HTTP helper waits for the rate limiter: a merchant's call
#: answers 502 rather than hang through a node's penalty.
HELPER_WAIT = 5.0
#: Bytes read from the socket at a time.
_CHUNK = 1 << 16


def _retry_after(headers: Any, text: str) -> float | None:
    """The pause a refusal asks for: ``Retry-After`` (seconds), else TronGrid's
    "suspended for Ns", else None."""
    raw = headers.get("Retry-After") if headers is not None else None
    if raw is not None:
        with contextlib.suppress(ValueError):
            return max(0.0, float(raw))
    found = _SUSPENDED.search(text)
    return float(found.group(1)) if found else None


class Node:
    """One full-node HTTP endpoint (``rpc_url``: the base, e.g. https://api.trongrid.io).

    Every request waits its turn at ``limiter`` (``rate_limit`` requests per second, shared
    by the watcher and the HTTP helpers of this process) and is read with a size cap when
    one is given; a refusal for rate pauses the limiter for the penalty the node named.
    """

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None = None,
        timeout: float = 30.0,
        rate_limit: float | None = None,
    ) -> None:
        self.url = url.rstrip("/") + "/"
        self.timeout = timeout
        self.provider = HTTPProvider(self.url, timeout=timeout)
        self.provider.use_api_key = False  # no bundled keys; ours (if any) goes below
        self.provider.sess.headers["User-Agent"] = "paycore"
        if api_key:
            self.provider.sess.headers[API_KEY_HEADER] = api_key
        self.limiter = RateLimiter(rate_limit)
        #: Requests sent and bytes received, for the watcher's status and the tests.
        self.sent = 0
        self.received = 0

    def post(self, path: str, body: dict[str, Any] | None = None) -> Any:
        """POST ``body`` as JSON to ``wallet/...``; the decoded JSON answer.

        java-tron reports a bad request with HTTP 200 and ``{"Error": "..."}``: that raises
        too. Other error shapes (``result.code``) are the caller's to read, since for some
        calls they are an answer (a revert) rather than a failure. Waits at most
        ``HELPER_WAIT`` for the rate limiter.
        """
        answer, _size = self.fetch(path, body, max_wait=HELPER_WAIT)
        return answer

    def fetch(
        self,
        path: str,
        body: dict[str, Any] | None = None,
        *,
        max_wait: float | None = None,
        cap: int | None = None,
        stop: threading.Event | None = None,
        timeout: float | None = None,
    ) -> tuple[Any, int]:
        """:meth:`post` for the watcher: waits up to ``max_wait`` seconds for its turn
        (None: as long as it takes; ``stop`` ends the wait), drops an answer over ``cap``
        bytes (:class:`AnswerTooLarge`), gives up after ``timeout`` seconds (default the
        node's), and returns the answer with its size in bytes."""
        wait = self.limiter.reserve(max_wait)
        if wait is None:
            left = self.limiter.paused_for()
            raise RateLimited(
                path, f"rate limited: the next request in {left:.0f}s", left, sent=False
            )
        if wait > 0:
            if stop is not None:
                if stop.wait(wait):
                    raise NodeError(path, "stopped")
            else:
                time.sleep(wait)
        self.sent += 1
        raw = self._send(path, body or {}, cap, self.timeout if timeout is None else timeout)
        self.received += len(raw)
        try:
            answer = json.loads(raw)
        except ValueError as exc:  # an answer cut off by a proxy is not JSON either
            raise NodeError(path, f"not JSON ({len(raw)} bytes): {exc}") from exc
        if isinstance(answer, dict) and "Error" in answer:
            text = str(answer["Error"])
            if _RATE_TEXT.search(text):
                raise self._refused(path, text, None)
            raise NodeError(path, text)
        self.limiter.succeeded()
        return answer, len(raw)

    def _refused(self, path: str, text: str, headers: Any) -> RateLimited:
        quota = bool(_QUOTA_TEXT.search(text))
        asked = _retry_after(headers, text)
        pause = self.limiter.refused(QUOTA_PAUSE if quota and asked is None else asked)
        return RateLimited(path, text or "rate limited", pause, quota=quota)

    def _send(self, path: str, body: dict[str, Any], cap: int | None, timeout: float) -> bytes:
        """The answer's bytes; raises for transport failures, HTTP errors and a cap."""
        try:
            response = self.provider.sess.post(
                self.url + path, json=body, timeout=timeout, stream=True
            )
        except requests.Timeout as exc:
            raise NodeTimeout(path, f"{type(exc).__name__}: {exc}") from exc
        except Exception as exc:  # connection refused or reset, bad URL
            raise NodeError(path, f"{type(exc).__name__}: {exc}") from exc
        with response:
            status = response.status_code
            if status == 413:
                raise AnswerTooLarge(path, "HTTP 413: the node refused an answer this large")
            declared = response.headers.get("Content-Length")
            if cap is not None and declared and declared.isdigit() and int(declared) > cap:
                raise AnswerTooLarge(path, f"an answer of {declared} bytes (cap {cap})")
            try:
                raw = self._read(response, cap if status < 400 else 4096)
            except requests.RequestException as exc:  # the read timed out or broke
                raise NodeTimeout(path, f"{type(exc).__name__}: {exc}") from exc
            if cap is not None and len(raw) > cap:
                raise AnswerTooLarge(path, f"an answer over {cap} bytes, dropped")
        if status >= 400:
            text = raw.decode("utf-8", "replace")
            if status == 429 or (status in (403, 503) and _RATE_TEXT.search(text)):
                raise self._refused(path, text, response.headers)
            raise NodeError(path, f"HTTP {status}: {text[:200]}")
        return raw

    @staticmethod
    def _read(response: requests.Response, cap: int | None) -> bytes:
        """The body, read until ``cap`` bytes are passed (one chunk more, so the caller
        sees it was over)."""
        chunks: list[bytes] = []
        total = 0
        for chunk in response.iter_content(_CHUNK):
            chunks.append(chunk)
            total += len(chunk)
            if cap is not None and total > cap:
                break
        return b"".join(chunks)
