"""The pytest plugin's fixtures, used as a merchant would (they are loaded through the
``pytest11`` entry point, as in any project that installs paycore)."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

import pytest
from flask import Flask

from paycore import Gateway, InvoiceEvent
from paycore.events.signals import SignalConsumer
from paycore.testing.chain import FakeChain
from paycore.testing.client import PaycoreClient

OWNER = "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359"

both_backends = pytest.mark.parametrize("paycore_backend", ["memory", "sqlite"])


def listen(gateway: Gateway) -> list[tuple[str, str]]:
    heard: list[tuple[str, str]] = []

    @gateway.on(name="test.listen")
    def hear(event: InvoiceEvent) -> None:
        heard.append((event.type, event.invoice["status"]))

    return heard


@both_backends
def test_the_fake_chain_pays_in_every_way(
    paycore_gateway: Gateway, paycore_chain: FakeChain, paycore_signals: SignalConsumer
) -> None:
    heard = listen(paycore_gateway)
    paycore_signals.run_once()  # the new handler's queue opens here

    exact = paycore_gateway.create_invoice(OWNER, paycore_chain.invoice_fields("10"))
    paycore_chain.pay_exact(exact)
    partial = paycore_gateway.create_invoice(OWNER, paycore_chain.invoice_fields("10"))
    half = paycore_chain.pay_partial(partial)
    over = paycore_gateway.create_invoice(OWNER, paycore_chain.invoice_fields("10"))
    paycore_chain.overpay(over, "2.5")
    late = paycore_gateway.create_invoice(OWNER, paycore_chain.invoice_fields("10"))
    paycore_chain.pay_late(late)
    assert paycore_chain.reorg(half)
    paycore_signals.run_once()

    assert heard == [
        ("invoice.paid", "paid"),
        ("invoice.partially_paid", "partialPaid"),
        ("invoice.paid", "paid"),
        ("invoice.overpaid", "paid"),
        ("invoice.expired", "expired"),
        ("invoice.late_payment", "expired"),
        ("invoice.payment_reversed", "init"),
    ]
    got = paycore_gateway.get_invoice(over.guid)
    assert got.paid_amount == Decimal("12.5")
    assert paycore_gateway.get_invoice(partial.guid).paid_amount == 0


@both_backends
def test_a_handler_registered_late_still_gets_what_happened_since_the_fixture(
    paycore_gateway: Gateway, paycore_chain: FakeChain, paycore_signals: SignalConsumer
) -> None:
    early = paycore_gateway.create_invoice(OWNER, paycore_chain.invoice_fields("10"))
    paycore_chain.pay_exact(early)
    paycore_signals.run_once()  # nothing registered yet: no queue, nothing skipped
    first = listen(paycore_gateway)  # registered after the payment
    later = paycore_gateway.create_invoice(OWNER, paycore_chain.invoice_fields("10"))
    paycore_chain.pay_partial(later)
    paycore_signals.run_once()
    assert first == [("invoice.paid", "paid"), ("invoice.partially_paid", "partialPaid")]
    paycore_chain.pay_exact(later)
    heard: list[str] = []
    paycore_gateway.on("invoice.paid", name="test.late")(lambda e: heard.append(e.guid))
    paycore_signals.run_once()
    assert heard == [early.guid, later.guid]  # every paid since the start, once
    assert first[-1] == ("invoice.paid", "paid") and len(first) == 3
    paycore_signals.run_once()
    assert len(heard) == 2 and len(first) == 3


def test_the_client_signs_for_flask_and_litestar(
    paycore_gateway: Gateway,
    paycore_chain: FakeChain,
    paycore_client: Callable[..., PaycoreClient],
) -> None:
    from litestar.testing import TestClient

    from paycore_flask import PayCore
    from paycore_litestar import create_app

    flask_app = Flask("merchant")
    PayCore(flask_app, gateway=paycore_gateway)
    with TestClient(create_app(gateway=paycore_gateway)) as litestar_client:
        for raw in (flask_app.test_client(), litestar_client):
            client = paycore_client(raw)
            client.register()
            made = client.post("/invoice", paycore_chain.invoice_fields("5"))
            assert made.status == 201, made.body
            guid = made.json["guid"]
            paycore_chain.pay_exact(guid)
            listed = client.get(f"/invoices?owner={client.address}")
            assert listed.status == 200, listed.body
            assert [i["status"] for i in listed.json if i["guid"] == guid] == ["paid"]
            unsigned = client.get(f"/invoices?owner={client.address}", signed=False)
            assert unsigned.status in (401, 403)


def test_loading_the_plugin_imports_no_gateway() -> None:
    """It loads in every pytest session of a project with paycore installed."""
    import subprocess
    import sys

    code = (
        "import sys, paycore.testing.plugin;"
        "print(sorted(m for m in sys.modules if m.startswith('paycore')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['paycore', 'paycore.testing', 'paycore.testing.plugin']"
