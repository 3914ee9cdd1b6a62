"""Batch payouts on Tron: the ``PaycoreBatchPay.pay`` call for the TVM, as TronGrid's
``triggersmartcontract`` takes it (``function_selector`` and ``parameter``).

The contract is the EVM one compiled unchanged (the TVM runs the same bytecode); only the
addresses differ: a Tron address is ``0x41`` and 20 bytes, and the ABI carries the 20 bytes.
TRC20 rows move by ``transferFrom(msg.sender, ...)`` like ERC20 ones, TRX rows by
``msg.value`` (``call_value`` in SUN). The encoding is checked against TronWeb's
(tests/chains/tron/test_tron_payouts_tronweb.py).

:class:`TronPayouts` builds the unsigned transactions as paycore's other Tron helpers do
(``operations.build_call``: the node's ``triggersmartcontract``, checked field by field), and
reads a mined one back (``gettransactionbyid`` and ``gettransactioninfobyid``) for the
confirm step. The rules -- totals, the refusal of a batch the owner cannot cover, the split,
each call's tag, which hash settles which rows -- are the payouts service's
(``paycore.payouts``), the same as on EVM chains.
"""

from __future__ import annotations

from collections.abc import Sequence

from eth_abi.abi import encode as abi_encode

from paycore.crypto.hashing import keccak256
from paycore.domain.tokens import NATIVE, tron_to_hex
from paycore.errors import InvalidInput
from paycore.payouts import plan
from paycore.payouts.backend import BuiltCall, BuiltPayouts, MinedCall
from paycore.payouts.rows import PayoutRow

from ..evm import abi
from . import rawtx, txbuild
from .address import to_evm, to_tron
from .chain import TronChain
from .operations import build_call

