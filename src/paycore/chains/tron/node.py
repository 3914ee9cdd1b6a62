"""The full-node HTTP API (java-tron's ``/wallet/*``, as TronGrid serves it) through tronpy.

tronpy's ``HTTPProvider`` gives the pooled ``requests`` session, timeouts and URL joining;
paycore takes the answers raw (plain dicts), as the EVM backend does with JSON-RPC, because
the watcher reads a handful of fields from large blocks and must not pay for more.

Two things are set here rather than left to tronpy: the ``TRON-PRO-API-KEY`` header is sent
only when the operator configured a key (tronpy would otherwise rotate its own bundled
keys for any URL containing "trongrid", sharing their quota with every tronpy user), and
every failure -- transport, HTTP status, or an ``Error`` body -- becomes one
:class:`NodeError`, a 502 for the HTTP helpers and a retry for the watcher.
"""

from __future__ import annotations

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
