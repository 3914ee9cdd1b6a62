"""JSON-RPC to an EVM chain's nodes over HTTP: single calls and batches, one or several
endpoints, with the waits and fallbacks hosted providers need (docs/chains.md).

Results are taken raw (hex strings, plain dicts) on purpose: the watcher decodes only the
few fields it needs. One HTTP request carries up to ``batch_size`` calls, which is where the
watcher and /getBalances save their round trips.

Endpoints. ``urls`` are tried in order: every request goes to the first endpoint that is not
resting, so a second URL is a fallback, not a share of the load. An endpoint rests after a
failure -- no answer (refused, reset, timed out), HTTP 429, 408 or 5xx, an answer that is not
JSON-RPC, or a JSON-RPC error that says "rate limit" -- for the ``Retry-After`` it sent, or
else for a delay that doubles with each failure in a row (0.5 s up to a minute). A request
then goes to the next endpoint at once; when all rest, the caller sleeps until the first is
back, but never more than ``max_wait`` seconds in all for one call: beyond that it gets
:class:`RpcError` at once (with ``retry_in``), so an HTTP helper answers 502 instead of
hanging, and the watcher's next pass does not knock on a resting endpoint early. Other HTTP
refusals (401, 403, 404: a wrong key or path) skip that endpoint for the call.

Sizes. A batch the provider refuses as too large (HTTP 413, or an error about the batch) is
split in halves, and the smaller size is kept for later batches. A single call refused as
too large (``eth_getLogs`` over too many blocks or results) is reported to its caller,
which alone knows how to make it smaller (``logs``).

:func:`execution_failure` reads an error answer to ``eth_estimateGas``/``eth_call``: the
call cannot run (a revert, or another EVM failure -- out of gas, an invalid opcode, too
little balance for the value) is the caller's 4xx, with the node's reason; anything else
(the node unreachable, rate-limited, missing a block) stays the node's 502.
"""

from __future__ import annotations

import email.utils
import json
import logging
import re
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import httpx

from paycore.errors import PaycoreError

from . import limits

log = logging.getLogger("paycore.rpc")

Call = tuple[str, list[Any]]

#: First rest of an endpoint after a failure, doubled for each further failure in a row.
FIRST_REST = 0.5
#: Longest rest without a ``Retry-After`` (one with it is honoured up to ``MAX_RETRY_AFTER``).
MAX_REST = 60.0
MAX_RETRY_AFTER = 3600.0


class RpcError(PaycoreError):
    """The node refused a call or could not be reached.

    A PaycoreError with status 502 so that an HTTP helper (/initWallet, ...) answers "the
    node failed" in one line instead of a 500; the watcher catches it and retries.
    ``detail`` is the JSON-RPC error object when the node answered, else a text;
    ``http_status`` the HTTP status of a refused request; ``retry_in`` the seconds until an
    endpoint may be asked again, when every endpoint rests.
    """

    status = 502

    def __init__(
        self,
        method: str,
        detail: object,
        *,
        http_status: int | None = None,
        retry_in: float | None = None,
    ) -> None:
        self.method = method
        self.detail = detail
        self.http_status = http_status
        self.retry_in = retry_in
        message = detail.get("message", detail) if isinstance(detail, dict) else detail
        self.data = detail.get("data") if isinstance(detail, dict) else None
        super().__init__(f"chain node: {method}: {str(message)[:300]}")

    @property
    def too_large(self) -> bool:
        """The request was refused for its size (a block range, a result set, a body)."""
        return limits.too_large(self.detail, self.http_status)


class _BatchTooLarge(Exception):
    """The provider refused a batch for its number of calls (or its answer's size)."""


#: EIP-1474's code for "execution reverted" (geth, anvil, erigon and others use it).
EXECUTION_REVERTED = 3
#: How nodes word an EVM failure of the call itself. The JSON-RPC codes do not tell: anvil
#: answers an invalid opcode with -32603 "internal error", as other nodes answer trouble.
_EXECUTION_TEXT = re.compile(
    r"revert|out of gas|gas required exceeds|insufficient funds|invalid opcode|opcode"
    r"|evm error|stack (?:under|over)flow|invalid jump|write protection|static call"
    r"|precompile|execution",
    re.IGNORECASE,
)
_ERROR_STRING = "0x08c379a0"  # the selector of Error(string)
#: The most of a node's reason a refusal repeats.
REASON_CHARS = 200


