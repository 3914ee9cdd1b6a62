"""The worker settles a payout batch by itself on anvil: the merchant hands
``POST /payouts/confirm``'s hashes in before they are mined (automine off), the confirm
answers ``pending`` and keeps them, and once the block is mined the worker's payout pass
(``paycore.runtime.worker.confirm_payouts``) settles the rows -- once, with the confirm's
own events -- and drops a kept hash that proves not to be the batch's."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from eth_account import Account
from evm_chain import Deployment
from evm_gateway import CHAIN_ID, make_gateway

from paycore.payouts.records import PayoutStatus
from paycore.payouts.rows import json_rows
from paycore.runtime.worker import confirm_payouts

pytestmark = pytest.mark.node


def _payout_events(gateway: Any) -> list[str]:
    with gateway.storage.transaction() as tx:
        return [e.type for e in tx.outbox_since(0, 1000).events if e.type.startswith("payout.")]


def _watched(gateway: Any) -> list[tuple[str, str]]:
    with gateway.storage.transaction() as tx:
        found: list[tuple[str, str]] = tx.watched_payout_hashes(100)
        return found


def test_the_worker_settles_a_batch_confirmed_before_it_was_mined(evm: Deployment) -> None:
    batch_pay = evm.chain.deploy(evm.admin, "PaycoreBatchPay").address
    gateway = make_gateway(evm, batch_pay=batch_pay)
    w3 = evm.chain.w3
    owner = evm.owner.address
    people = [Account.create().address for _ in range(2)]
    rows = gateway.payouts.check(
        CHAIN_ID, json_rows([{"address": p, "token": "ETH", "amount": "0.1"} for p in people])
    )
    created = gateway.payouts.create(owner, CHAIN_ID, rows)
    assert created.built.approvals == ()
    batch_id = created.batch.id
    call = created.built.calls[0].transaction
    fields = ("to", "data", "gas", "gasPrice", "nonce", "value", "chainId")
    halt = threading.Event()
    worker = threading.Thread(target=confirm_payouts, args=(gateway, halt), daemon=True)
    w3.provider.make_request("evm_setAutomine", [False])  # type: ignore[arg-type]
    try:
        signed = evm.owner.sign_transaction({k: call[k] for k in fields})
        pay_hash = "0x" + bytes(w3.eth.send_raw_transaction(signed.raw_transaction)).hex()
        # A plain transfer of the owner's, also handed in while pending: not the batch's.
        other = evm.owner.sign_transaction(
            {"to": people[0], "value": 1, "gas": 21_000, "gasPrice": call["gasPrice"],
             "nonce": call["nonce"] + 1, "chainId": CHAIN_ID}
        )  # fmt: skip
        other_hash = "0x" + bytes(w3.eth.send_raw_transaction(other.raw_transaction)).hex()

        _b, payouts, answers = gateway.payouts.confirm(owner, batch_id, [pay_hash, other_hash])
        assert [a["state"] for a in answers] == ["pending", "pending"]
        assert {p.status for p in payouts} == {PayoutStatus.PENDING}
        gateway.payouts.confirm(owner, batch_id, [pay_hash])  # asked again: kept once
        assert sorted(_watched(gateway)) == sorted([(batch_id, pay_hash), (batch_id, other_hash)])

        assert gateway.payouts.settle_watched() == 0  # nothing mined: nothing done
        worker.start()
        time.sleep(1.5)  # a pass or two over the unmined hashes
        assert _payout_events(gateway) == []
        _b, payouts = gateway.payouts.get(owner, batch_id)
        assert {p.status for p in payouts} == {PayoutStatus.PENDING}

        w3.provider.make_request("evm_mine", [])  # type: ignore[arg-type]
    finally:
        w3.provider.make_request("evm_setAutomine", [True])  # type: ignore[arg-type]
    try:
        deadline = time.monotonic() + 20
        while _watched(gateway) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _watched(gateway) == []  # the call settled, the transfer dropped
    finally:
        halt.set()
        worker.join(10)
    _b, payouts = gateway.payouts.get(owner, batch_id)
    assert [(p.status, p.tx_hash) for p in payouts] == [(PayoutStatus.CONFIRMED, pay_hash)] * 2
    assert _payout_events(gateway) == ["payout.confirmed"] * 2
    assert [w3.eth.get_balance(p) for p in people] == [10**17 + 1, 10**17]

    # The merchant's own confirm afterwards finds the rows settled: no second event.
    _b, _p, answers = gateway.payouts.confirm(owner, batch_id, [pay_hash])
    assert answers[0]["state"] == "mined" and answers[0]["settled"] == 0
    assert gateway.payouts.settle_watched() == 0
    assert _payout_events(gateway) == ["payout.confirmed"] * 2
    gateway.close()
