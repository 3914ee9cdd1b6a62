"""The framework bridges of host signals: Litestar listeners through ``app.emit``, Flask
receivers through blinker, both fed by the outbox consumer."""

from __future__ import annotations

from events_helpers import Merchant, gateway_on, wait_until
from flask import Flask
from litestar import Litestar
from litestar.events import listener
from litestar.testing import TestClient

from paycore import InvoiceEvent
from paycore.storage.memory import MemoryStorage
from paycore_flask.signals import connect_signals, invoice_signal
from paycore_litestar.signals import SignalEmitter


def test_litestar_listeners_hear_each_change_once() -> None:
    gateway = gateway_on(MemoryStorage())
    merchant = Merchant(gateway)
    heard: list[tuple[str, str]] = []

    @listener("invoice.paid", "invoice.overpaid")
    async def on_paid(event: InvoiceEvent) -> None:
        heard.append((event.guid, event.type))

    emitter = SignalEmitter(gateway)
    app = Litestar(route_handlers=[], listeners=[on_paid], lifespan=[emitter.lifespan])
    with TestClient(app):
        wait_until(lambda: bool(gateway.signals.subscriptions()), what="the emitter")
        gateway.signal_consumer().run_once()  # the queue opens before the payments
        guid, address = merchant.invoice()
        merchant.pay(address, "50", 1)  # partially paid: no listener, skipped
        merchant.pay(address, "50", 2)
        merchant.pay(address, "1", 3)
        wait_until(lambda: len(heard) == 2, what="two events")
    assert heard == [(guid, "invoice.paid"), (guid, "invoice.overpaid")]
    assert not gateway.signals.subscriptions()  # unsubscribed at shutdown


def test_flask_receivers_get_the_event_in_an_app_context() -> None:
    from flask import current_app

    gateway = gateway_on(MemoryStorage())
    merchant = Merchant(gateway)
    app = Flask("signals-test")
    connect_signals(app, gateway)
    got: list[tuple[str, str]] = []

    def receive(sender: Flask, event: InvoiceEvent) -> None:
        got.append((current_app.name, event.type))

    invoice_signal("invoice.late_payment").connect(receive, sender=app, weak=False)
    invoice_signal("invoice.paid").connect(receive, sender=app, weak=False)
    run = gateway.signal_consumer()
    run.run_once()
    _guid, address = merchant.invoice()
    merchant.pay(address, "100", 1)
    run.run_once()
    run.run_once()
    assert got == [("signals-test", "invoice.paid")]
