"""Invoice events as Flask signals (blinker, which Flask brings).

``connect_signals(app, gateway)`` subscribes one handler, named ``flask:<app name>``, to the
gateway's outbox consumer (``paycore.events.signals``); it sends the blinker signal named
for each event's type inside an app context, with the app as sender::

    from paycore_flask.signals import invoice_signal

    @invoice_signal("invoice.paid").connect
    def fulfil(app, event): ...

So receivers run after commit, once per change while they return normally and no process
dies mid-handler (``paycore.events.signals``), and again at the next pass when one raises.
They run where a consumer runs: a thread of the web process (``start_signal_thread``), or
a worker process that built the app too -- ``flask --app shop paycore worker``, or
``paycore worker --signals shop:create_app`` -- which serves the handlers of the app's
gateway because it is on the worker's database. Any number of these at once: each change
is sent once.
"""

from __future__ import annotations

import threading

from blinker import NamedSignal, Namespace
from flask import Flask

from paycore.domain.changes import ALL_TYPES
from paycore.events.signals import InvoiceEvent, Signals
from paycore.gateway import Gateway

#: One blinker signal per event type, named as the type.
paycore_signals = Namespace()


def invoice_signal(type: str) -> NamedSignal:
    """The blinker signal sent for events of ``type`` (``invoice.paid``, ...)."""
    if type not in ALL_TYPES:
        raise ValueError(f"unknown event type {type!r}")
    return paycore_signals.signal(type)


def connect_signals(app: Flask, gateway: Gateway, registry: Signals | None = None) -> None:
    """Send ``app``'s blinker signals from the consumers of ``gateway``'s handlers: its own
    (``gateway.signal_consumer()``) and those of a worker on the same database that built
    the app. ``registry`` puts the handler in another registry instead (rarely needed). A
    receiver that raises makes the whole event be sent again later, to every receiver."""

    def send(event: InvoiceEvent) -> None:
        signal = paycore_signals.signal(event.type)
        if not signal.receivers:
            return
        with app.app_context():
            signal.send(app, event=event)

    (registry or gateway.signals).subscribe(send, name=f"flask:{app.name}")


def start_signal_thread(gateway: Gateway, halt: threading.Event) -> threading.Thread:
    """Run ``gateway``'s signal consumer in a daemon thread until ``halt`` is set: for a web
    process that runs no separate worker."""
    consumer = gateway.signal_consumer()
    thread = threading.Thread(
        target=consumer.run,
        args=(halt, gateway.settings.worker_poll_interval),
        name="paycore-signals",
        daemon=True,
    )
    thread.start()
    return thread
