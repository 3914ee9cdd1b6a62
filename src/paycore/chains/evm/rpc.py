"""JSON-RPC to an EVM node through web3.py's HTTP provider, single calls and batches.

The provider gives connection pooling, timeouts and the batch envelope; the results are
taken raw (hex strings, plain dicts) on purpose: the watcher decodes only the few fields it
needs, and web3's result formatters would cost more than the decoding itself on a range
with thousands of logs. One HTTP request carries up to ``batch_size`` calls, which is where
the watcher and /getBalances save their round trips.

:func:`execution_failure` reads an error answer to ``eth_estimateGas``/``eth_call``: the
call cannot run (a revert, or another EVM failure -- out of gas, an invalid opcode, too
little balance for the value) is the caller's 4xx, with the node's reason; anything else
(the node unreachable, rate-limited, missing a block) stays the node's 502.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from web3 import HTTPProvider
from web3.types import RPCEndpoint

from paycore.errors import PaycoreError

Call = tuple[str, list[Any]]


class RpcError(PaycoreError):
    """The node refused a call or could not be reached.

    A PaycoreError with status 502 so that an HTTP helper (/initWallet, ...) answers "the
    node failed" in one line instead of a 500; the watcher catches it and retries.
    """

    status = 502

    def __init__(self, method: str, detail: object) -> None:
        self.method = method
        self.detail = detail
        message = detail.get("message", detail) if isinstance(detail, dict) else detail
        self.data = detail.get("data") if isinstance(detail, dict) else None
        super().__init__(f"chain node: {method}: {str(message)[:300]}")


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


class Rpc:
    """One node endpoint. Thread-safe as far as the underlying requests session is."""

    def __init__(self, url: str, *, batch_size: int = 100, timeout: float = 30.0) -> None:
        self.url = url
        self.batch_size = batch_size
        self.provider = HTTPProvider(url, request_kwargs={"timeout": timeout})

    def call(self, method: str, params: Sequence[Any] = ()) -> Any:
        try:
            response = self.provider.make_request(RPCEndpoint(method), list(params))
        except Exception as exc:  # transport failure: connection refused, timeout, bad JSON
            raise RpcError(method, f"{type(exc).__name__}: {exc}") from exc
        if "error" in response:
            raise RpcError(method, response["error"])
        return response.get("result")

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
        """Like :meth:`batch`, but a failing call yields its :class:`RpcError` in place of a
        result instead of raising (a revert of one ``eth_call`` among many, say)."""
        outcomes: list[Any] = []
        for start in range(0, len(calls), self.batch_size):
            chunk = calls[start : start + self.batch_size]
            if len(chunk) == 1:
                method, params = chunk[0]
                try:
                    outcomes.append(self.call(method, params))
                except RpcError as exc:
                    if not isinstance(exc.detail, dict):  # transport failure, not an answer
                        raise
                    outcomes.append(exc)
                continue
            requests = [(RPCEndpoint(method), list(params)) for method, params in chunk]
            try:
                responses = self.provider.make_batch_request(requests)
            except Exception as exc:
                raise RpcError("batch", f"{type(exc).__name__}: {exc}") from exc
            if not isinstance(responses, list):  # the node refused the whole batch
                raise RpcError("batch", responses.get("error", responses))
            if len(responses) != len(chunk):
                raise RpcError("batch", f"{len(responses)} answers to {len(chunk)} calls")
            for (method, _params), response in zip(chunk, responses, strict=True):
                if "error" in response:
                    outcomes.append(RpcError(method, response["error"]))
                else:
                    outcomes.append(response.get("result"))
        return outcomes
