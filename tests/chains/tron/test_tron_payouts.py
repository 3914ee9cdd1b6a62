"""Batch payouts on Tron over HTTP, against the fake TronGrid (``fake_trongrid``): POST
/payouts answers the node-built ``triggersmartcontract`` transactions (an ``approve`` for a
short TRC20 allowance, then the ``pay`` call on the chain's ``batch_pay``), whose calldata is
what TronWeb's own ABI encoder makes of the rows; TronWeb signs them (``tronweb_oracle.mjs``,
``transaction``), the node takes them by ``broadcasthex``, and POST /payouts/confirm reads
each one back (``gettransactionbyid``, ``gettransactioninfobyid``) and settles its rows:
confirmed when the call succeeded, failed when it reverted.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import requests
from fake_trongrid import b58, h20
from node_oracles import run_oracle
from tron_env import CHAIN_ID, TRX, USD, USDT, Env, address_of, key, open_env

from paycore.contracts import load_artifact
from paycore.payouts import plan

pytestmark = pytest.mark.node

BATCH = b58("b5" * 20)
PAY = "pay(bytes32,address[],address[],uint256[])"
PAY_ABI = next(e for e in load_artifact("PaycoreBatchPay")["abi"] if e.get("name") == "pay")
ZERO_HEX = "41" + "00" * 20


@pytest.fixture
def env() -> Iterator[Env]:
    with open_env(batch_pay=BATCH) as opened:
        opened.chain.batch = BATCH
        yield opened


def _funded(env: Env, label: str, trx: int, usdt: int) -> tuple[Any, str, Any]:
    owner, address, session = env.merchant(label)
    env.chain.genesis_balances[("trx", h20(address))] = trx
    env.chain.genesis_balances[(h20(USDT), h20(address))] = usdt
    return owner, address, session


def _broadcast(env: Env, owner: Any, built: dict[str, Any]) -> str:
    """Sign ``built`` with TronWeb, as a dapp does, and hand it to the node."""
    [signed] = run_oracle(
        "tronweb_oracle.mjs",
        "tronweb",
        [{"op": "transaction", "transaction": built["transaction"], "privateKey": owner.hex()}],
    )
    assert signed["check"] is True  # TronWeb agrees the JSON and the bytes say the same
    answer = requests.post(
        f"{env.url}/wallet/broadcasthex", json={"transaction": signed["signedHex"]}, timeout=10
    ).json()
    assert answer["result"] is True, answer
    return str(built["txID"])


def _rows(a: str, b: str) -> list[dict[str, str]]:
    return [
        {"address": a, "token": USDT, "amount": "12.5", "reference": "r-1"},
        {"address": b, "token": "TRX", "amount": "3", "reference": "r-2"},
        {"address": b, "token": USDT, "amount": "0.000001", "reference": "r-3"},
    ]


def test_a_tron_batch_is_built_signed_and_confirmed(env: Env) -> None:
    owner, address, session = _funded(env, "payer-1", 100 * TRX, 50 * USD)
    a, b = address_of(key("recipient-a")), address_of(key("recipient-b"))
    body = {"chainId": CHAIN_ID, "rows": _rows(a, b)}
    headers = {"Idempotency-Key": "tron-1"}
    built = env.api.post("/payouts", body, session=session, headers=headers).ok(201)
    retry = env.api.post("/payouts", body, session=session, headers=headers).ok(201)
    assert retry == built  # the same batch and transactions, not a second build
    batch_id = built["batch"]["id"]

    # One approve of exactly the USDT total, to the batch contract, then one pay call.
    [approval] = built["approvals"]
    assert (approval["from"], approval["to"]) == (address, USDT)
    [call] = built["transactions"]
    assert (call["from"], call["to"], call["callValue"]) == (address, BATCH, 3 * TRX)
    value = call["transaction"]["raw_data"]["contract"][0]["parameter"]["value"]
    assert value["contract_address"] == BATCH and value["owner_address"] == address

    # The call data is what TronWeb encodes for the same rows, base58 addresses and all.
    ref = plan.call_ref(bytes.fromhex(batch_id), 0)
    [encoded, approve] = run_oracle(
        "tronweb_oracle.mjs",
        "tronweb",
        [
            {
                "op": "calldataV2",
                "signature": PAY,
                "abi": PAY_ABI,
                "values": [
                    "0x" + ref.hex(),
                    [USDT, ZERO_HEX, USDT],
                    [a, b, b],
                    ["12500000", "3000000", "1"],
                ],
            },
            {
                "op": "calldata",
                "signature": "approve(address,uint256)",
                "types": ["address", "uint256"],
                "values": [BATCH, "12500001"],
            },
        ],
    )
    assert value["data"] == encoded["data"] == call["data"][2:]
    assert approval["data"][2:] == approve["data"]
    assert [(p["line"], p["to"], p["status"]) for p in built["payouts"]] == [
        (1, a, "pending"),
        (2, b, "pending"),
        (3, b, "pending"),
    ]

    approve_id = _broadcast(env, owner, approval)
    pay_id = _broadcast(env, owner, call)
    confirm = {"batchId": batch_id, "txHashes": [pay_id]}
    waiting = env.api.post("/payouts/confirm", confirm, session=session).ok()
    assert waiting["batch"]["counts"]["pending"] == 3  # not in a block yet

    env.chain.mine()
    # The approve is the owner's, but not one of the batch's calls.
    refused = env.api.post(
        "/payouts/confirm", {"batchId": batch_id, "txHashes": [approve_id]}, session=session
    )
    assert f"is not a transaction of batch {batch_id}" in refused.error(400)
    done = env.api.post("/payouts/confirm", confirm, session=session).ok()
    assert done["batch"]["counts"] == {"pending": 0, "confirmed": 3, "failed": 0}
    assert {p["txHash"] for p in done["payouts"]} == {"0x" + pay_id}
    assert env.chain.balance(USDT, a) == 12_500_000
    assert env.chain.balance(USDT, b) == 1
    assert env.chain.balance("trx", b) == 3 * TRX
    assert env.chain.balance(USDT, address) == 50 * USD - 12_500_001

    # Confirming again changes nothing; the outbox holds one event per row.
    again = env.api.post("/payouts/confirm", confirm, session=session).ok()
    assert again["payouts"] == done["payouts"]
    with env.gateway.storage.transaction() as tx:
        kinds = [e.type for e in tx.outbox_since(0, 1000).events if e.type.startswith("payout.")]
    assert kinds == ["payout.confirmed"] * 3


def test_a_reverted_tron_batch_fails_its_rows(env: Env) -> None:
    owner, _address, session = _funded(env, "payer-2", 100 * TRX, 50 * USD)
    a, b = address_of(key("recipient-c")), address_of(key("recipient-d"))
    body = {"chainId": CHAIN_ID, "rows": _rows(a, b)}
    built = env.api.post("/payouts", body, session=session).ok(201)
    # Sent without its approve, the pay call reverts in the TVM: every row fails.
    pay_id = _broadcast(env, owner, built["transactions"][0])
    env.chain.mine()
    confirm = {"batchId": built["batch"]["id"], "txHashes": [pay_id]}
    done = env.api.post("/payouts/confirm", confirm, session=session).ok()
    assert done["batch"]["counts"] == {"pending": 0, "confirmed": 0, "failed": 3}
    assert env.chain.balance(USDT, a) == 0
    with env.gateway.storage.transaction() as tx:
        kinds = [e.type for e in tx.outbox_since(0, 1000).events if e.type.startswith("payout.")]
    assert kinds == ["payout.failed"] * 3


def test_a_tron_batch_the_owner_cannot_cover_is_refused(env: Env) -> None:
    _owner, address, session = _funded(env, "payer-3", 100 * TRX, 10 * USD)
    a, b = address_of(key("recipient-e")), address_of(key("recipient-f"))
    answer = env.api.post("/payouts", {"chainId": CHAIN_ID, "rows": _rows(a, b)}, session=session)
    assert answer.error(400) == (
        f"invalid request: rows: the rows pay 12.500001 of {USDT} and {address} holds 10"
    )


def test_with_the_allowance_in_place_no_approve_is_asked(env: Env) -> None:
    _owner, address, session = _funded(env, "payer-4", 100 * TRX, 50 * USD)
    env.chain.allowances[(h20(USDT), h20(address))] = 20 * USD
    a, b = address_of(key("recipient-g")), address_of(key("recipient-h"))
    built = env.api.post("/payouts", {"chainId": CHAIN_ID, "rows": _rows(a, b)}, session=session)
    answer = built.ok(201)
    assert answer["approvals"] == []
    assert answer["transactions"][0]["energyEstimate"] == 40_000  # the node's dry run
