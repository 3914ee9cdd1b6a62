"""The owner's wallet flow on Tron over HTTP: /initWallet, a TronLink-style signature,
/deployWallet, /getBalances, /initWithdraw in both request forms, and a withdrawal seen by
the watcher in /history -- against the local TronGrid stand-in, through tronpy.

The unsigned transactions are read back with the test's own protobuf reader, and their
calldata is compared with eth_abi's encoding, so nothing here trusts paycore's builders.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

import pytest
from eth_abi import encode
from fake_trongrid import b58, h20, keccak256, read_pb
from tron_env import (
    CHAIN_ID,
    FACTORY,
    PAYER,
    TRX,
    USD,
    USDT,
    Env,
    address_of,
    drain,
    open_env,
    watcher,
)
from tron_env import key as tron_key

from paycore import NATIVE

pytestmark = pytest.mark.slow  # end to end over HTTP against the TronGrid stand-in


@pytest.fixture
def env() -> Iterator[Env]:
    with open_env("core") as opened:
        yield opened


def decoded(transaction: dict[str, Any]) -> dict[str, Any]:
    """What the signed bytes say: the test's reading of ``raw_data_hex``."""
    raw = bytes.fromhex(transaction["raw_data_hex"])
    assert hashlib.sha256(raw).hexdigest() == transaction["txID"]
    top = dict(read_pb(raw))
    contract = dict(read_pb(top[11]))  # type: ignore[arg-type]
    value = dict(read_pb(dict(read_pb(contract[2]))[2]))  # type: ignore[arg-type]
    return {
        "type": contract[1],
        "owner": b58(value[1].hex()),  # type: ignore[union-attr]
        "contract": b58(value[2].hex()),  # type: ignore[union-attr]
        "call_value": value.get(3, 0),
        "data": value.get(4, b"").hex(),  # type: ignore[union-attr]
        "fee_limit": top.get(18, 0),
    }


def selector(signature: str) -> str:
    return keccak256(signature.encode()).hex()[:8]


def evm(address: str) -> str:
    return "0x" + h20(address)


def signed(owner: Any, transaction: dict[str, Any]) -> dict[str, Any]:
    """What TronWeb's ``trx.sign`` adds: a signature over the txID."""
    signature = owner.sign_msg_hash(bytes.fromhex(transaction["txID"]))
    return {**transaction, "signature": [signature.hex()]}


def deploy(env: Env, owner: Any, owner_t: str) -> dict[str, Any]:
    env.chain.send_trx(address_of(PAYER), owner_t, 100 * TRX)  # the owner pays for energy
    env.chain.mine()
    built: dict[str, Any] = env.api.post(
        "/initWallet", {"ownerAddress": owner_t, "chainId": CHAIN_ID}
    ).ok()
    relayed = env.api.post(
        "/deployWallet", {"rawTx": signed(owner, built["transaction"]), "chainId": CHAIN_ID}
    ).ok()
    env.chain.mine()
    return {"built": built, "relayed": relayed}


def test_init_wallet_builds_the_factory_call_and_deploy_wallet_relays_it(env: Env) -> None:
    owner, owner_t, _session = env.merchant()
    # A Tron account must exist (hold TRX) before it can send anything: the node says so.
    refused = env.api.post("/initWallet", {"ownerAddress": owner_t, "chainId": CHAIN_ID})
    assert "does not exist" in refused.error(400)

    done = deploy(env, owner, owner_t)
    built = done["built"]
    wallet = b58(env.chain.wallet_for(owner_t))
    assert built["walletAddress"] == wallet
    assert set(built["transaction"]) == {"txID", "raw_data", "raw_data_hex", "visible"}
    assert decoded(built["transaction"]) == {
        "type": 31,
        "owner": owner_t,
        "contract": FACTORY,
        "call_value": 0,
        "data": selector("deployWallet(address)") + encode(["address"], [evm(owner_t)]).hex(),
        "fee_limit": 150_000_000,  # the chain's fee_limit from config
    }
    assert built["transaction"]["raw_data"]["fee_limit"] == 150_000_000
    assert (built["to"], built["from"], built["feeLimit"]) == (FACTORY, owner_t, 150_000_000)
    assert built["energyEstimate"] > 0
    assert done["relayed"] == {
        "txHash": built["transaction"]["txID"],
        "owner": owner_t,
        "walletAddress": wallet,
        "from": owner_t,
    }
    assert h20(wallet) in env.chain.wallets()
    again = env.api.post("/initWallet", {"ownerAddress": owner_t, "chainId": CHAIN_ID})
    assert "already deployed" in again.error(400)


def test_deploy_wallet_relays_nothing_else(env: Env) -> None:
    owner, owner_t, _session = env.merchant()
    env.chain.send_trx(address_of(PAYER), owner_t, 100 * TRX)
    env.chain.mine()
    built = env.api.post("/initWallet", {"ownerAddress": owner_t, "chainId": CHAIN_ID}).ok()
    tx = signed(owner, built["transaction"])
    tampered = {**tx, "raw_data_hex": tx["raw_data_hex"][:-2] + "00"}
    answer = env.api.post("/deployWallet", {"rawTx": tampered, "chainId": CHAIN_ID})
    assert "sha256" in answer.error(400)
    unsigned = {k: v for k, v in tx.items() if k != "signature"}
    answer = env.api.post("/deployWallet", {"rawTx": unsigned, "chainId": CHAIN_ID})
    assert "not signed" in answer.error(400)
    by_another = signed(tron_key("mallory"), built["transaction"])
    answer = env.api.post("/deployWallet", {"rawTx": by_another, "chainId": CHAIN_ID})
    assert "refused" in answer.error(400)
    transfer = env.chain._tx(  # a TRX transfer, not a factory call
        {
            "parameter": {
                "value": {
                    "amount": 1,
                    "owner_address": "41" + h20(owner_t),
                    "to_address": "41" + h20(FACTORY),
                },
                "type_url": "type.googleapis.com/protocol.TransferContract",
            },
            "type": "TransferContract",
        }
    )
    answer = env.api.post("/deployWallet", {"rawTx": signed(owner, transfer), "chainId": CHAIN_ID})
    assert "contract call" in answer.error(400)
    assert not env.chain.wallets()