def execution_failure(error: RpcError) -> str | None:
    """The reason the call itself fails, or None when ``error`` is the node's trouble.

    A revert's ``Error(string)`` is decoded from ``data`` when the message does not
    already carry it; a custom error is named by its selector."""
    detail = error.detail
    if not isinstance(detail, dict):  # no answer at all: transport, HTTP status
        return None
    message = " ".join(str(detail.get("message") or "").split())
    if detail.get("code") != EXECUTION_REVERTED and not _EXECUTION_TEXT.search(message):
        return None
    data = detail.get("data")
    if isinstance(data, dict):  # some nodes nest it: {"data": {"data": "0x..."}}
        data = data.get("data")
    if isinstance(data, str) and len(data) > 10 and message.rstrip(".") == "execution reverted":
        if data.startswith(_ERROR_STRING):
            from . import abi  # eth_abi only where a reason is decoded

            text = abi.decode_string("0x" + data[10:])
            if text:
                message = f"execution reverted: {text}"
        else:
            message = f"execution reverted: custom error {data[:10]}"
    return (message or "execution reverted")[:REASON_CHARS]


@attrs.define
class _Endpoint:
    url: str
    #: 1-based position in the configured list: what logs name (a URL may hold a key).
    number: int
    rests_until: float = 0.0
    failures: int = 0


def retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds from a ``Retry-After`` header: a number of seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value).timestamp()
        except (TypeError, ValueError):
            return None
        seconds = when - (time.time() if now is None else now)
    return min(max(seconds, 0.0), MAX_RETRY_AFTER)


