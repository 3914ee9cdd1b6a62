"""The smart-wallet helpers of docs/interface.md, for one Tron chain.

Each function reads the chain facts it needs from the node, dry-runs the call with
``triggerconstantcontract`` (a revert becomes a 400 that says why, before the owner signs
anything, as ``eth_estimateGas`` does on EVM chains), then has the node build the
transaction and checks it (``txbuild``). None of them holds or asks for a merchant's key:
/initWallet and /initWithdraw return unsigned transactions, /deployWallet relays one the
owner already signed after checking that it only deploys a wallet.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

from paycore.chains import WithdrawRequest
from paycore.chains.common import (
    balance_entry,
    check_available,
    deploy_owner,
    not_deployed,
    withdraw_amount,
    withdraw_summary,
)
from paycore.chains.evm import abi
from paycore.domain.records import Json
from paycore.domain.tokens import NATIVE, tron_to_hex
from paycore.errors import InvalidInput
from paycore.prices.pricing import PriceTable

from . import rawtx, txbuild
from .address import to_evm, to_tron
from .chain import CallResult, TronChain

_ERROR_SELECTOR = abi.selector("Error(string)").hex()


def _revert_text(result: CallResult) -> str:
    """Why a dry run failed: ``Error(string)`` from the return data when the contract gave
    one, else the selector of a custom error (``FeeNotPaid(...)`` and friends), else the
    node's reason ("REVERT opcode executed", "Cannot transfer TRX to yourself.", an
    out-of-energy exception...)."""
    output = result.output
    if output.startswith(_ERROR_SELECTOR):
        text = abi.decode_string("0x" + output[8:])
        if text:
            return text
    if output and len(output) >= 8:
        return f"custom error 0x{output[:8]}"
    return result.message or "reverted"


def build_call(
    chain: TronChain, call: txbuild.ContractCall, field: str, what: str, *, dry_run: bool = True
) -> Json:
    """Dry-run ``call`` from its owner, then have the node build it; the helper's answer.
    Any failure of the dry run -- a revert, another TVM exception, a refusal before
    execution -- is a 400 with the reason, before the owner is asked to sign anything.
    ``dry_run`` False skips it, for a call that can only run after another one the owner
    has not sent yet (a batch payout after its ``approve``)."""
    if not dry_run:
        answer = chain.node.post("wallet/triggersmartcontract", call.request())
        transaction = txbuild.checked_transaction(call, answer, now_ms=int(time.time() * 1000))
        return txbuild.to_wire(call, chain.chain_id, transaction)
    dry = chain.call(
        call.contract,
        call.signature,
        call.args,
        call.types,
        caller=call.owner,
        call_value=call.call_value,
    )
    if dry.reverted:
        raise InvalidInput(field, f"{what} would fail: {_revert_text(dry)}")
    answer = chain.node.post("wallet/triggersmartcontract", call.request())
    transaction = txbuild.checked_transaction(call, answer, now_ms=int(time.time() * 1000))
    return txbuild.to_wire(call, chain.chain_id, transaction, dry.energy_used)


# -- /initWallet and /deployWallet ---------------------------------------------------------------


def init_wallet(chain: TronChain, owner: str) -> Json:
    """The owner's unsigned ``factory.deployWallet(owner)``, plus where the wallet will be."""
    wallet = chain.wallet_of(owner)
    if chain.has_code(wallet):
        raise InvalidInput("ownerAddress", f"wallet already deployed at {wallet}")
    call = txbuild.deploy_wallet_call(chain.factory, to_tron(owner), chain.config.fee_limit)
    return {**build_call(chain, call, "ownerAddress", "deployWallet"), "walletAddress": wallet}


