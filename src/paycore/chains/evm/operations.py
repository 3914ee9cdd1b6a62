"""The smart-wallet helpers of docs/interface.md, for one EVM chain.

Each function gathers the chain facts it needs in as few JSON-RPC batches as it can, then
hands them to the pure builders in ``txbuild``. None of them holds or asks for a merchant's
key: /initWallet and /initWithdraw return unsigned transactions, /deployWallet relays one
the owner already signed (after checking it only deploys a wallet), and only /getFaucet
signs -- with the operator's dev-chain key, on dev chains only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from eth_account import Account

from paycore.chains import WithdrawRequest
from paycore.chains.common import (
    balance_entry,
    check_available,
    deploy_owner,
    not_deployed,
    withdraw_amount,
    withdraw_summary,
)
from paycore.config import FAUCET_CHAIN_IDS
from paycore.domain.money import to_base_units, to_text
from paycore.domain.records import Json
from paycore.domain.tokens import NATIVE
from paycore.errors import InvalidInput
from paycore.prices.pricing import PriceTable

from . import abi, txbuild
from .chain import EvmChain
from .relay import decode_raw_tx
from .rpc import RpcError, execution_failure


def _has_code(result: object) -> bool:
    return isinstance(result, str) and result not in ("0x", "0x0", "")


def _would_fail(error: RpcError, what: str) -> InvalidInput:
    """A 400 for an estimate the call itself fails (a revert or another EVM failure, with
    the node's reason); the node's own trouble is raised as it is (502)."""
    reason = execution_failure(error)
    if reason is None:
        raise error
    return InvalidInput("ownerAddress", f"{what} would fail: {reason}")


# -- /initWallet and /deployWallet ---------------------------------------------------------------


def init_wallet(chain: EvmChain, owner: str) -> Json:
    """The owner's unsigned ``factory.deployWallet(owner)``, plus where the wallet will be."""
    wallet = chain.wallet_of(owner)
    data = "0x" + abi.deploy_wallet_data(owner).hex()
    code, gas_price, nonce, estimate = chain.rpc.batch_outcomes(
        [
            ("eth_getCode", [wallet, "latest"]),
            ("eth_gasPrice", []),
            ("eth_getTransactionCount", [owner, "pending"]),
            ("eth_estimateGas", [{"from": owner, "to": chain.factory, "data": data}]),
        ]
    )
    for outcome in (code, gas_price, nonce):
        if isinstance(outcome, RpcError):
            raise outcome
    if _has_code(code):
        raise InvalidInput("ownerAddress", f"wallet already deployed at {wallet}")
    if isinstance(estimate, RpcError):
        raise _would_fail(estimate, "deployWallet")
    tx = txbuild.deploy_wallet_tx(
        chain_id=chain.chain_id,
        factory=chain.factory,
        owner=owner,
        gas_estimate=int(estimate, 16),
        gas_price=int(gas_price, 16),
        nonce=int(nonce, 16),
    )
    return {**tx.to_wire(), "walletAddress": wallet}


def deploy_wallet(chain: EvmChain, raw_tx: object) -> Json:
    """Relay a signed ``deployWallet`` transaction to this chain's factory; nothing else."""
    tx = decode_raw_tx(raw_tx)
    if tx.chain_id != chain.chain_id:
        where = "no chain id (pre-EIP-155)" if tx.chain_id is None else f"chain {tx.chain_id}"
        raise InvalidInput("rawTx", f"signed for {where}, not {chain.chain_id}")
    owner = deploy_owner(
        to_factory=tx.to == chain.factory,
        factory=chain.factory,
        data=tx.data,
        value=tx.value,
        coin="native coin",
    )
    tx_hash = chain.rpc.call("eth_sendRawTransaction", [raw_tx])
    return {
        "txHash": tx_hash,
        "owner": owner,
        "walletAddress": chain.wallet_of(owner),
        "from": tx.sender,
    }


# -- /getBalances -------------------------------------------------------------------------------


def balances(
    chain: EvmChain, owner: str, indexes: Sequence[int], tokens: Sequence[str], prices: PriceTable
) -> list[Json]:
    """One entry per token: what the wallet holds, what its deposit addresses hold, the sum.

    Entry: ``{token, tokenId, symbol, decimals, balance, walletBalance, depositBalance,
    vsValue}``; balances are decimal strings in whole tokens, ``vsValue`` a number in
    vsCurrency or null when the token has no price. Disabled indexes are counted: the funds
    are the owner's, only withdrawals skip them.
    """
    metas = chain.token_meta(tokens)
    wallet = chain.wallet_of(owner)
    holders = [wallet, *(chain.deposit_of(owner, i) for i in indexes)]
    order = [t for t in tokens if t in metas]
    calls = [chain.balance_call(t, h) for t in order for h in holders]
    results = chain.rpc.batch(calls)
    entries: list[Json] = []
    for n, token in enumerate(order):
        row = [abi.decode_uint(r) for r in results[n * len(holders) : (n + 1) * len(holders)]]
        entries.append(balance_entry(chain.chain_id, metas[token], row[0], sum(row[1:]), prices))
    return entries


# -- /initWithdraw ------------------------------------------------------------------------------


def init_withdraw(
    chain: EvmChain, owner: str, indexes: Sequence[int], request: WithdrawRequest
) -> Json:
    """The owner's unsigned ``wallet.withdraw``: ``to`` is the wallet, ``value`` the fee.

    ``indexes`` are the owner's deposit indexes; the transaction collects from those that
    hold ``request.token`` and are not disabled on chain (contractType ``deposit``), or
    from none (``wallet``: pay out of the wallet's own balance only).
    """
    meta, amount = withdraw_amount(chain, request)
    wallet = chain.wallet_of(owner)
    candidates = list(indexes) if request.contract_type == "deposit" else []
    calls = [
        ("eth_getCode", [wallet, "latest"]),
        ("eth_gasPrice", []),
        ("eth_getTransactionCount", [owner, "pending"]),
        chain.fee_call(),
        chain.balance_call(request.token, wallet),
    ]
    calls += [chain.balance_call(request.token, chain.deposit_of(owner, i)) for i in candidates]
    calls += [chain.disabled_call(wallet, i) for i in candidates]
    results: list[Any] = chain.rpc.batch(calls)
    code, gas_price, nonce, fee_result, wallet_balance = results[:5]
    held = [abi.decode_uint(r) for r in results[5 : 5 + len(candidates)]]
    disabled = [abi.decode_uint(r) != 0 for r in results[5 + len(candidates) :]]
    if not _has_code(code):
        raise not_deployed(wallet)
    chosen = [i for i, h, off in zip(candidates, held, disabled, strict=True) if h and not off]
    available = abi.decode_uint(wallet_balance) + sum(
        h for h, off in zip(held, disabled, strict=True) if h and not off
    )
    check_available(amount, available, meta)
    fee = chain.fee_from(fee_result)
    data = "0x" + txbuild.withdraw_call(request.token, request.to, amount, chosen).hex()
    try:
        estimate = chain.rpc.call(
            "eth_estimateGas", [{"from": owner, "to": wallet, "data": data, "value": hex(fee)}]
        )
    except RpcError as exc:
        raise _would_fail(exc, "the withdrawal") from None
    tx = txbuild.withdraw_tx(
        chain_id=chain.chain_id,
        wallet=wallet,
        owner=owner,
        token=request.token,
        to=request.to,
        amount=amount,
        indexes=chosen,
        fee=fee,
        gas_estimate=int(estimate, 16),
        gas_price=int(gas_price, 16),
        nonce=int(nonce, 16),
    )
    return {
        **tx.to_wire(),
        **withdraw_summary(chosen, amount, fee, meta, chain.config.native_decimals),
    }


# -- /getFaucet ---------------------------------------------------------------------------------


def faucet(chain: EvmChain, to: str) -> Json:
    """Send ``faucet_amount`` native coin from the configured dev key (dev chains only)."""
    config = chain.config
    if chain.chain_id not in FAUCET_CHAIN_IDS:
        raise InvalidInput("chainId", "the faucet exists on chain 1337 and 31337 only")
    if not config.faucet_key:
        raise InvalidInput("chainId", f"no faucet key is configured for chain {chain.chain_id}")
    account = Account.from_key(config.faucet_key)
    value = to_base_units(config.faucet_amount, config.native_decimals, "faucet_amount")
    with chain.faucet_lock:
        gas_price, nonce = chain.rpc.batch(
            [("eth_gasPrice", []), ("eth_getTransactionCount", [account.address, "pending"])]
        )
        tx = {"from": account.address, "to": to, "value": hex(value)}
        gas = int(chain.rpc.call("eth_estimateGas", [tx]), 16)
        signed = account.sign_transaction(
            {
                "chainId": chain.chain_id,
                "to": to,
                "value": value,
                "gas": gas,
                "gasPrice": int(gas_price, 16),
                "nonce": int(nonce, 16),
            }
        )
        tx_hash = chain.rpc.call("eth_sendRawTransaction", ["0x" + signed.raw_transaction.hex()])
    return {
        "txHash": tx_hash,
        "to": to,
        "token": NATIVE,
        "amount": to_text(config.faucet_amount),
    }
