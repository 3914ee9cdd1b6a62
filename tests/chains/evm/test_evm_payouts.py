"""Batch payouts on anvil: paycore builds PaycoreBatchPay calls, the merchant signs and
sends them, the confirm step settles each row from the receipt -- and the recipients'
balances are read by an independent client (ethers, tests/node/ethers_payouts.mjs).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from eth_account import Account
from evm_chain import Deployment
from evm_gateway import CHAIN_ID, make_gateway
from node_oracles import run_oracle

from paycore import NATIVE, Gateway
from paycore.chains.evm import payouts as evm_payouts
from paycore.errors import InvalidInput
from paycore.payouts.records import PayoutStatus
from paycore.payouts.rows import BadRows, csv_rows, json_rows

pytestmark = pytest.mark.node


def _gateway(evm: Deployment) -> tuple[Gateway, str]:
    batch_pay = evm.chain.deploy(evm.admin, "PaycoreBatchPay").address
    return make_gateway(evm, batch_pay=batch_pay, allow_private=True), batch_pay


def _send(evm: Deployment, unsigned: dict[str, Any]) -> tuple[str, Any]:
    fields = ("to", "data", "gas", "gasPrice", "nonce", "value", "chainId")
    signed = evm.owner.sign_transaction({k: unsigned[k] for k in fields})
    tx_hash = evm.chain.w3.eth.send_raw_transaction(signed.raw_transaction)
    receipt = evm.chain.w3.eth.wait_for_transaction_receipt(tx_hash, timeout=30)
    return "0x" + bytes(tx_hash).hex(), receipt


def _balances(evm: Deployment, items: list[tuple[str | None, str]]) -> list[int]:
    task = {
        "op": "balances",
        "rpc": evm.chain.rpc_url,
        "items": [{"token": t, "address": a} for t, a in items],
    }
    (result,) = run_oracle("ethers_payouts.mjs", "ethers", [task])
    return [int(v) for v in result["balances"]]


def test_a_mixed_batch_pays_every_row_and_confirms_each(evm: Deployment) -> None:
    gateway, batch_pay = _gateway(evm)
    owner = evm.owner.address
    evm.mint(evm.token, owner, 1_000 * 10**6)
    evm.mint(evm.token_no_return, owner, 1_000 * 10**6)
    people = [Account.create().address for _ in range(6)]
    text = "address,token,amount,reference\n" + "\n".join(
        [
            f"{people[0].lower()},ETH,0.25,inv-1",
            f"{people[1]},{NATIVE},1.5,inv-2",
            f"{people[2]},{evm.token.address.lower()},12.345678,inv-3",
            f"{people[3]},{evm.token.address},0.000001,inv-4",
            f"{people[4]},{evm.token_no_return.address},7,inv-5",
            f"{people[5]},{CHAIN_ID}:{evm.token_no_return.address},8.5,inv-6",
        ]
    )
    rows = gateway.payouts.check(CHAIN_ID, csv_rows(text))
    assert [r.line for r in rows] == [2, 3, 4, 5, 6, 7]
    created = gateway.payouts.create(owner, CHAIN_ID, rows)
    wire = created.to_wire()
    assert len(wire["approvals"]) == 2 and len(wire["transactions"]) == 1
    assert [p["status"] for p in wire["payouts"]] == ["pending"] * 6

    # ethers reads the calldata paycore built as the same pay(...) call.
    (decoded,) = run_oracle(
        "ethers_payouts.mjs", "ethers", [{"op": "decode", "data": wire["transactions"][0]["data"]}]
    )
    assert decoded["recipients"] == people
    assert decoded["amounts"] == [
        str(25 * 10**16),
        str(15 * 10**17),
        "12345678",
        "1",
        "7000000",
        "8500000",
    ]

    for approval in wire["approvals"]:
        assert _send(evm, approval)[1]["status"] == 1
    tx_hash, receipt = _send(evm, wire["transactions"][0])
    assert receipt["status"] == 1
    print(f"\nbatch of 6 rows: {receipt['gasUsed']} gas, {receipt['gasUsed'] // 6} per recipient")

    batch_id = created.batch.id
    # An endpoint that asks for payout events (loopback, a closed port: queued, never dialled).
    gateway.webhooks.endpoints.create(owner, "http://127.0.0.1:9/payouts", ["payout.confirmed"])
    _batch, payouts, answers = gateway.payouts.confirm(owner, batch_id, [tx_hash])
    queued, total, _o, _l = gateway.webhooks.deliveries(owner, guid=batch_id)
    assert total == 6
    assert sorted(json.loads(d.body)["line"] for d in queued) == [2, 3, 4, 5, 6, 7]
    assert {json.loads(d.body)["type"] for d in queued} == {"payout.confirmed"}
    assert answers == [
        {"txHash": tx_hash, "state": "mined", "transaction": 0, "success": True, "settled": 6}
    ]
    assert {p.status for p in payouts} == {PayoutStatus.CONFIRMED}
    assert {p.tx_hash for p in payouts} == {tx_hash}

    # A replayed confirm settles nothing more and adds no event.
    with gateway.storage.transaction() as tx:
        before = [e for e in tx.outbox_since(0, 1000).events if e.type.startswith("payout.")]
    assert len(before) == 6 and {e.type for e in before} == {"payout.confirmed"}
    _b, again, answers = gateway.payouts.confirm(owner, batch_id, [tx_hash])
    assert answers[0]["settled"] == 0 and again == payouts
    with gateway.storage.transaction() as tx:
        after = [e for e in tx.outbox_since(0, 1000).events if e.type.startswith("payout.")]
    assert after == before

    tokens = [None, None, evm.token.address, evm.token.address] + [evm.token_no_return.address] * 2
    assert _balances(evm, list(zip(tokens, people, strict=True))) == [
        25 * 10**16,
        15 * 10**17,
        12_345_678,
        1,
        7_000_000,
        8_500_000,
    ]
    assert evm.chain.balance(batch_pay) == 0  # nothing stays in the contract
    gateway.close()


def test_a_reverted_call_fails_its_rows_and_foreign_hashes_are_refused(evm: Deployment) -> None:
    gateway, _batch_pay = _gateway(evm)
    owner = evm.owner.address
    evm.mint(evm.token, owner, 10 * 10**6)
    person = Account.create().address
    rows = gateway.payouts.check(
        CHAIN_ID,
        json_rows([{"address": person, "token": evm.token.address, "amount": "10"}]),
    )
    created = gateway.payouts.create(owner, CHAIN_ID, rows)
    (approval,) = created.built.approvals
    _send(evm, approval)
    # The merchant spends the tokens elsewhere before the batch is mined: the call reverts.
    evm.chain.transact(evm.owner, evm.token.functions.transfer(evm.stranger.address, 10 * 10**6))
    unsigned = dict(created.built.calls[0].transaction)
    unsigned["nonce"] = evm.chain.w3.eth.get_transaction_count(owner)
    tx_hash, receipt = _send(evm, unsigned)
    assert receipt["status"] == 0
    _b, payouts, _a = gateway.payouts.confirm(owner, created.batch.id, [tx_hash])
    assert [p.status for p in payouts] == [PayoutStatus.FAILED]
    with gateway.storage.transaction() as tx:
        kinds = [e.type for e in tx.outbox_since(0, 1000).events if e.type.startswith("payout.")]
    assert kinds == ["payout.failed"]

    # The approval's hash is the owner's, but not a call of this batch.
    approval_hash = _send(
        evm, {**approval, "nonce": evm.chain.w3.eth.get_transaction_count(owner)}
    )[0]
    with pytest.raises(InvalidInput, match="is not a transaction of batch"):
        gateway.payouts.confirm(owner, created.batch.id, [approval_hash])
    gateway.close()


def test_short_funds_and_bad_rows_are_refused_before_anything_is_built(evm: Deployment) -> None:
    gateway, _ = _gateway(evm)
    poor = Account.create().address
    rows = gateway.payouts.check(
        CHAIN_ID, json_rows([{"address": poor, "token": "ETH", "amount": "1"}])
    )
    with pytest.raises(InvalidInput, match="holds 0"):
        gateway.payouts.create(poor, CHAIN_ID, rows)
    with pytest.raises(BadRows) as caught:
        gateway.payouts.check(
            CHAIN_ID,
            json_rows(
                [
                    {"address": poor, "token": "ETH", "amount": "1"},
                    {"address": "0x12", "token": "ETH", "amount": "1"},
                    {"address": poor, "token": evm.token.address, "amount": "0.0000001"},
                ]
            ),
        )
    assert caught.value.text.splitlines()[1:] == [
        "line 2: address: not a 20-byte hex address",
        "line 3: amount: has more than 6 decimal places for this token",
    ]
    with gateway.storage.transaction() as tx:
        assert tx.get_payout_batch("0" * 32) is None
    gateway.close()


def test_rows_split_into_calls_the_block_gas_limit_allows() -> None:
    assert evm_payouts.rows_per_call(30_000_000) == 249
    assert evm_payouts.rows_per_call(200_000) == 1
    assert evm_payouts.rows_per_call(10**12) == evm_payouts.MAX_ROWS_PER_CALL
