"""A refund on Tron against the local TronGrid stand-in, through tronpy: POST /refund builds
the owner's unsigned ``wallet.withdraw`` to the payer -- read back here from the signed bytes
with the test's own protobuf reader and compared with eth_abi's encoding -- and the watcher
confirms the refund when the wallet's ``Withdrawn`` event of that payout is mined.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import test_tron_wallet_e2e as wallet_e2e
from eth_abi import encode
from fake_trongrid import b58, h20
from tron_env import CHAIN_ID, PAYER, TRX, USD, USDT, Env, address_of, drain, open_env, watcher

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "conformance"))

from conf_schema import problems  # noqa: E402

USDT_ID = f"{CHAIN_ID}:{USDT}"


@pytest.fixture
def env() -> Iterator[Env]:
    with open_env("core") as opened:
        yield opened


def schema_of(env: Env, path: str, status: str) -> Any:
    paths = env.api.get("/openapi.json").ok()["paths"]
    return paths[path]["post"]["responses"][status]["content"]["application/json"]["schema"]


def test_a_refund_is_the_wallets_withdraw_to_the_payer_and_the_watcher_confirms_it(
    env: Env,
) -> None:
    owner, owner_t, session = env.merchant()
    wallet_e2e.deploy(env, owner, owner_t)
    wallet = b58(env.chain.wallet_for(owner_t))
    env.chain.fee = (h20(b58("99" * 20)), 2 * TRX)
    body = {"value": "10", "chainId": CHAIN_ID, "description": "t", "acceptedTokens": [USDT_ID]}
    invoice = env.api.post("/invoice", body, session=session).ok(201)
    guid, payer = invoice["guid"], address_of(PAYER)
    env.pay_usdt(invoice["address"], 10 * USD)
    env.chain.mine(3)
    w = watcher(env.gateway)
    drain(w)
    assert env.api.get(f"/invoice/{guid}").ok()["status"] == "paid"

    answer = env.api.post("/refund", {"guid": guid, "vsAmount": "4"}, session=session)
    built = answer.ok(201)
    assert problems(built, schema_of(env, "/refund", "201")) == []
    record = built["refund"]
    assert (record["status"], record["amount"], record["to"], record["token"]) == (
        "pending",
        "4",
        payer,
        USDT,
    )
    unsigned = built["transaction"]
    assert wallet_e2e.decoded(unsigned["transaction"]) == {
        "type": 31,  # TriggerSmartContract
        "owner": owner_t,
        "contract": wallet,
        "call_value": 2 * TRX,  # the operator's fee, in SUN
        "data": wallet_e2e.selector("withdraw(address,address,uint256,uint256[])")
        + encode(
            ["address", "address", "uint256", "uint256[]"],
            [wallet_e2e.evm(USDT), wallet_e2e.evm(payer), 4 * USD, [0]],
        ).hex(),
        "fee_limit": 150_000_000,
    }
    assert (unsigned["indexes"], unsigned["amount"], unsigned["recipient"]) == ([0], "4", payer)
    assert unsigned["txID"] == unsigned["transaction"]["txID"]

    # Another refund of more than is left is refused while this one is pending.
    over = env.api.post("/refund", {"guid": guid, "amount": "6.5"}, session=session)
    assert over.error(400) == (
        f"invalid request: amount: more than the 6 left to refund in {USDT_ID}"
    )

    # The wallet pays it (the stand-in mines the call's Withdrawn event), the watcher sees it.
    tx_id = env.chain.emit_withdrawn(owner_t, wallet, USDT, payer, 4 * USD)
    env.chain.mine(3)
    assert sum(r.withdrawals for r in drain(w)) == 1
    seen = env.api.get(f"/invoice/{guid}").ok()
    [confirmed] = seen["refunds"]
    assert (confirmed["status"], confirmed["txHash"], seen["refundedAmount"]) == (
        "confirmed",
        tx_id,
        "4",
    )
    listed = env.api.get("/transactions", f"owner={owner_t}", session=session).ok()["items"]
    [paid_back] = [t for t in listed if t["type"] == "refund"]
    assert (paid_back["guid"], paid_back["from"], paid_back["to"], paid_back["amount"]) == (
        guid,
        wallet,
        payer,
        "4",
    )
