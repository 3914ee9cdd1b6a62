"""Batch payouts over HTTP on anvil, behind Flask and behind Litestar: POST /payouts (a CSV
upload, under an Idempotency-Key), the merchant signs and sends what it answers, POST
/payouts/confirm settles each row, GET /payouts/{id} reads them -- each answer checked
against the served OpenAPI document; bad rows come back as one 400, a line per row.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from eth_account import Account
from evm_chain import Deployment
from evm_gateway import ADAPTERS, CHAIN_ID, Env, open_env

pytestmark = pytest.mark.node


@pytest.fixture(params=ADAPTERS)
def env(request: pytest.FixtureRequest, evm: Deployment) -> Iterator[Env]:
    batch_pay = evm.chain.deploy(evm.admin, "PaycoreBatchPay").address
    with open_env(request.param, evm, batch_pay=batch_pay) as opened:
        yield opened


def _send(env: Env, owner: Any, unsigned: dict[str, Any]) -> str:
    receipt = env.sign_and_send(owner, unsigned)
    assert receipt["status"] == 1
    return "0x" + bytes(receipt["transactionHash"]).hex()


def test_a_csv_batch_over_http(env: Env) -> None:
    owner, key = env.merchant()
    sent = env.api.post("/getFaucet", {"chainId": CHAIN_ID, "to": owner.address}).ok()
    env.w3.eth.wait_for_transaction_receipt(sent["txHash"], timeout=30)
    env.evm.mint(env.evm.token, owner.address, 100 * 10**6)
    a, b = Account.create().address, Account.create().address
    csv = f"address,token,amount,reference\n{a},ETH,0.01,r-1\n{b},TUSDC,2.5,r-2\n"
    body = {"chainId": CHAIN_ID, "csv": csv}
    headers = {"Idempotency-Key": "payouts-1"}
    first = env.api.post("/payouts", body, session=key, headers=headers)
    built = env.checked("POST", "/payouts", first, 201)
    retry = env.api.post("/payouts", body, session=key, headers=headers).ok(201)
    assert retry == built  # the same batch, not a second one
    assert [p["line"] for p in built["payouts"]] == [2, 3]
    for approval in built["approvals"]:
        _send(env, owner, approval)
    hashes = [_send(env, owner, tx) for tx in built["transactions"]]

    batch_id = built["batch"]["id"]
    confirm = {"batchId": batch_id, "txHashes": hashes}
    done = env.checked(
        "POST", "/payouts/confirm", env.api.post("/payouts/confirm", confirm, session=key)
    )
    assert done["batch"]["counts"] == {"pending": 0, "confirmed": 2, "failed": 0}
    read = env.checked("GET", "/payouts/{id}", env.api.get(f"/payouts/{batch_id}", session=key))
    assert [(p["to"], p["status"], p["txHash"]) for p in read["payouts"]] == [
        (a, "confirmed", hashes[0]),
        (b, "confirmed", hashes[0]),
    ]
    assert env.w3.eth.get_balance(a) == 10**16
    assert env.evm.token.functions.balanceOf(b).call() == 2_500_000

    # Another merchant sees nothing of it, and cannot confirm it.
    _other, other_key = env.merchant()
    env.api.get(f"/payouts/{batch_id}", session=other_key).error(
        404, f"payout batch {batch_id} not found"
    )
    assert env.api.post("/payouts/confirm", confirm, session=other_key).status == 404
    # Without a session nothing is read, in any mode.
    assert env.api.get(f"/payouts/{batch_id}").status == 401


def test_bad_rows_are_one_400_with_a_line_each(env: Env) -> None:
    owner, key = env.merchant()
    rows = [
        {"address": Account.create().address, "token": "ETH", "amount": "1"},
        {"address": "0x1234", "token": "ETH", "amount": "1"},
        {"address": Account.create().address, "token": "NOPE", "amount": "1"},
        {"address": Account.create().address, "token": "TUSDC", "amount": "0"},
    ]
    answer = env.api.post("/payouts", {"chainId": CHAIN_ID, "rows": rows}, session=key)
    assert answer.status == 400
    assert answer.body.decode().splitlines() == [
        "invalid request: rows: 3 bad row(s)",
        "line 2: address: not a 20-byte hex address",
        f"line 3: token: no token 'NOPE' known on chain {CHAIN_ID}",
        "line 4: amount: must be greater than 0",
    ]
    both = env.api.post("/payouts", {"chainId": CHAIN_ID, "rows": rows, "csv": "x"}, session=key)
    both.error(400, "invalid request: rows: give rows (a JSON array) or csv (text), one of them")
    ragged = env.api.post(
        "/payouts", {"chainId": CHAIN_ID, "csv": "address,token,amount\n0x1,ETH\n"}, session=key
    )
    assert ragged.status == 400
    assert ragged.body.decode().splitlines()[1] == "line 2: csv: 2 cells where the header has 3"
