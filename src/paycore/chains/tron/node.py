"""The full-node HTTP API (java-tron's ``/wallet/*``, as TronGrid serves it) through tronpy.

tronpy's ``HTTPProvider`` gives the pooled ``requests`` session, timeouts and URL joining;
paycore takes the answers raw (plain dicts), as the EVM backend does with JSON-RPC, because
the watcher reads a handful of fields from large blocks and must not pay for more.

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
import re
from typing import Any

from tronpy.providers import HTTPProvider

from paycore.errors import PaycoreError

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


class Node:
    """One full-node HTTP endpoint (``rpc_url``: the base, e.g. https://api.trongrid.io)."""

    def __init__(self, url: str, *, api_key: str | None = None, timeout: float = 30.0) -> None:
        self.url = url.rstrip("/") + "/"
        self.provider = HTTPProvider(self.url, timeout=timeout)
        self.provider.use_api_key = False  # no bundled keys; ours (if any) goes below
        self.provider.sess.headers["User-Agent"] = "paycore"
        if api_key:
            self.provider.sess.headers[API_KEY_HEADER] = api_key

    def post(self, path: str, body: dict[str, Any] | None = None) -> Any:
        """POST ``body`` as JSON to ``wallet/...``; the decoded JSON answer.

        java-tron reports a bad request with HTTP 200 and ``{"Error": "..."}``: that raises
        too. Other error shapes (``result.code``) are the caller's to read, since for some
        calls they are an answer (a revert) rather than a failure.
        """
        try:
            answer = self.provider.make_request(path, body or {})
        except Exception as exc:  # connection refused, timeout, HTTP 4xx/5xx, bad JSON
            raise NodeError(path, f"{type(exc).__name__}: {exc}") from exc
        if isinstance(answer, dict) and "Error" in answer:
            raise NodeError(path, answer["Error"])
        return answer
