"""One Tron chain as the backend sees it: its config, its node, its factory, token facts.

Addresses come from ``address`` (no network); contract reads go through the node's
``triggerconstantcontract``, which runs a call without a transaction. Token decimals and
symbols are asked once and kept, since a deployed token's ``decimals()`` never changes and
the watcher values every transfer with it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from paycore.chains.common import CONTRACT_TYPES as CONTRACT_TYPES
from paycore.chains.common import ChainBase, TokenMeta
from paycore.chains.evm import abi
from paycore.config import ChainConfig
from paycore.domain.tokens import NATIVE

from . import address
from .node import Node, NodeError, call_fails, node_message

if TYPE_CHECKING:
    from .reader import WatchStatus


class CallRefused(NodeError):
    """The node could not run a read for reasons of its own (busy, an internal error): an
    outage, a 502. A call that cannot run because of the call itself is a failed
    :class:`CallResult` instead."""


#: The caller of read-only calls: the zero account, so no real account's state is implied.
ZERO_CALLER = "T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwb"


@attrs.frozen
class CallResult:
    """A ``triggerconstantcontract`` answer: the return data (hex, no 0x), whether the call
    failed, the energy it used -- what /initWithdraw reports as an estimate -- and the
    node's reason for a failure, as text.

    ``reverted`` covers every way a call can fail that is the call's own doing: a REVERT
    (its data may hold ``Error(string)``), another TVM exception (out of energy, an illegal
    operation), and the checks before execution (no contract at that address, "Cannot
    transfer TRX to yourself.", too little TRX for the call value).
    """

    output: str
    reverted: bool
    energy_used: int
    message: str = ""


class TronChain(ChainBase):
    """A configured Tron chain with both ``rpc_url`` and ``factory`` (the plugin checks)."""

    def __init__(self, config: ChainConfig, node: Node | None = None) -> None:
        super().__init__(config)
        self.node = node or Node(self.rpc_url, api_key=config.api_key, rate_limit=config.rate_limit)
        #: What the chain's watcher last reported (``reader.WatchStatus``), for the operator.
        self.watch_status: WatchStatus | None = None

    # -- addresses (pure) -----------------------------------------------------------------
    def wallet_of(self, owner: str) -> str:
        return address.wallet_address(self.factory, owner)

    def _deposit_at(self, wallet: str, index: int) -> str:
        return address.deposit_address(wallet, index)

    # -- tokens ---------------------------------------------------------------------------
    def token_meta(self, tokens: Iterable[str]) -> dict[str, TokenMeta]:
        """Decimals and symbol of each token that has them. A contract without a sane
        ``decimals()`` is left out: it cannot be valued."""
        wanted = list(dict.fromkeys(tokens))
        for token in wanted:
            if token in self._tokens:
                continue
            decimals = self.call(token, "decimals()")
            if decimals.reverted or not decimals.output:  # e.g. no contract there (yet)
                continue
            value = abi.decode_uint("0x" + decimals.output[:64])
            if value > 77:
                continue
            symbol = self.call(token, "symbol()")
            name = None if symbol.reverted else abi.decode_string("0x" + symbol.output)
            with self._tokens_lock:
                self._tokens[token] = TokenMeta(token, name or token[:10], value)
        return {t: self._tokens[t] for t in wanted if t in self._tokens}

    # -- chain reads ----------------------------------------------------------------------
    def call(
        self,
        contract: str,
        signature: str,
        args: Sequence[object] = (),
        types: Sequence[str] = (),
        *,
        caller: str = ZERO_CALLER,
        call_value: int = 0,
    ) -> CallResult:
        """Run ``signature(args)`` on ``contract`` without a transaction.

        A failure of the call itself is an answer (``reverted``, with the node's reason):
        java-tron reports a REVERT or a TVM error as ``result.result`` true with a
        ``message`` and ``transaction.ret[0].ret`` FAILED, and a refusal before execution
        as ``result.result`` false with CONTRACT_VALIDATE_ERROR (or an exception of the
        TVM as OTHER_ERROR). The node's own trouble raises :class:`CallRefused` (502).
        """
        body: dict[str, Any] = {
            "owner_address": caller,
            "contract_address": contract,
            "function_selector": signature,
            "parameter": abi_args(args, types),
            "visible": True,
        }
        if call_value:
            body["call_value"] = call_value
        path = "wallet/triggerconstantcontract"
        answer = self.node.post(path, body)
        if not isinstance(answer, dict):
            raise CallRefused(path, "not a JSON object")
        result = answer.get("result")
        result = result if isinstance(result, dict) else {}
        message = node_message(result.get("message"), "")
        if result.get("code") not in (None, "SUCCESS") or result.get("result") is not True:
            if not call_fails(result.get("code"), result.get("message")):
                raise CallRefused(path, message or str(result.get("code") or "refused"))
            return CallResult(output="", reverted=True, energy_used=0, message=message)
        transaction = answer.get("transaction")
        rets = transaction.get("ret") if isinstance(transaction, dict) else None
        ret = rets[0] if isinstance(rets, list) and rets and isinstance(rets[0], dict) else {}
        outputs = answer.get("constant_result")
        output = outputs[0] if isinstance(outputs, list) and outputs else ""
        energy = answer.get("energy_used")
        return CallResult(
            output=output if isinstance(output, str) else "",
            reverted=bool(message) or ret.get("ret") == "FAILED",
            energy_used=energy if isinstance(energy, int) and not isinstance(energy, bool) else 0,
            message=message,
        )

    def has_code(self, contract: str) -> bool:
        """Whether a contract is deployed at ``contract`` (``getcontract`` answers ``{}``
        for an account without code)."""
        answer = self.node.post("wallet/getcontract", {"value": contract, "visible": True})
        return bool(answer.get("bytecode") or answer.get("contract_address"))

    def balance(self, token: str, holder: str) -> int:
        """``holder``'s balance of ``token`` in base units (TRX: SUN from ``getaccount``)."""
        if token == NATIVE:
            account = self.node.post("wallet/getaccount", {"address": holder, "visible": True})
            return int(account.get("balance") or 0)
        result = self.call(token, "balanceOf(address)", [address.to_evm(holder)], ["address"])
        if result.reverted or not result.output:
            return 0
        return abi.decode_uint("0x" + result.output[:64])

    def fee(self) -> int:
        """The SUN a withdrawal pays the operator (``feeSettings()`` of the factory): zero
        when the recipient is the zero address, as ``PaycoreWallet.withdraw`` reads it."""
        result = self.call(self.factory, "feeSettings()")
        if result.reverted:
            raise NodeError("feeSettings()", result.message or "reverted")
        data = "0x" + result.output
        return abi.word_int(data, 1) if abi.word_int(data, 0) else 0

    def index_disabled(self, wallet: str, index: int) -> bool:
        result = self.call(wallet, "isWalletIndexDisabled(uint256)", [index], ["uint256"])
        return not result.reverted and abi.decode_uint("0x" + result.output[:64]) != 0


def abi_args(args: Sequence[object], types: Sequence[str]) -> str:
    """ABI-encoded arguments (hex, no selector) as the HTTP API's ``parameter`` takes them."""
    if not types:
        return ""
    return abi.encode_call("x()", types, args)[4:].hex()