def deploy_wallet(chain: TronChain, raw_tx: object) -> Json:
    """Relay a signed ``deployWallet`` call to this chain's factory; nothing else.

    ``rawTx`` is the signed transaction object TronWeb produces (``{txID, raw_data,
    raw_data_hex, signature}``, or its JSON text). The checks read ``raw_data_hex``, and
    what is broadcast is exactly those bytes with the signatures (``broadcasthex``): the
    ``raw_data`` JSON beside them is never trusted, since a node would rebuild the
    transaction from it.
    """
    if isinstance(raw_tx, str):
        try:
            raw_tx = json.loads(raw_tx)
        except ValueError:
            raise InvalidInput("rawTx", "must be a signed Tron transaction") from None
    tx_id, call = rawtx.read_transaction(raw_tx, "rawTx")
    assert isinstance(raw_tx, dict)
    if call.contract_type != rawtx.TRIGGER_SMART_CONTRACT:
        raise InvalidInput("rawTx", "must be a contract call")
    # The owner's own signed bytes may carry a memo or a Permission_id (a multi-signature
    # account); TRC10 tokens sent along would be something other than a deployment.
    if any(name in ("call_token_value", "token_id") for name in call.extras):
        raise InvalidInput("rawTx", "deployWallet takes no TRC10 tokens")
    owner = deploy_owner(
        to_factory=call.to == tron_to_hex(chain.factory),
        factory=chain.factory,
        data=call.data,
        value=call.call_value,
        coin="TRX",
    )
    signatures = raw_tx.get("signature")
    if not isinstance(signatures, list) or not signatures:
        raise InvalidInput("rawTx", "is not signed")
    try:
        signed = rawtx.signed_transaction(bytes.fromhex(raw_tx["raw_data_hex"]), signatures)
    except ValueError:
        raise InvalidInput("rawTx", "signatures must be 65 bytes of hex each") from None
    answer = chain.node.post("wallet/broadcasthex", {"transaction": signed.hex()})
    if answer.get("result") is not True:
        reason = answer.get("message") or answer.get("code") or "refused"
        raise InvalidInput("rawTx", f"the node refused it: {str(reason)[:200]}")
    owner_tron = to_tron(owner)
    return {
        "txHash": tx_id,
        "owner": owner_tron,
        "walletAddress": chain.wallet_of(owner_tron),
        "from": to_tron(call.owner),
    }


# -- /getBalances -------------------------------------------------------------------------------


def balances(
    chain: TronChain, owner: str, indexes: Sequence[int], tokens: Sequence[str], prices: PriceTable
) -> list[Json]:
    """One entry per token, the EVM backend's shape: ``{token, tokenId, symbol, decimals,
    balance, walletBalance, depositBalance, vsValue}``. The full-node API has no batch, so
    this is one request per (token, address): fine for a merchant's page of balances."""
    metas = chain.token_meta(tokens)
    wallet = chain.wallet_of(owner)
    deposits = [chain.deposit_of(owner, i) for i in indexes]
    entries: list[Json] = []
    for token in (t for t in tokens if t in metas):
        in_wallet = chain.balance(token, wallet)
        in_deposits = sum(chain.balance(token, d) for d in deposits)
        entries.append(balance_entry(chain.chain_id, metas[token], in_wallet, in_deposits, prices))
    return entries


# -- /initWithdraw ------------------------------------------------------------------------------


def init_withdraw(
    chain: TronChain, owner: str, indexes: Sequence[int], request: WithdrawRequest
) -> Json:
    """The owner's unsigned ``wallet.withdraw``: the contract is the wallet, the call value
    the operator's fee in SUN; ``value`` in the request is in the token's base units (SUN
    for TRX), ``amount`` in whole tokens.

    ``indexes`` are the owner's deposit indexes; the call collects from those that hold
    ``request.token`` and are not disabled on chain (contractType ``deposit``), or from none
    (``wallet``: pay out of the wallet's own balance only).
    """
    meta, amount = withdraw_amount(chain, request)
    wallet = chain.wallet_of(owner)
    if not chain.has_code(wallet):
        raise not_deployed(wallet)
    candidates = list(indexes) if request.contract_type == "deposit" else []
    chosen: list[int] = []
    available = chain.balance(request.token, wallet)
    for index in candidates:
        held = chain.balance(request.token, chain.deposit_of(owner, index))
        if held and not chain.index_disabled(wallet, index):
            chosen.append(index)
            available += held
    check_available(amount, available, meta)
    fee = chain.fee()
    call = txbuild.withdraw_call(
        wallet=wallet,
        owner=to_tron(owner),
        token=NATIVE if request.token == NATIVE else to_evm(request.token),
        to=request.to,
        amount=amount,
        indexes=chosen,
        fee=fee,
        fee_limit=chain.config.fee_limit,
    )
    built = build_call(chain, call, "ownerAddress", "the withdrawal")
    return {
        **built,
        **withdraw_summary(chosen, amount, fee, meta, chain.config.native_decimals),
        "value": amount,
        "token": request.token,
        "recipient": request.to,
    }
