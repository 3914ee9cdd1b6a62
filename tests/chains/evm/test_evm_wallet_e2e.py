"""The owner's side, end to end over HTTP on anvil, behind Flask and behind Litestar.

A fresh merchant key gets coin from /getFaucet, deploys its wallet from /initWallet's
unsigned transaction (signed here with eth-account, relayed by /deployWallet), is paid, reads
/getBalances, withdraws with /initWithdraw's unsigned transaction, and sees the withdrawal
in /history once the watcher has seen it on chain.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from eth_account import Account
from evm_chain import Deployment
from evm_gateway import ADAPTERS, CHAIN_ID, ETH_ID, USD, Env, drain, open_env, watcher
from web3 import Web3

from paycore import NATIVE

pytestmark = pytest.mark.node  # anvil comes from npm

ETH = 10**18


@pytest.fixture(params=ADAPTERS)
def env(request: pytest.FixtureRequest, evm: Deployment) -> Iterator[Env]:
    with open_env(request.param, evm) as opened:
        yield opened


def owner_query(owner: str, **extra: Any) -> str:
    fields = {"ownerAddress": owner, "chainId": CHAIN_ID, **extra}
    return "&".join(f"{k}={v}" for k, v in fields.items())


def fund(env: Env, to: str) -> None:
    body = {"chainId": CHAIN_ID, "to": to}
    sent = env.checked("POST", "/getFaucet", env.api.post("/getFaucet", body))
    assert sent["to"] == to and sent["amount"] == "1"
    env.w3.eth.wait_for_transaction_receipt(sent["txHash"], timeout=30)


def deploy(env: Env, owner: Any) -> str:
    unsigned = env.checked(
        "GET", "/initWallet", env.api.get("/initWallet", owner_query(owner.address))
    )
    assert unsigned["to"] == env.evm.factory.address
    assert isinstance(unsigned["nonce"], int) and unsigned["gas"].startswith("0x")
    signed = owner.sign_transaction(
        {k: unsigned[k] for k in ("to", "data", "gas", "gasPrice", "nonce", "value", "chainId")}
    )
    body = {"rawTx": "0x" + signed.raw_transaction.hex(), "chainId": CHAIN_ID}
    relayed = env.checked("POST", "/deployWallet", env.api.post("/deployWallet", body))
    receipt = env.w3.eth.wait_for_transaction_receipt(relayed["txHash"], timeout=30)
    assert receipt["status"] == 1
    assert relayed["walletAddress"] == unsigned["walletAddress"]
    wallet: str = relayed["walletAddress"]
    assert env.w3.eth.get_code(Web3.to_checksum_address(wallet)) != b""
    return wallet


def balances(env: Env, owner: str, key: Any) -> dict[str, dict[str, Any]]:
    answer = env.api.post("/getBalances", {"ownerAddress": owner, "chainId": CHAIN_ID}, session=key)
    return {entry["token"]: entry for entry in env.checked("POST", "/getBalances", answer)}


def history(env: Env, owner: str, key: Any) -> list[dict[str, Any]]:
    answer = env.api.get("/history", owner_query(owner), session=key)
    items: list[dict[str, Any]] = env.checked("GET", "/history", answer)
    return items


def test_deploy_get_paid_and_withdraw(env: Env) -> None:
    evm, token = env.evm, env.evm.token
    owner, key = env.merchant()
    fund(env, owner.address)
    wallet = deploy(env, owner)
    env.api.get("/initWallet", owner_query(owner.address)).error(
        400, f"invalid request: ownerAddress: wallet already deployed at {wallet}"
    )
    query = owner_query(owner.address, contractType="wallet")
    got = env.checked("GET", "/getAddress", env.api.get("/getAddress", query))
    assert got["depositAddress"] == wallet

    usdc = f"{CHAIN_ID}:{token.address}"
    first, second = (
        env.api.post(
            "/invoice",
            {"value": v, "chainId": CHAIN_ID, "description": "x", "acceptedTokens": [usdc]},
            session=key,
        ).ok(201)
        for v in ("10", "5")
    )
    # An invoice paid straight into the wallet (contractType wallet), in native coin.
    direct = env.api.post(
        "/invoice",
        {
            "value": "20",
            "chainId": CHAIN_ID,
            "description": "direct",
            "acceptedTokens": [ETH_ID],
            "address": wallet,
        },
        session=key,
    ).ok(201)
    env.pay_token(token, first["address"], 10 * USD)
    env.pay_token(token, second["address"], 5 * USD)
    env.pay_native(wallet, ETH // 100)
    w = watcher(env.gateway)
    drain(w)
    for invoice in (first, second, direct):
        assert env.api.get(f"/invoice/{invoice['guid']}").ok()["status"] == "paid"

    held = balances(env, owner.address, key)
    assert (held[token.address]["balance"], held[token.address]["depositBalance"]) == ("15", "15")
    assert held[token.address]["vsValue"] == 15 and held[token.address]["symbol"] == "TUSDC"
    assert (held[NATIVE]["walletBalance"], held[NATIVE]["vsValue"]) == ("0.01", 20)
    assert held[evm.token_no_return.address]["vsValue"] is None  # listed, never priced

    to = Account.create().address
    fee_before = evm.chain.balance(evm.fee_recipient.address)
    owner_before = evm.chain.balance(owner.address)
    ask = {
        "to": to,
        "ownerAddress": owner.address,
        "tokenAddress": token.address,
        "amount": "12",
        "chainId": CHAIN_ID,
    }
    unsigned = env.checked("POST", "/initWithdraw", env.api.post("/initWithdraw", ask, session=key))
    assert unsigned["to"] == wallet  # the owner calls its wallet ...
    assert int(unsigned["value"], 16) == evm.fee  # ... and pays the fee as msg.value
    assert (unsigned["indexes"], unsigned["amount"], unsigned["fee"]) == ([0, 1], "12", "0.001")
    receipt = env.sign_and_send(owner, unsigned)
    assert receipt["status"] == 1
    assert token.functions.balanceOf(to).call() == 12 * USD  # all of it: the fee is in coin
    assert evm.chain.balance(evm.fee_recipient.address) - fee_before == evm.fee
    assert owner_before - evm.chain.balance(owner.address) == evm.fee + evm.chain.gas_cost(receipt)

    drain(w)
    after = balances(env, owner.address, key)[token.address]
    assert (after["balance"], after["walletBalance"], after["depositBalance"]) == ("3", "3", "0")
    entries = history(env, owner.address, key)
    withdrawals = [e for e in entries if e["type"] == "withdraw"]
    assert withdrawals == [
        {
            "type": "withdraw",
            "txHash": "0x" + bytes(receipt["transactionHash"]).hex(),
            "logIndex": withdrawals[0]["logIndex"],
            "chainId": str(CHAIN_ID),
            "token": token.address,
            "from": wallet,
            "to": to,
            "amount": "12",
            "vsValue": 12,
            "timestamp": withdrawals[0]["timestamp"],
        }
    ]
    # The sweeps into the wallet (forwarder -> wallet) are not deposits of the direct invoice.
    assert sorted(e["amount"] for e in entries if e["type"] == "deposit") == ["0.01", "10", "5"]

    # The rest by base units, from the wallet's own balance only; then the native coin.
    ask = {**ask, "value": str(3 * USD), "contractType": "wallet"}
    del ask["amount"]
    unsigned = env.checked(
        "GET", "/initWithdraw", env.api.get("/initWithdraw", _q(ask), session=key)
    )
    assert unsigned["indexes"] == []
    assert env.sign_and_send(owner, unsigned)["status"] == 1
    assert token.functions.balanceOf(to).call() == 15 * USD
    native = {**ask, "tokenAddress": NATIVE, "value": str(ETH // 100)}
    assert (
        env.sign_and_send(owner, env.api.post("/initWithdraw", native, session=key).ok())["status"]
        == 1
    )
    assert evm.chain.balance(to) == ETH // 100
    drain(w)
    entries = history(env, owner.address, key)
    assert [e["type"] for e in entries].count("withdraw") == 3
    # The fee sent to the wallet with each withdrawal is not a payment of the direct invoice.
    assert [e["type"] for e in entries].count("deposit") == 3
    assert env.api.get(f"/invoice/{direct['guid']}").ok()["paidAmount"] == "20"


def _q(fields: dict[str, Any]) -> str:
    return "&".join(f"{k}={v}" for k, v in fields.items())


def test_withdrawal_requests_that_cannot_work_are_refused(env: Env) -> None:
    owner, key = env.merchant()
    base = {
        "to": Account.create().address,
        "ownerAddress": owner.address,
        "tokenAddress": env.evm.token.address,
        "amount": "1",
        "chainId": CHAIN_ID,
    }
    refused = env.api.post("/initWithdraw", base, session=key)
    assert refused.error(400).startswith("invalid request: ownerAddress: no wallet deployed at")
    fund(env, owner.address)
    deploy(env, owner)
    env.api.post("/initWithdraw", base, session=key).error(
        400, "invalid request: amount: more than the 0 TUSDC available to withdraw"
    )
    for change, field in [
        ({"amount": "1", "value": "5"}, "amount"),
        ({"amount": "0.0000001"}, "amount"),  # finer than 6 decimals
        ({"contractType": "forwarder"}, "contractType"),
        ({"tokenAddress": "1:" + env.evm.token.address}, "tokenAddress"),
        ({"to": "0x1234"}, "to"),
    ]:
        answer = env.api.post("/initWithdraw", {**base, **change}, session=key)
        assert answer.error(400).startswith(f"invalid request: {field}: "), answer.text
    other, _ = env.merchant()
    env.api.post("/initWithdraw", {**base, "ownerAddress": other.address}, session=key).error(
        403, prefix="forbidden: "
    )
    env.api.post("/initWithdraw", base).error(401, prefix="session signature: ")


def test_deploy_wallet_relays_only_a_factory_deployment(env: Env) -> None:
    owner: Any = Account.create()
    fund(env, owner.address)
    unsigned = env.api.get("/initWallet", owner_query(owner.address)).ok()
    fields = {
        k: unsigned[k] for k in ("to", "data", "gas", "gasPrice", "nonce", "value", "chainId")
    }

    def relay(tx: dict[str, Any]) -> Any:
        raw = "0x" + owner.sign_transaction(tx).raw_transaction.hex()
        return env.api.post("/deployWallet", {"rawTx": raw, "chainId": CHAIN_ID})

    elsewhere = {**fields, "to": env.evm.token.address}
    assert relay(elsewhere).error(400).startswith("invalid request: rawTx: must be sent to")
    other_call = {**fields, "data": "0x" + "00" * 36}
    relay(other_call).error(400, "invalid request: rawTx: must call deployWallet(address)")
    relay({**fields, "chainId": 1}).error(
        400, "invalid request: rawTx: signed for chain 1, not 31337"
    )
    relay({**fields, "value": 1}).error(
        400, "invalid request: rawTx: deployWallet takes no native coin"
    )
    env.api.post("/deployWallet", {"rawTx": "0xzz", "chainId": CHAIN_ID}).error(400)
    env.api.post("/deployWallet", {"rawTx": "0x05c0", "chainId": CHAIN_ID}).error(
        400, "invalid request: rawTx: transaction type 5 is not relayed"
    )
    assert env.evm.chain.w3.eth.get_transaction_count(owner.address) == 0  # nothing was sent
    # EIP-1559 form of the genuine deployment goes through.
    typed = {k: v for k, v in fields.items() if k != "gasPrice"}
    typed |= {"maxFeePerGas": int(fields["gasPrice"], 16), "maxPriorityFeePerGas": 1, "type": 2}
    relayed = relay(typed).ok()
    assert env.w3.eth.wait_for_transaction_receipt(relayed["txHash"])["status"] == 1


def test_the_faucet_is_for_dev_chains_only(env: Env) -> None:
    to = Account.create().address
    env.api.post("/getFaucet", {"chainId": 1, "to": to}).error(
        400, "invalid request: chainId: the faucet exists on chain 1337 and 31337 only"
    )
    env.api.get("/getFaucet", "chainId=1337&to=" + to).error(400, prefix="invalid request: chainId")
    env.api.get("/getFaucet", f"chainId={CHAIN_ID}&to=0xnope").error(
        400, prefix="invalid request: to"
    )
    sent = env.checked(
        "GET", "/getFaucet", env.api.get("/getFaucet", f"chainId={CHAIN_ID}&to={to}")
    )
    env.w3.eth.wait_for_transaction_receipt(sent["txHash"])
    assert env.evm.chain.balance(to) == ETH


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_withdraw_is_gone_and_says_where_to_go(env: Env, method: str) -> None:
    text = env.api.call(method, "/withdraw").error(410)
    assert "/initWithdraw" in text


def test_get_address_needs_an_index_for_a_deposit_address(env: Env) -> None:
    owner = Account.create().address
    env.api.get("/getAddress", owner_query(owner)).error(400, "invalid request: index: is required")
    env.api.get("/getAddress", owner_query(owner, index=-1)).error(
        400, prefix="invalid request: index"
    )
    huge = owner_query(owner, index=2**256 - 1)
    assert env.api.get("/getAddress", huge).ok()["depositAddress"].startswith("0x")
    env.api.get("/getAddress", owner_query(owner, index=2**256)).error(400)
    env.api.post("/getAddress", {"ownerAddress": owner, "chainId": 1, "index": 0}).error(
        400, "invalid request: chainId: unsupported chain 1"
    )


def test_a_disabled_index_is_left_out_of_withdrawals(env: Env) -> None:
    evm, token = env.evm, env.evm.token
    owner, key = env.merchant()
    fund(env, owner.address)
    wallet = evm.chain.contract("PaycoreWallet", deploy(env, owner))
    usdc = f"{CHAIN_ID}:{token.address}"
    for n in (1, 2, 3):
        body = {"value": "9", "chainId": CHAIN_ID, "description": "x", "acceptedTokens": [usdc]}
        invoice = env.api.post("/invoice", body, session=key).ok(201)
        env.pay_token(token, invoice["address"], n * USD)
    evm.chain.transact(owner, wallet.functions.disableWalletIndex(1))

    held = balances(env, owner.address, key)[token.address]
    assert held["balance"] == "6"  # the funds at a disabled index are still the owner's
    ask = {
        "to": Account.create().address,
        "ownerAddress": owner.address,
        "tokenAddress": token.address,
        "amount": "4",
        "chainId": CHAIN_ID,
    }
    unsigned = env.api.post("/initWithdraw", ask, session=key).ok()
    assert unsigned["indexes"] == [0, 2]
    env.api.post("/initWithdraw", {**ask, "amount": "5"}, session=key).error(
        400, "invalid request: amount: more than the 4 TUSDC available to withdraw"
    )
    assert env.sign_and_send(owner, unsigned)["status"] == 1
    assert token.functions.balanceOf(ask["to"]).call() == 4 * USD
