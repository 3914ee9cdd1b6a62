"""The fake chain's "payment detected, confirming": a transfer mined but not yet deep enough
shows in the public record's ``detected`` list over HTTP (Flask and Litestar), never in
``paidAmount`` or the status; it becomes a payment once buried deep enough, and a reorg
before that removes it. No event is written for a detected transfer."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs
import pytest
from flask import Flask

from paycore import Gateway, Settings
from paycore.config import ChainConfig
from paycore.testing.chain import CHAIN_ID, FakeChain

OWNER = "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359"
CONSUMER = "test:detected"

pytestmark = pytest.mark.parametrize("paycore_backend", ["memory", "sqlite"])


@pytest.fixture
def paycore_settings(paycore_settings: Settings) -> Settings:
    """The fake chain attributing at three confirmations."""
    deep = ChainConfig(CHAIN_ID, "paycore fake chain", confirmations=3)
    return attrs.evolve(paycore_settings, chains={**paycore_settings.chains, CHAIN_ID: deep})


@pytest.fixture(params=["flask", "litestar"])
def get(request: pytest.FixtureRequest, paycore_gateway: Gateway) -> Iterator[Any]:
    """GET /paycore/invoice/{guid}, unsigned, as the checkout page asks it: the JSON."""
    if request.param == "flask":
        from paycore_flask import PayCore

        app = Flask("merchant")
        PayCore(app, gateway=paycore_gateway)
        client = app.test_client()

        def flask_get(guid: str) -> Any:
            answer = client.get(f"/paycore/invoice/{guid}")
            assert answer.status_code == 200, answer.data
            return answer.get_json()

        yield flask_get
        return
    from litestar.testing import TestClient

    from paycore_litestar import create_app

    with TestClient(create_app(gateway=paycore_gateway)) as litestar:

        def litestar_get(guid: str) -> Any:
            answer = litestar.get(f"/paycore/invoice/{guid}")
            assert answer.status_code == 200, answer.text
            return answer.json()

        yield litestar_get


def test_a_mined_transfer_is_detected_then_paid(
    paycore_gateway: Gateway, paycore_chain: FakeChain, get: Any
) -> None:
    paycore_gateway.open_queue(CONSUMER, OWNER)
    invoice = paycore_gateway.create_invoice(OWNER, paycore_chain.invoice_fields("10"))
    assert get(invoice.guid)["detected"] == []

    sent = paycore_chain.mine(invoice)
    record = get(invoice.guid)
    assert record["detected"] == [
        {
            "txHash": sent.tx_hash,
            "logIndex": 0,
            "chainId": str(CHAIN_ID),
            "token": paycore_chain.token,
            "from": sent.from_,
            "amount": "10",
            "blockNumber": sent.block_number,
            "confirmations": 1,
            "required": 3,
        }
    ]
    assert (record["status"], record["paidAmount"], record["payments"]) == ("init", "0", [])
    assert paycore_gateway.drain_events(CONSUMER) == []

    assert paycore_chain.bury(2) == []
    record = get(invoice.guid)
    assert [(d["confirmations"], d["required"]) for d in record["detected"]] == [(3, 3)]
    assert (record["status"], record["paidAmount"]) == ("init", "0")

    assert paycore_chain.bury(1) == [sent]
    record = get(invoice.guid)
    assert record["detected"] == []
    assert (record["status"], record["paidAmount"]) == ("paid", "10")
    assert [p["txHash"] for p in record["payments"]] == [sent.tx_hash]
    assert [e.payload["status"] for e in paycore_gateway.drain_events(CONSUMER)] == ["paid"]


def test_a_reorg_drops_a_detected_transfer(
    paycore_gateway: Gateway, paycore_chain: FakeChain, get: Any
) -> None:
    paycore_gateway.open_queue(CONSUMER, OWNER)
    invoice = paycore_gateway.create_invoice(OWNER, paycore_chain.invoice_fields("10"))
    kept = paycore_chain.mine(invoice, "4")
    dropped = paycore_chain.mine(invoice, "6")
    assert [d["amount"] for d in get(invoice.guid)["detected"]] == ["4", "6"]

    paycore_chain.drop(dropped)
    record = get(invoice.guid)
    assert [d["txHash"] for d in record["detected"]] == [kept.tx_hash]
    assert (record["status"], record["paidAmount"]) == ("init", "0")
    assert paycore_chain.bury(3) == [kept]
    record = get(invoice.guid)
    assert (record["status"], record["paidAmount"], record["detected"]) == (
        "partialPaid",
        "4",
        [],
    )
    assert [e.payload["status"] for e in paycore_gateway.drain_events(CONSUMER)] == ["partialPaid"]


def test_a_transfer_shows_on_the_invoice_it_would_pay_only(
    paycore_gateway: Gateway, paycore_chain: FakeChain, get: Any
) -> None:
    """Two invoices: each sees only the transfer to its own address."""
    first = paycore_gateway.create_invoice(OWNER, paycore_chain.invoice_fields("10"))
    second = paycore_gateway.create_invoice(OWNER, paycore_chain.invoice_fields("10"))
    sent = paycore_chain.mine(second)
    assert get(first.guid)["detected"] == []
    assert [d["txHash"] for d in get(second.guid)["detected"]] == [sent.tx_hash]
