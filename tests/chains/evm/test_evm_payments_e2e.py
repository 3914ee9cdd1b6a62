"""Invoices paid on a real chain, end to end: POST /invoice through an adapter, payment on
anvil, the watcher, then the invoice, its events and the transaction list over HTTP.

Each test runs once behind Flask and once behind Litestar, on a fresh gateway, and the
chain is rolled back after it (``evm`` fixture). The watcher is stepped by hand so that each
assertion sees a known chain position.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from evm_chain import Deployment
from evm_gateway import ADAPTERS, CHAIN_ID, ETH_ID, USD, Env, drain, open_env, watcher

from paycore import NATIVE
from paycore.chains.evm import create2

pytestmark = pytest.mark.node  # anvil comes from npm

ETH = 10**18


@pytest.fixture(params=ADAPTERS)
def env(request: pytest.FixtureRequest, evm: Deployment) -> Iterator[Env]:
    with open_env(request.param, evm) as opened:
        yield opened


def usdc(env: Env) -> str:
    return f"{CHAIN_ID}:{env.evm.token.address}"


def create(env: Env, key: Any, **fields: Any) -> dict[str, Any]:
    body = {"value": "10", "chainId": CHAIN_ID, "description": "order", **fields}
    body.setdefault("acceptedTokens", [usdc(env)])
    created: dict[str, Any] = env.checked(
        "POST", "/invoice", env.api.post("/invoice", body, session=key), 201
    )
    return created


def read(env: Env, guid: str) -> dict[str, Any]:
    invoice: dict[str, Any] = env.checked("GET", "/invoice/{guid}", env.api.get(f"/invoice/{guid}"))
    return invoice


def poll(env: Env, key: Any) -> list[dict[str, Any]]:
    body = env.checked("POST", "/poll/events", env.api.post("/poll/events", session=key))
    events: list[dict[str, Any]] = body["events"]
    return events


def transactions(env: Env, owner: str, key: Any) -> list[dict[str, Any]]:
    query = f"owner={owner}&chainId={CHAIN_ID}"
    body = env.checked("GET", "/transactions", env.api.get("/transactions", query, session=key))
    items: list[dict[str, Any]] = body["items"]
    return items


def test_a_derived_address_paid_in_two_erc20_parts(env: Env) -> None:
    owner, key = env.merchant()
    invoice = create(env, key)
    # No address in the request: index 0 of the owner's wallet, the same /getAddress gives.
    expected = create2.owner_deposit_address(env.evm.factory.address, owner.address, 0)
    assert invoice["address"] == expected
    query = f"ownerAddress={owner.address}&chainId={CHAIN_ID}&index=0"
    got = env.checked("GET", "/getAddress", env.api.get("/getAddress", query))
    assert got["depositAddress"] == expected
    second = create(env, key)
    assert second["address"] == create2.owner_deposit_address(
        env.evm.factory.address, owner.address, 1
    )
    w = watcher(env.gateway)
    drain(w)
    assert poll(env, key) == []

    first_tx = env.pay_token(env.evm.token, invoice["address"], 4 * USD)
    assert drain(w)[-1].deposits == 1
    partial = read(env, invoice["guid"])
    assert (partial["status"], partial["paidAmount"]) == ("partialPaid", "4")
    [payment] = partial["payments"]
    assert payment == {
        "txHash": first_tx,
        "logIndex": 0,
        "chainId": str(CHAIN_ID),
        "token": env.evm.token.address,
        "from": env.evm.payer.address,
        "amount": "4",
        "vsValue": 4,
        "timestamp": payment["timestamp"],
    }
    assert [(e["guid"], e["status"]) for e in poll(env, key)] == [(invoice["guid"], "partialPaid")]

    env.pay_token(env.evm.token, invoice["address"], 6 * USD + USD // 2)
    drain(w)
    paid = read(env, invoice["guid"])
    assert (paid["status"], paid["paidAmount"]) == ("paid", "10.5")
    assert [p["vsValue"] for p in paid["payments"]] == [4, 6.5]
    events = poll(env, key)
    assert [(e["guid"], e["status"], e["paidAmount"]) for e in events] == [
        (invoice["guid"], "paid", "10.5")
    ]
    assert read(env, second["guid"])["status"] == "init"

    # Scanning again changes nothing: attribution is idempotent and the cursor moved on.
    assert drain(w)[-1].deposits == 0
    assert poll(env, key) == []
    listed = transactions(env, owner.address, key)  # same-second blocks: any order
    assert sorted((t["type"], t["amount"], t["guid"]) for t in listed) == [
        ("deposit", "4", invoice["guid"]),
        ("deposit", "6.5", invoice["guid"]),
    ]


def test_a_native_coin_invoice(env: Env) -> None:
    owner, key = env.merchant()
    invoice = create(env, key, value="30", acceptedTokens=[ETH_ID])
    w = watcher(env.gateway)
    tx_hash = env.pay_native(invoice["address"], 15 * ETH // 1000)  # 0.015 ETH = 30 USD
    drain(w)
    paid = read(env, invoice["guid"])
    assert (paid["status"], paid["paidAmount"]) == ("paid", "30")
    [payment] = paid["payments"]
    assert (payment["txHash"], payment["logIndex"], payment["token"]) == (tx_hash, -1, NATIVE)
    assert (payment["amount"], payment["vsValue"]) == ("0.015", 30)
    assert [e["status"] for e in poll(env, key)] == ["paid"]


def test_a_tip_jar_is_paid_by_any_accepted_deposit(env: Env) -> None:
    owner, key = env.merchant()
    invoice = create(env, key, value="0")
    env.pay_token(env.evm.token, invoice["address"], USD // 100)  # 0.01 TUSDC
    drain(watcher(env.gateway))
    paid = read(env, invoice["guid"])
    assert (paid["status"], paid["paidAmount"]) == ("paid", "0.01")


def test_a_late_payment_is_recorded_on_the_expired_invoice(env: Env) -> None:
    owner, key = env.merchant()
    invoice = create(env, key, deadlineSecs=60)
    w = watcher(env.gateway)
    drain(w)
    env.clock.advance(3600)
    assert read(env, invoice["guid"])["status"] == "expired"
    assert [e["status"] for e in poll(env, key)] == ["expired"]

    env.pay_token(env.evm.token, invoice["address"], 10 * USD)
    drain(w)
    late = read(env, invoice["guid"])
    assert (late["status"], late["paidAmount"]) == ("expired", "10")
    assert poll(env, key) == []  # recorded, but no status change: no second "expired"
    assert [t["guid"] for t in transactions(env, owner.address, key)] == [invoice["guid"]]


def test_a_token_the_invoice_does_not_accept_is_recorded_not_counted(env: Env) -> None:
    owner, key = env.merchant()
    invoice = create(env, key)  # TUSDC only
    tx_hash = env.pay_token(env.evm.token_no_return, invoice["address"], 10 * USD)  # TUSDT
    drain(watcher(env.gateway))
    unchanged = read(env, invoice["guid"])
    assert (unchanged["status"], unchanged["paidAmount"], unchanged["payments"]) == (
        "init",
        "0",
        [],
    )
    assert poll(env, key) == []
    [recorded] = transactions(env, owner.address, key)
    assert (recorded["txHash"], recorded["token"], recorded["amount"]) == (
        tx_hash,
        env.evm.token_no_return.address,
        "10",
    )
    assert recorded["vsValue"] == 0  # TUSDT has no price here


def test_several_invoices_paid_in_one_block_each_get_theirs(env: Env) -> None:
    """Automine off: five transfers land in one block and one range; none is mixed up."""
    owner, key = env.merchant()
    invoices = [create(env, key, value=str(n)) for n in range(1, 6)]
    chain = env.evm.chain
    env.evm.mint(env.evm.token, env.evm.payer.address, 100 * USD)
    w = watcher(env.gateway)
    drain(w)
    chain.w3.provider.make_request("evm_setAutomine", [False])  # type: ignore[arg-type]
    try:
        nonce = chain.w3.eth.get_transaction_count(env.evm.payer.address, "pending")
        for n, invoice in enumerate(invoices, start=1):
            call = env.evm.token.functions.transfer(invoice["address"], n * USD)
            tx = call.build_transaction(
                {  # type: ignore[arg-type]
                    "from": env.evm.payer.address,
                    "nonce": nonce + n - 1,
                    "gas": 100_000,
                    "gasPrice": 2 * 10**9,
                    "chainId": CHAIN_ID,
                }
            )
            signed = env.evm.payer.sign_transaction(tx)  # type: ignore[arg-type]
            chain.w3.eth.send_raw_transaction(signed.raw_transaction)
        chain.w3.provider.make_request("evm_mine", [])  # type: ignore[arg-type]
    finally:
        chain.w3.provider.make_request("evm_setAutomine", [True])  # type: ignore[arg-type]
    assert drain(w)[-1].deposits == 5
    for n, invoice in enumerate(invoices, start=1):
        got = read(env, invoice["guid"])
        assert (got["status"], got["paidAmount"]) == ("paid", str(n))
    assert len({p["timestamp"] for i in invoices for p in read(env, i["guid"])["payments"]}) == 1


def test_amounts_keep_every_decimal(env: Env) -> None:
    owner, key = env.merchant()
    invoice = create(env, key, value="1", acceptedTokens=[ETH_ID])
    env.pay_native(invoice["address"], 1)  # one wei
    drain(watcher(env.gateway))
    [payment] = read(env, invoice["guid"])["payments"]
    assert Decimal(payment["amount"]) == Decimal("1e-18")
    assert payment["amount"] == "0.000000000000000001"