def test_balances_and_both_withdraw_forms(env: Env) -> None:
    owner, owner_t, session = env.merchant()
    deploy(env, owner, owner_t)
    wallet = b58(env.chain.wallet_for(owner_t))
    env.chain.fee = (h20(b58("99" * 20)), 2 * TRX)
    body = {
        "value": "10",
        "chainId": CHAIN_ID,
        "description": "o",
        "acceptedTokens": [f"{CHAIN_ID}:{USDT}"],
    }
    invoice = env.api.post("/invoice", body, session=session).ok(201)
    second = env.api.post("/invoice", body, session=session).ok(201)  # index 1, never paid
    env.pay_usdt(invoice["address"], 10 * USD)
    env.pay_trx(invoice["address"], 3 * TRX)
    env.chain.mine(3)

    balances = env.api.post(
        "/getBalances", {"ownerAddress": owner_t, "chainId": CHAIN_ID}, session=session
    ).ok()
    by_token = {b["token"]: b for b in balances}
    assert by_token[USDT]["depositBalance"] == "10"
    assert by_token[USDT]["walletBalance"] == "0"
    assert (by_token[USDT]["symbol"], by_token[USDT]["decimals"], by_token[USDT]["vsValue"]) == (
        "USDT",
        6,
        10,
    )
    assert by_token[NATIVE]["depositBalance"] == "3"
    assert by_token[NATIVE]["symbol"] == "TRX"

    recipient = address_of(tron_key("recipient"))
    expected_data = (
        selector("withdraw(address,address,uint256,uint256[])")
        + encode(
            ["address", "address", "uint256", "uint256[]"],
            [evm(USDT), evm(recipient), 7_500_000, [0]],
        ).hex()
    )
    forms = [{"amount": "7.5"}, {"value": 7_500_000}, {"value": "7500000"}]
    for form in forms:
        request = {
            "to": recipient,
            "ownerAddress": owner_t,
            "tokenAddress": USDT,
            "chainId": CHAIN_ID,
            **form,
        }
        built = env.api.post("/initWithdraw", request, session=session).ok()
        assert decoded(built["transaction"]) == {
            "type": 31,
            "owner": owner_t,
            "contract": wallet,
            "call_value": 2 * TRX,  # the operator's fee, in SUN
            "data": expected_data,  # collects index 0 only: index 1 holds nothing
            "fee_limit": 150_000_000,
        }, form
        assert (built["indexes"], built["amount"], built["fee"]) == ([0], "7.5", "2")
    assert second["address"] != invoice["address"]

    trx = {
        "to": recipient,
        "ownerAddress": owner_t,
        "token": "0x" + "00" * 20,
        "value": 2_500_000,
        "chainId": CHAIN_ID,
    }
    built = env.api.post("/initWithdraw", trx, session=session).ok()
    assert decoded(built["transaction"])["data"].endswith(
        encode(
            ["address", "address", "uint256", "uint256[]"],
            ["0x" + "00" * 20, evm(recipient), 2_500_000, [0]],
        ).hex()
    )
    too_much = {**trx, "value": 50 * TRX}
    assert "available" in env.api.post("/initWithdraw", too_much, session=session).error(400)


def test_a_withdrawal_on_chain_is_listed_in_history(env: Env) -> None:
    owner, owner_t, session = env.merchant()
    deploy(env, owner, owner_t)
    w = watcher(env.gateway)
    drain(w)
    wallet = b58(env.chain.wallet_for(owner_t))
    recipient = address_of(tron_key("recipient"))
    env.chain.emit_withdrawn(owner_t, wallet, USDT, recipient, 5 * USD)
    # The same event from a contract that is not a paycore wallet is ignored.
    env.chain.emit_withdrawn(owner_t, b58("55" * 20), USDT, recipient, 9 * USD)
    env.chain.mine(3)
    assert sum(r.withdrawals for r in drain(w)) == 1
    history = env.api.post(
        "/history", {"ownerAddress": owner_t, "chainId": CHAIN_ID}, session=session
    ).ok()
    [item] = history
    assert (item["type"], item["from"], item["to"], item["token"], item["amount"]) == (
        "withdraw",
        wallet,
        recipient,
        USDT,
        "5",
    )


def test_a_node_that_is_down_is_a_502() -> None:
    with open_env("core", rpc_url="http://127.0.0.1:9") as env:
        _owner, owner_t, _session = env.merchant()
        answer = env.api.post("/initWallet", {"ownerAddress": owner_t, "chainId": CHAIN_ID})
        assert answer.error(502).startswith("chain node: ")
        # Addresses need no node.
        query = f"ownerAddress={owner_t}&chainId={CHAIN_ID}&contractType=wallet"
        assert env.api.get("/getAddress", query).ok()["depositAddress"] == b58(
            env.chain.wallet_for(owner_t)
        )
