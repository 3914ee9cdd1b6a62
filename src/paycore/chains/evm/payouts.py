"""Batch payouts on an EVM chain: ``PaycoreBatchPay.pay`` calls for the owner to sign.

The contract pays every row of a call from msg.sender's own funds (native coin by
msg.value, ERC20 by ``transferFrom(msg.sender, ...)``), so paycore never holds a merchant's
money: it only reads balances and allowances, splits the rows into as few calls as the block
gas limit leaves room for, and answers with unsigned transactions. A token whose allowance
to the contract is short gets an ``approve`` of exactly the batch's total first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from eth_abi.abi import decode as abi_decode

from paycore.crypto.hashing import keccak256
from paycore.domain.records import Json
from paycore.domain.tokens import NATIVE, to_checksum
from paycore.errors import InvalidInput
from paycore.payouts import plan
from paycore.payouts.backend import BuiltCall, BuiltPayouts, MinedCall
from paycore.payouts.rows import PayoutRow

from . import abi, txbuild
from .chain import EvmChain
from .rpc import RpcError, execution_failure

PAY = "pay(bytes32,address[],address[],uint256[])"
MAX_ROWS_PER_CALL = plan.MAX_ROWS_PER_CALL
#: Gas one row may cost at most: an ERC20 transferFrom to a fresh holder, or native coin
#: to a fresh account, is about 35,000 (bench/payout_gas.py prints the measured figure);
#: the bound leaves room for tokens with hooks or fees. Used to split rows into calls and
#: as the gas of a call that cannot be estimated yet (its approve is not mined).
ROW_GAS = 60_000
#: The call's own cost: the base transaction, the loop and the event.
CALL_GAS = 60_000
#: The share of the block gas limit one call may take, so it still fits a busy block.
BLOCK_SHARE_PERCENT = 50


def pay_data(ref: bytes, rows: Sequence[PayoutRow]) -> bytes:
    """Calldata of ``pay(ref, tokens, recipients, amounts)`` for ``rows``, in their order."""
    return abi.encode_call(
        PAY,
        ["bytes32", "address[]", "address[]", "uint256[]"],
        [
            ref,
            [to_checksum(r.token) for r in rows],
            [to_checksum(r.to) for r in rows],
            [r.value for r in rows],
        ],
    )


def decode_pay(data: bytes) -> tuple[bytes, list[str], list[str], list[int]] | None:
    """The arguments of a ``pay`` calldata, or None for any other calldata."""
    if data[:4] != abi.selector(PAY):
        return None
    ref, tokens, recipients, amounts = abi_decode(
        ["bytes32", "address[]", "address[]", "uint256[]"], data[4:]
    )
    return (
        bytes(ref),
        [to_checksum(t) for t in tokens],
        [to_checksum(r) for r in recipients],
        [int(a) for a in amounts],
    )


def rows_per_call(block_gas_limit: int) -> int:
    room = block_gas_limit * BLOCK_SHARE_PERCENT // 100 - CALL_GAS
    return max(1, min(plan.MAX_ROWS_PER_CALL, room // ROW_GAS))


class EvmPayouts:
    """The ``paycore.payouts.backend.PayoutBackend`` part of one EVM chain."""

    def __init__(self, chain: EvmChain) -> None:
        self.chain = chain

    def build_payouts(
        self, owner: str, contract: str, ref: bytes, rows: Sequence[PayoutRow]
    ) -> BuiltPayouts:
        chain = self.chain
        totals = plan.totals(rows)
        tokens = list(totals)
        erc20 = [t for t in tokens if t != NATIVE]
        reads: list[Any] = [
            ("eth_getCode", [contract, "latest"]),
            ("eth_gasPrice", []),
            ("eth_getTransactionCount", [owner, "pending"]),
            ("eth_getBlockByNumber", ["latest", False]),
        ]
        reads += [chain.balance_call(t, owner) for t in tokens]
        reads += [
            (
                "eth_call",
                [
                    {
                        "to": t,
                        "data": abi.view_data(
                            "allowance(address,address)", owner, contract,
                            types=("address", "address"),
                        ),
                    },
                    "latest",
                ],
            )
            for t in erc20
        ]  # fmt: skip
        outcomes = chain.rpc.batch_outcomes(reads)
        for outcome in outcomes[:4]:
            if isinstance(outcome, RpcError):
                raise outcome
        code, gas_price_hex, nonce_hex, block = outcomes[:4]
        if code in ("0x", "0x0", "", None):
            raise InvalidInput("chainId", f"no batch payout contract at {contract}")
        gas_price, nonce = int(gas_price_hex, 16), int(nonce_hex, 16)
        balances = outcomes[4 : 4 + len(tokens)]
        allowances = dict(zip(erc20, outcomes[4 + len(tokens) :], strict=True))
        approvals: list[Json] = []
        for token, held_raw in zip(tokens, balances, strict=True):
            if isinstance(held_raw, RpcError):
                raise InvalidInput("token", f"{token} does not answer balanceOf: {held_raw.text}")
            decimals = plan.token_decimals(
                chain.config.native_decimals, chain.config.token_info, token
            )
            plan.refuse_short(owner, token, totals[token], abi.decode_uint(held_raw), decimals)
        for token in erc20:
            allowance = allowances[token]
            if isinstance(allowance, RpcError) or abi.decode_uint(allowance) < totals[token]:
                data = abi.encode_call(
                    "approve(address,uint256)", ["address", "uint256"], [contract, totals[token]]
                )
                approvals.append(self._tx(owner, token, data, 0, 70_000, gas_price, nonce))
                nonce += 1
        per_call = rows_per_call(int(block["gasLimit"], 16))
        calls: list[BuiltCall] = []
        for index, chunk in enumerate(plan.split(rows, per_call)):
            data = pay_data(plan.call_ref(ref, index), chunk)
            value = sum(r.value for r in chunk if r.token == NATIVE)
            gas = CALL_GAS + ROW_GAS * len(chunk)
            if not approvals:
                gas = self._estimate(owner, contract, data, value)
            tx = self._tx(owner, contract, data, value, gas, gas_price, nonce)
            nonce += 1
            calls.append(BuiltCall(chunk, tx, "0x" + keccak256(data).hex()))
        return BuiltPayouts(tuple(approvals), tuple(calls))

    def mined_call(self, tx_hash: str) -> MinedCall | None:
        tx, receipt = self.chain.rpc.batch(
            [("eth_getTransactionByHash", [tx_hash]), ("eth_getTransactionReceipt", [tx_hash])]
        )
        if not tx or not receipt or receipt.get("blockNumber") is None:
            return None
        data = bytes.fromhex(str(tx.get("input") or tx.get("data") or "0x")[2:])
        to = tx.get("to")
        return MinedCall(
            sender=to_checksum(tx["from"]),
            to=None if to is None else to_checksum(to),
            data_hash="0x" + keccak256(data).hex(),
            success=int(receipt.get("status", "0x0"), 16) == 1,
        )

    # -- helpers --------------------------------------------------------------------------
    def _estimate(self, owner: str, contract: str, data: bytes, value: int) -> int:
        request = {"from": owner, "to": contract, "data": "0x" + data.hex(), "value": hex(value)}
        try:
            estimate = self.chain.rpc.call("eth_estimateGas", [request])
        except RpcError as exc:
            reason = execution_failure(exc)
            if reason is None:
                raise
            raise InvalidInput("rows", f"the payout would fail: {reason}") from None
        return txbuild.with_headroom(int(estimate, 16))

    def _tx(
        self, owner: str, to: str, data: bytes, value: int, gas: int, gas_price: int, nonce: int
    ) -> Json:
        return txbuild.UnsignedTx(
            chain_id=self.chain.chain_id,
            from_=owner,
            to=to,
            data=data,
            gas=gas,
            gas_price=gas_price,
            nonce=nonce,
            value=value,
        ).to_wire()