class Rpc:
    """A chain's endpoints (one or several URLs). Thread-safe: the HTTP client pools
    connections for every thread, and endpoint state is kept under a lock."""

    def __init__(
        self,
        urls: str | Sequence[str],
        *,
        batch_size: int = 100,
        timeout: float = 30.0,
        max_wait: float = 3.0,
        name: str = "rpc",
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        listed = [urls] if isinstance(urls, str) else list(urls)
        if not listed:
            raise ValueError("Rpc needs at least one URL")
        self.urls = tuple(dict.fromkeys(listed))
        self.url = self.urls[0]
        self.batch_size = max(1, batch_size)
        self.max_wait = max_wait
        self.name = name
        self._clock = clock
        self._sleep = sleep
        self._client = httpx.Client(
            timeout=timeout,
            headers={"content-type": "application/json", "user-agent": "paycore"},
        )
        self._endpoints = [_Endpoint(url, n) for n, url in enumerate(self.urls, start=1)]
        self._lock = threading.Lock()
        #: The endpoint (1-based) that gave the last answer.
        self.answered_by = 0

    def close(self) -> None:
        self._client.close()

    # -- calls ----------------------------------------------------------------------------
    def call(self, method: str, params: Sequence[Any] = ()) -> Any:
        """The result of one call; :class:`RpcError` when the node refuses it or cannot be
        reached."""
        answer = self._exchange(
            {"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)}, method
        )
        if not isinstance(answer, dict):
            raise RpcError(method, f"not a JSON-RPC answer: {str(answer)[:100]}")
        if "error" in answer:
            raise RpcError(method, answer["error"])
        return answer.get("result")

    def batch(self, calls: Sequence[Call]) -> list[Any]:
        """Results of ``calls`` in order, ``batch_size`` calls per HTTP request; the first
        failing call raises :class:`RpcError`."""
        results: list[Any] = []
        for outcome in self.batch_outcomes(calls):
            if isinstance(outcome, RpcError):
                raise outcome
            results.append(outcome)
        return results

    def batch_outcomes(self, calls: Sequence[Call]) -> list[Any]:
        """Like :meth:`batch`, but a call the node refused yields its :class:`RpcError` in
        place of a result instead of raising (a revert of one ``eth_call`` among many, an
        ``eth_getLogs`` over too many blocks). Failing to reach any endpoint raises."""
        outcomes: list[Any] = []
        done = 0
        while done < len(calls):
            chunk = calls[done : done + self.batch_size]
            try:
                outcomes += self._chunk(chunk)
            except _BatchTooLarge:
                self._shrink_batches(len(chunk))
                continue
            done += len(chunk)
        return outcomes

    def _chunk(self, chunk: Sequence[Call]) -> list[Any]:
        if len(chunk) == 1:
            method, params = chunk[0]
            try:
                return [self.call(method, params)]
            except RpcError as exc:
                if not isinstance(exc.detail, dict) and exc.http_status != 413:
                    raise  # transport failure, not an answer
                return [exc]
        payload = [
            {"jsonrpc": "2.0", "id": n, "method": method, "params": list(params)}
            for n, (method, params) in enumerate(chunk)
        ]
        try:
            answers = self._exchange(payload, "batch")
        except RpcError as exc:
            if exc.http_status == 413:
                raise _BatchTooLarge from exc
            raise
        if not isinstance(answers, list):  # the node refused the whole batch
            error = answers.get("error", answers) if isinstance(answers, dict) else answers
            if limits.batch_refused(error) or limits.too_large(error):
                raise _BatchTooLarge
            raise RpcError("batch", error)
        by_id = {a.get("id"): a for a in answers if isinstance(a, dict)}
        if any(limits.batch_refused(a.get("error")) for a in by_id.values()):
            raise _BatchTooLarge
        if len(by_id) != len(chunk) or set(by_id) != set(range(len(chunk))):
            raise RpcError("batch", f"{len(answers)} answers to {len(chunk)} calls")
        outcomes: list[Any] = []
        for n, (method, _params) in enumerate(chunk):
            answer = by_id[n]
            outcomes.append(
                RpcError(method, answer["error"]) if "error" in answer else answer.get("result")
            )
        return outcomes

    def _shrink_batches(self, refused: int) -> None:
        if refused <= 1:
            raise RpcError(
                "batch", "the provider refuses even one call per request", http_status=413
            )
        with self._lock:
            if self.batch_size >= refused:
                self.batch_size = max(1, refused // 2)
                log.warning(
                    "%s: a batch of %d calls was refused as too large; sending %d at most",
                    self.name,
                    refused,
                    self.batch_size,
                )

    # -- endpoints ------------------------------------------------------------------------
    def available_in(self) -> float:
        """Seconds until some endpoint may be asked again (0: one may be asked now)."""
        now = self._clock()
        with self._lock:
            return max(0.0, min(e.rests_until for e in self._endpoints) - now)

    def _pick(self, skip: set[int]) -> tuple[_Endpoint | None, float]:
        """The first endpoint not resting (and not in ``skip``), or the wait for the one
        that rests the shortest; (None, 0) when every endpoint is in ``skip``."""
        now = self._clock()
        with self._lock:
            usable = [e for e in self._endpoints if e.number not in skip]
            if not usable:
                return None, 0.0
            for endpoint in usable:
                if endpoint.rests_until <= now:
                    return endpoint, 0.0
            soonest = min(usable, key=lambda e: e.rests_until)
            return soonest, soonest.rests_until - now

    def _failed(self, endpoint: _Endpoint, reason: str, wait: float | None) -> None:
        now = self._clock()
        with self._lock:
            endpoint.failures += 1
            rest = (
                wait
                if wait is not None
                else min(FIRST_REST * 2 ** (endpoint.failures - 1), MAX_REST)
            )
            was_up = endpoint.rests_until <= now
            endpoint.rests_until = now + rest
            others = len(self._endpoints) > 1
        if was_up:
            log.warning(
                "%s: endpoint %d of %d %s; resting it %.1f s%s",
                self.name,
                endpoint.number,
                len(self._endpoints),
                reason,
                rest,
                ", using the next one" if others else "",
            )

    def _succeeded(self, endpoint: _Endpoint) -> None:
        with self._lock:
            if endpoint.failures:
                endpoint.failures = 0
            self.answered_by = endpoint.number

    def _exchange(self, payload: object, label: str) -> Any:
        """POST ``payload`` to the first usable endpoint and return the decoded answer,
        failing over and waiting as the module docstring says."""
        body = json.dumps(payload, separators=(",", ":")).encode()
        waited = 0.0
        refused: set[int] = set()
        reason = "no answer"
        while True:
            endpoint, wait = self._pick(refused)
            if endpoint is None:
                raise RpcError(label, reason)
            if wait > 0:
                if waited + wait > self.max_wait:
                    raise RpcError(
                        label,
                        f"no endpoint answers ({reason}); next try in {wait:.1f} s",
                        retry_in=wait,
                    )
                self._sleep(wait)
                waited += wait
                continue
            try:
                response = self._client.post(endpoint.url, content=body)
            except httpx.HTTPError as exc:  # refused, reset, timed out
                reason = f"did not answer: {type(exc).__name__}"
                self._failed(endpoint, reason, None)
                continue
            status = response.status_code
            if status == 413:
                self._succeeded(endpoint)  # it answered; the request was too large
                raise RpcError(label, "HTTP 413: request or answer too large", http_status=413)
            if status in (408, 429) or status >= 500:
                reason = f"answered HTTP {status}"
                self._failed(endpoint, reason, retry_after(response.headers.get("retry-after")))
                continue
            if status >= 400:
                reason = f"refused the request: HTTP {status}"
                refused.add(endpoint.number)
                self._failed(endpoint, reason, None)
                continue
            try:
                answer = response.json()
            except ValueError:
                reason = "answered something that is not JSON"
                self._failed(endpoint, reason, None)
                continue
            limited = _rate_limit(answer)
            if limited is not None:
                reason = f"is rate limiting: {limited[:100]}"
                self._failed(endpoint, reason, retry_after(response.headers.get("retry-after")))
                continue
            self._succeeded(endpoint)
            return answer


def _rate_limit(answer: object) -> str | None:
    """The message of a rate-limit error in an answer (any call of a batch), or None."""
    errors = [answer] if isinstance(answer, dict) else answer if isinstance(answer, list) else []
    for entry in errors:
        error = entry.get("error") if isinstance(entry, dict) else None
        if error is not None and limits.rate_limited(error):
            return str(error.get("message", error) if isinstance(error, dict) else error)
    return None
