"""Refunds end to end over HTTP on anvil, behind Flask and behind Litestar.

A merchant with a deployed wallet is paid; POST /refund builds the unsigned withdrawal to
the payer (the /initWithdraw transaction), the test signs it with the merchant's key and
sends it to anvil, and the watcher sees the wallet's ``Withdrawn`` event and confirms the
refund: on the invoice (``refunds``, ``refundedAmount``), in /transactions, and as events
in the outbox, the webhook queue and to notifiers, one per step. Every answer is checked
against the served OpenAPI document.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from eth_account import Account
from evm_chain import Deployment
from evm_gateway import (
    ADAPTERS,
    CHAIN_ID,
    ETH_ID,
    USD,
    Env,
    drain,
    make_gateway,
    open_env,
    pay_token,
    watcher,
)

import paycore.gateway
from paycore import Gateway
from paycore.domain.records import Json, OutboxEvent, RefundStatus
from paycore.domain.refunds import NewRefund
from paycore.notify import BaseNotifier

pytestmark = pytest.mark.node  # anvil comes from npm

ETH = 10**18
HOOK = "https://93.184.216.34/hooks/paycore"  # a public literal: no lookup, never dialled


class Heard(BaseNotifier):
    """What the WebSocket hub and other notifiers are told: each committed invoice change."""

    name = "heard"

    def __init__(self) -> None:
        self.changes: list[Json] = []

    def invoice_changed(self, owner: str, payload: Json) -> None:
        self.changes.append(payload)


@pytest.fixture(params=ADAPTERS)
def env(request: pytest.FixtureRequest, evm: Deployment) -> Iterator[Env]:
    with open_env(request.param, evm) as opened:
        yield opened


def merchant_with_wallet(env: Env) -> tuple[Any, Any, str]:
    """A fresh owner with coin for gas and fees, its wallet deployed, a session key."""
    owner, key = env.merchant()
    sent = env.api.post("/getFaucet", {"chainId": CHAIN_ID, "to": owner.address}).ok()
    env.w3.eth.wait_for_transaction_receipt(sent["txHash"], timeout=30)
    query = f"ownerAddress={owner.address}&chainId={CHAIN_ID}"
    assert env.sign_and_send(owner, env.api.get("/initWallet", query).ok())["status"] == 1
    wallet: str = env.api.get("/getAddress", query + "&contractType=wallet").ok()["depositAddress"]
    return owner, key, wallet


def refund(env: Env, key: Any, **body: Any) -> Any:
    return env.checked("POST", "/refund", env.api.post("/refund", body, session=key), 201)


def statuses(payload: Json) -> list[str]:
    return [r["status"] for r in payload["refunds"]]


def test_refund_half_then_the_rest_and_the_watcher_confirms_each(env: Env) -> None:
    evm, token = env.evm, env.evm.token
    owner, key, wallet = merchant_with_wallet(env)
    heard = Heard()
    env.gateway.add_notifier(heard)
    env.gateway.webhooks.set(owner.address, HOOK)
    refund_types = ["invoice.refund_pending", "invoice.refunded"]
    books = env.gateway.webhooks.endpoints.create(owner.address, HOOK, refund_types)
    usdc = f"{CHAIN_ID}:{token.address}"
    body = {"value": "10", "chainId": CHAIN_ID, "description": "mug", "acceptedTokens": [usdc]}
    invoice = env.api.post("/invoice", body, session=key).ok(201)
    guid = invoice["guid"]
    env.pay_token(token, invoice["address"], 10 * USD)
    w = watcher(env.gateway)
    drain(w)
    paid = env.api.get(f"/invoice/{guid}").ok()
    assert (paid["status"], paid["refunds"], paid["refundedAmount"]) == ("paid", [], "0")
    events_before = len(env.api.post("/poll/events", session=key).ok()["events"])
    assert events_before == 1  # the payment

    # Half, stated in the invoice's currency at the payment's rate; to the payer by default.
    first = refund(env, key, guid=guid, vsAmount="5")
    record = first["refund"]
    assert {k: record[k] for k in ("status", "amount", "vsValue", "rate", "rateSource")} == {
        "status": "pending",
        "amount": "5",
        "vsValue": 5,
        "rate": "1",
        "rateSource": "payment",
    }
    assert (record["to"], record["token"], record["guid"]) == (
        evm.payer.address,
        token.address,
        guid,
    )
    assert (record["txHash"], record["settledAt"]) == (None, None)
    unsigned = first["transaction"]
    assert unsigned["to"] == wallet and unsigned["indexes"] == [0]
    assert (unsigned["amount"], int(unsigned["value"], 16)) == ("5", evm.fee)
    assert statuses(first["invoice"]) == ["pending"] and first["invoice"]["refundedAmount"] == "0"

    # What the merchant's wallet does: sign, send; then the watcher sees the wallet pay.
    before = token.functions.balanceOf(evm.payer.address).call()
    receipt = env.sign_and_send(owner, unsigned)
    assert receipt["status"] == 1
    assert token.functions.balanceOf(evm.payer.address).call() - before == 5 * USD
    assert env.api.get(f"/invoice/{guid}").ok()["refunds"][0]["status"] == "pending"
    assert sum(r.withdrawals for r in drain(w)) == 1
    seen = env.api.get(f"/invoice/{guid}").ok()
    tx_hash = "0x" + bytes(receipt["transactionHash"]).hex()
    [confirmed] = seen["refunds"]
    assert (confirmed["id"], confirmed["status"], confirmed["txHash"]) == (
        record["id"],
        "confirmed",
        tx_hash,
    )
    assert isinstance(confirmed["logIndex"], int) and confirmed["settledAt"] > 0
    assert (seen["refundedAmount"], seen["paidAmount"], seen["status"]) == ("5", "10", "paid")

    # The rest: neither amount nor vsAmount refunds everything left in the token.
    second = refund(env, key, guid=guid)
    assert (second["refund"]["amount"], second["refund"]["vsValue"]) == ("5", 5)
    assert statuses(second["invoice"]) == ["confirmed", "pending"]
    assert env.sign_and_send(owner, second["transaction"])["status"] == 1
    drain(w)
    done = env.api.get(f"/invoice/{guid}").ok()
    assert statuses(done) == ["confirmed", "confirmed"] and done["refundedAmount"] == "10"
    assert token.functions.balanceOf(evm.payer.address).call() - before == 10 * USD

    # A third is refused, with or without an amount, and records nothing.
    for ask in ({"guid": guid}, {"guid": guid, "amount": "0.000001"}):
        refused = env.api.post("/refund", ask, session=key)
        assert refused.error(400) == (
            f"invalid request: amount: nothing is left to refund in {usdc}"
        )
    assert len(env.api.get(f"/invoice/{guid}").ok()["refunds"]) == 2

    # /transactions: the two refunds, named for their invoice, valued at the refund's rate.
    listed = env.checked(
        "GET",
        "/transactions",
        env.api.get("/transactions", f"owner={owner.address}", session=key),
    )["items"]
    refunds = [t for t in listed if t["type"] == "refund"]
    assert len(refunds) == 2 and not [t for t in listed if t["type"] == "withdraw"]
    assert {(t["guid"], t["to"], t["from"], t["amount"], t["vsValue"]) for t in refunds} == {
        (guid, evm.payer.address, wallet, "5", 5)
    }
    assert tx_hash in {t["txHash"] for t in refunds}

    # One event per step: created, confirmed, created, confirmed. None is a status change
    # (the invoice stays paid), so polling hands out none of them; the notifiers hear each,
    # and so does the endpoint that asked for the refund types.
    steps = [["pending"], ["confirmed"], ["confirmed", "pending"], ["confirmed", "confirmed"]]
    assert env.api.post("/poll/events", session=key).ok()["events"] == []
    assert [statuses(p) for p in heard.changes if p["guid"] == guid][-4:] == steps
    deliveries, _total, _off, _lim = env.gateway.webhooks.deliveries(owner.address)
    hooked = [json.loads(d.body) for d in reversed(deliveries) if d.endpoint_id == books.id]
    assert [statuses(b) for b in hooked] == steps
    assert [b["type"] for b in hooked] == refund_types * 2


def test_refunds_in_coin_at_todays_rate_pending_ones_hold_and_cancel(env: Env) -> None:
    evm = env.evm
    owner, key, _wallet = merchant_with_wallet(env)
    body = {"value": "20", "chainId": CHAIN_ID, "description": "d", "acceptedTokens": [ETH_ID]}
    invoice = env.api.post("/invoice", body, session=key).ok(201)
    guid = invoice["guid"]
    env.pay_native(invoice["address"], ETH // 100)  # 0.01 ETH at 2000 = 20 USD
    w = watcher(env.gateway)
    drain(w)

    # Two refunds built before either is sent: the pending one holds its amount.
    to = Account.create().address
    first = refund(env, key, guid=guid, vsAmount="12", rateSource="now", to=to)["refund"]
    assert (first["amount"], first["vsValue"], first["rate"], first["to"]) == (
        "0.006",
        12,
        "2000",
        to,
    )
    over = env.api.post("/refund", {"guid": guid, "amount": "0.005"}, session=key)
    assert over.error(400) == (
        f"invalid request: amount: more than the 0.004 left to refund in {ETH_ID}"
    )
    cancelled = env.checked(
        "POST",
        "/refund/cancel",
        env.api.post("/refund/cancel", {"refundId": first["id"]}, session=key),
    )
    assert cancelled["refund"]["status"] == "cancelled"
    assert statuses(cancelled["invoice"]) == ["cancelled"]
    again = env.api.post("/refund/cancel", {"refundId": first["id"]}, session=key)
    assert again.error(409) == f"Conflict: refund {first['id']} is cancelled, not pending"

    # What the cancelled one held is free again; a sent transaction of a cancelled refund
    # would be a plain withdrawal, so only the new one is confirmed.
    whole = refund(env, key, guid=guid, amount="0.01")
    assert (whole["refund"]["vsValue"], whole["refund"]["to"]) == (20, evm.payer.address)
    before = evm.chain.balance(evm.payer.address)
    assert env.sign_and_send(owner, whole["transaction"])["status"] == 1
    assert evm.chain.balance(evm.payer.address) - before == ETH // 100
    drain(w)
    seen = env.api.get(f"/invoice/{guid}").ok()
    assert statuses(seen) == ["cancelled", "confirmed"] and seen["refundedAmount"] == "20"
    late = env.api.post("/refund/cancel", {"refundId": whole["refund"]["id"]}, session=key)
    assert "is confirmed, not pending" in late.error(409)


def test_refusals(env: Env) -> None:
    owner, key, _wallet = merchant_with_wallet(env)
    other, other_key = env.merchant()
    usdc = f"{CHAIN_ID}:{env.evm.token.address}"
    body = {"value": "10", "chainId": CHAIN_ID, "description": "r", "acceptedTokens": [usdc]}
    open_one = env.api.post("/invoice", body, session=key).ok(201)
    guid = open_one["guid"]

    unpaid = env.api.post("/refund", {"guid": guid}, session=key)
    assert unpaid.error(409).startswith(f"Conflict: invoice {guid} is init: only a paid")
    w = watcher(env.gateway)
    env.pay_token(env.evm.token, open_one["address"], 4 * USD)
    drain(w)
    partial = env.api.post("/refund", {"guid": guid}, session=key)
    assert " is partialPaid: " in partial.error(409)
    env.pay_token(env.evm.token, open_one["address"], 6 * USD)
    drain(w)

    cases = [
        ({"guid": "nope"}, key, 404, "invoice nope not found"),
        ({"guid": guid}, other_key, 404, f"invoice {guid} not found"),
        ({"guid": guid, "owner": other.address}, key, 403, "forbidden: owner does not match"),
        (
            {"guid": guid, "token": ETH_ID},
            key,
            400,
            f"invalid request: token: the invoice has no payment in {ETH_ID}",
        ),
        ({"guid": guid, "amount": "10.5"}, key, 400, "more than the 10 left to refund"),
        ({"guid": guid, "amount": "1", "vsAmount": "1"}, key, 400, "not both"),
        ({"guid": guid, "amount": "0.0000001"}, key, 400, "more than 6 decimal places"),
        ({"guid": guid, "amount": "0"}, key, 400, "amount: must be greater than 0"),
        ({"guid": guid, "rateSource": "yesterday"}, key, 400, "must be payment or now"),
        ({"guid": guid, "to": "0x1234"}, key, 400, "invalid request: to: "),
        ({"guid": guid, "vsAmount": "0.0000001"}, key, 400, "less than one base unit"),
        ({"guid": guid, "extra": 1}, key, 400, "extra: is not a field of this request"),
    ]
    for ask, session, status, text in cases:
        said = env.api.post("/refund", ask, session=session).error(status)
        assert text in said, (ask, said)
    assert env.api.post("/refund", {"guid": guid}).error(401).startswith("session signature")
    assert env.api.get(f"/invoice/{guid}").ok()["refunds"] == []
    assert env.api.post("/refund/cancel", {"refundId": "x"}, session=key).error(404) == (
        "not found: refund x"
    )
    built = refund(env, key, guid=guid, amount="1")["refund"]
    stolen = env.api.post("/refund/cancel", {"refundId": built["id"]}, session=other_key)
    assert stolen.error(404) == f"not found: refund {built['id']}"


def test_a_refund_needs_the_money_in_the_wallet(env: Env) -> None:
    """Withdrawn elsewhere first: the refund is refused before anything is recorded."""
    owner, key, _wallet = merchant_with_wallet(env)
    usdc = f"{CHAIN_ID}:{env.evm.token.address}"
    body = {"value": "3", "chainId": CHAIN_ID, "description": "w", "acceptedTokens": [usdc]}
    invoice = env.api.post("/invoice", body, session=key).ok(201)
    env.pay_token(env.evm.token, invoice["address"], 3 * USD)
    drain(watcher(env.gateway))
    ask = {
        "to": Account.create().address,
        "ownerAddress": owner.address,
        "tokenAddress": env.evm.token.address,
        "amount": "3",
        "chainId": CHAIN_ID,
    }
    assert env.sign_and_send(owner, env.api.post("/initWithdraw", ask, session=key).ok())
    refused = env.api.post("/refund", {"guid": invoice["guid"]}, session=key)
    assert "more than the 0 TUSDC available to withdraw" in refused.error(400)
    assert env.api.get(f"/invoice/{invoice['guid']}").ok()["refunds"] == []
    assert Decimal(env.api.get(f"/invoice/{invoice['guid']}").ok()["paidAmount"]) == 3


def queued(gateway: Gateway) -> list[OutboxEvent]:
    """The events of queue ``q``, every type (a poll hands out status changes only)."""
    with gateway.storage.transaction() as tx:
        return tx.drain_queue("q", 100)


def test_the_refund_and_its_event_commit_together(
    evm: Deployment, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Python API (``Gateway.refund_invoice``): when writing the refund's event fails,
    the refund is not recorded either; when it works, both are."""
    gateway = make_gateway(evm)
    try:
        owner = evm.owner.address
        evm.deploy_wallet()
        usdc = f"{CHAIN_ID}:{evm.token.address}"
        body = {"value": "2", "chainId": CHAIN_ID, "description": "a", "acceptedTokens": [usdc]}
        invoice = gateway.create_invoice(owner, body)
        pay_token(evm, evm.token, invoice.address, 2 * USD)
        drain(watcher(gateway))
        gateway.open_queue("q", owner)

        def broken(*args: Any) -> None:
            raise RuntimeError("the webhook queue is gone")

        monkeypatch.setattr(paycore.gateway, "enqueue_webhook", broken)
        with pytest.raises(RuntimeError):
            gateway.refund_invoice(owner, NewRefund(guid=invoice.guid))
        assert gateway.get_invoice(invoice.guid).refunds == ()
        assert queued(gateway) == []
        monkeypatch.undo()

        built = gateway.refund_invoice(owner, NewRefund(guid=invoice.guid, amount=Decimal(1)))
        assert (built.refund.status, built.refund.amount, built.refund.to) == (
            RefundStatus.PENDING,
            1,
            evm.payer.address,
        )
        assert built.transaction["to"] == evm.wallet_of(owner).address
        assert gateway.get_invoice(invoice.guid).refunds == (built.refund,)
        [event] = queued(gateway)
        assert event.type == "invoice.refund_pending"
        assert event.payload["refunds"] == [built.refund.to_wire()]
    finally:
        gateway.close()