#: The function, as ``triggersmartcontract``'s ``function_selector`` names it.
PAY = "pay(bytes32,address[],address[],uint256[])"
_TYPES = ["bytes32", "address[]", "address[]", "uint256[]"]
APPROVE = "approve(address,uint256)"
#: Energy one row may cost at most (a TRC20 ``transferFrom`` to a fresh holder is about
#: 30,000, as on the EVM), and the call's own; with :data:`SUN_PER_ENERGY` they make each
#: call's ``fee_limit``, the most the owner may burn, never what it does burn.
ROW_ENERGY = 60_000
CALL_ENERGY = 60_000
#: A bound on the SUN one unit of energy burns (mainnet's price has been 210 to 420).
SUN_PER_ENERGY = 420
#: The highest ``fee_limit`` java-tron accepts (``maxFeeLimit``, 15,000 TRX).
MAX_FEE_LIMIT = 15_000_000_000
#: Rows in one call: as many as :data:`MAX_FEE_LIMIT` pays energy for, within the
#: shared cap.
ROWS_PER_CALL = (MAX_FEE_LIMIT // SUN_PER_ENERGY - CALL_ENERGY) // ROW_ENERGY


def _word(address: str) -> str:
    """The ABI's 20 bytes of a Tron address (base58); the zero address stays the coin."""
    if address == NATIVE:
        return NATIVE
    return "0x" + tron_to_hex(address)[2:]


def pay_parameter(ref: bytes, rows: Sequence[PayoutRow]) -> str:
    """``parameter`` of the call: the ABI-encoded arguments, hex without 0x or selector."""
    encoded = abi_encode(
        _TYPES,
        [
            ref,
            [_word(r.token) for r in rows],
            [_word(r.to) for r in rows],
            [r.value for r in rows],
        ],
    )
    return encoded.hex()


def pay_data(ref: bytes, rows: Sequence[PayoutRow]) -> bytes:
    """The whole calldata: the selector, then :func:`pay_parameter`."""
    return abi.selector(PAY) + bytes.fromhex(pay_parameter(ref, rows))


def call_value(rows: Sequence[PayoutRow]) -> int:
    """SUN the call carries: the sum of the TRX rows."""
    return sum(r.value for r in rows if r.token == NATIVE)


def fee_limit(rows: int) -> int:
    """The ``fee_limit`` (SUN) of a call paying ``rows`` rows."""
    return min(MAX_FEE_LIMIT, (CALL_ENERGY + ROW_ENERGY * rows) * SUN_PER_ENERGY)


def pay_call(
    owner: str, contract: str, ref: bytes, rows: Sequence[PayoutRow]
) -> txbuild.ContractCall:
    """``contract.pay(ref, tokens, recipients, amounts)`` from ``owner`` (base58)."""
    return txbuild.ContractCall(
        owner=owner,
        contract=contract,
        signature=PAY,
        types=tuple(_TYPES),
        args=(
            ref,
            [_word(r.token) for r in rows],
            [_word(r.to) for r in rows],
            [r.value for r in rows],
        ),
        fee_limit=fee_limit(len(rows)),
        call_value=call_value(rows),
    )


class TronPayouts:
    """The ``paycore.payouts.backend.PayoutBackend`` part of one Tron chain."""

    def __init__(self, chain: TronChain) -> None:
        self.chain = chain

    def build_payouts(
        self, owner: str, contract: str, ref: bytes, rows: Sequence[PayoutRow]
    ) -> BuiltPayouts:
        chain = self.chain
        owner, contract = to_tron(owner, "ownerAddress"), to_tron(contract, "batch_pay")
        if not chain.has_code(contract):
            raise InvalidInput("chainId", f"no batch payout contract at {contract}")
        totals = plan.totals(rows)
        metas = chain.token_meta([t for t in totals if t != NATIVE])
        for token, needed in totals.items():
            decimals = plan.token_decimals(chain.config.native_decimals, metas, token)
            plan.refuse_short(owner, token, needed, chain.balance(token, owner), decimals)
        approvals: list[dict[str, object]] = []
        for token in (t for t in totals if t != NATIVE):
            allowance = chain.call(
                token, "allowance(address,address)", [to_evm(owner), to_evm(contract)],
                ["address", "address"],
            )  # fmt: skip
            allowed = 0
            if not allowance.reverted and allowance.output:
                allowed = abi.decode_uint("0x" + allowance.output[:64])
            if allowed < totals[token]:
                call = txbuild.ContractCall(
                    owner=owner,
                    contract=token,
                    signature=APPROVE,
                    types=("address", "uint256"),
                    args=(to_evm(contract), totals[token]),
                    fee_limit=chain.config.fee_limit,
                )
                approvals.append(build_call(chain, call, "rows", "the approve"))
        calls: list[BuiltCall] = []
        for index, chunk in enumerate(plan.split(rows, ROWS_PER_CALL)):
            call = pay_call(owner, contract, plan.call_ref(ref, index), chunk)
            wire = build_call(chain, call, "rows", "the payout", dry_run=not approvals)
            calls.append(BuiltCall(chunk, wire, "0x" + keccak256(call.data).hex()))
        return BuiltPayouts(tuple(approvals), tuple(calls))

    def mined_call(self, tx_hash: str) -> MinedCall | None:
        """The transaction ``tx_hash`` once in a block: its sender, contract and calldata
        read from its own signed bytes (``raw_data_hex``, whose sha256 must be the id), and
        whether it succeeded from its TransactionInfo (``receipt.result``)."""
        tx_id = tx_hash.removeprefix("0x").lower()
        info = self.chain.node.post("wallet/gettransactioninfobyid", {"value": tx_id})
        if not isinstance(info, dict) or not info.get("blockNumber"):
            return None
        tx = self.chain.node.post("wallet/gettransactionbyid", {"value": tx_id})
        found, call = rawtx.read_transaction(tx, "txHashes")
        if found != tx_id or call.contract_type != rawtx.TRIGGER_SMART_CONTRACT:
            raise InvalidInput("txHashes", f"{tx_hash} is not a contract call")
        receipt = info.get("receipt")
        result = receipt.get("result") if isinstance(receipt, dict) else None
        return MinedCall(
            sender=to_tron(call.owner),
            to=to_tron(call.to),
            data_hash="0x" + keccak256(call.data).hex(),
            success=result == "SUCCESS" and info.get("result") != "FAILED",
        )
