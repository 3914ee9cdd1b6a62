"""Unsigned TVM contract calls for the owner to sign: wallet deployment and withdrawal.

On Tron the node builds a transaction (``/wallet/triggersmartcontract``: it fills the
reference block and expiry that make a transaction valid for about a minute), and the wallet
signs its ``txID``. So paycore asks the node, then checks the answer against what it asked
for, field by field (``built``): the protobuf bytes the signature will cover, and the JSON
beside them, which must say the same.
What the client receives is the node's transaction as it came -- ``{txID, raw_data,
raw_data_hex, visible}``, TronWeb's and TronLink's input -- under a ``transaction`` key
(docs/interface.md, /initWithdraw), next to the plain facts it was built from.

The request and check are pure functions; ``operations`` does the I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from paycore.chains.evm import abi
from paycore.domain.records import Json
from paycore.domain.tokens import tron_to_hex
from paycore.errors import InvalidInput

from . import built
from .address import to_evm
from .node import NodeError, call_fails, node_message

#: The fields of a built transaction a client signs and broadcasts.
TRANSACTION_FIELDS = ("txID", "raw_data", "raw_data_hex", "visible")


@attrs.frozen
class ContractCall:
    """One TVM contract call: who sends it, to which contract, with what calldata."""

    owner: str  # base58
    contract: str  # base58
    signature: str  # e.g. "deployWallet(address)"
    types: tuple[str, ...]
    args: tuple[object, ...]
    fee_limit: int
    call_value: int = 0

    @property
    def data(self) -> bytes:
        return abi.encode_call(self.signature, self.types, self.args)

    def request(self) -> dict[str, Any]:
        """The ``triggersmartcontract`` body (the same fields ``triggerconstantcontract``
        takes for a dry run)."""
        return {
            "owner_address": self.owner,
            "contract_address": self.contract,
            "function_selector": self.signature,
            "parameter": self.data[4:].hex(),
            "fee_limit": self.fee_limit,
            "call_value": self.call_value,
            "visible": True,
        }


def deploy_wallet_call(factory: str, owner: str, fee_limit: int) -> ContractCall:
    """``factory.deployWallet(owner)``, sent by the owner."""
    return ContractCall(
        owner=owner,
        contract=factory,
        signature=abi.DEPLOY_WALLET,
        types=("address",),
        args=(to_evm(owner),),
        fee_limit=fee_limit,
    )


def withdraw_call(
    *,
    wallet: str,
    owner: str,
    token: str,
    to: str,
    amount: int,
    indexes: Sequence[int],
    fee: int,
    fee_limit: int,
) -> ContractCall:
    """``wallet.withdraw(token, to, amount, indexes)`` with the operator's fee as call value
    (the fee is paid in TRX by the sender, never taken out of the withdrawn funds); indexes
    ascending and unique so equal requests build equal calldata."""
    return ContractCall(
        owner=owner,
        contract=wallet,
        signature=abi.WITHDRAW,
        types=("address", "address", "uint256", "uint256[]"),
        args=(to_evm(token), to_evm(to), amount, sorted(set(indexes))),
        fee_limit=fee_limit,
        call_value=fee,
    )


def checked_transaction(call: ContractCall, answer: object, now_ms: int | None = None) -> Json:
    """The node's built transaction for ``call``, after checking it is exactly that call.

    A refusal of the call (``result.code``: the owner account does not exist yet, too
    little TRX for the call value) raises InvalidInput with the node's reason; the node's
    own trouble raises NodeError (502); a transaction that is not exactly the call asked
    for -- any field, see ``built`` -- raises ``UnexpectedTransaction`` (502): a node that
    builds something else must not be signed for. ``now_ms`` bounds its expiry.
    """
    if not isinstance(answer, dict):
        raise NodeError(built.PATH, "not a JSON object")
    result = answer.get("result")
    result = result if isinstance(result, dict) else {}
    if result.get("result") is not True or result.get("code") not in (None, "SUCCESS"):
        message = node_message(result.get("message"), str(result.get("code") or "no reason"))
        if not call_fails(result.get("code"), result.get("message")):
            raise NodeError(built.PATH, message)
        raise InvalidInput("ownerAddress", f"the node refused the transaction: {message}")
    tx = answer.get("transaction")
    if not isinstance(tx, dict):
        raise built.UnexpectedTransaction("transaction", "missing")
    expected = built.Expected(
        owner=tron_to_hex(call.owner),
        contract=tron_to_hex(call.contract),
        data=call.data,
        call_value=call.call_value,
        fee_limit=call.fee_limit,
    )
    built.check(expected, tx, now_ms)
    return {key: tx[key] for key in TRANSACTION_FIELDS if key in tx}


def to_wire(
    call: ContractCall, chain_id: int, transaction: Json, energy: int | None = None
) -> Json:
    """The helper's answer: the transaction to sign under ``transaction``, and the facts it
    was built from so a client can show them without decoding protobuf."""
    wire: Json = {
        "transaction": transaction,
        "txID": transaction.get("txID"),
        "from": call.owner,
        "to": call.contract,
        "data": "0x" + call.data.hex(),
        "callValue": call.call_value,
        "feeLimit": call.fee_limit,
        "chainId": chain_id,
    }
    if energy is not None:
        wire["energyEstimate"] = energy
    return wire
