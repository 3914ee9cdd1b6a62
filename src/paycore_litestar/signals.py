"""Invoice events as Litestar events: ``litestar.events.listener("invoice.paid")``.

``SignalEmitter(gateway)`` is a lifespan hook: while the app runs it runs the gateway's
signal consumer (``paycore.events.signals``) on a worker thread and hands each event to
``app.emit(event.type, event)``, so listeners registered on the app for that type get it
after commit, once per change::

    @listener("invoice.paid")
    async def fulfil(event: InvoiceEvent) -> None: ...

    emitter = SignalEmitter(gateway)
    app = Litestar(..., listeners=[fulfil], lifespan=[emitter.lifespan])

paycore moves past an event once ``app.emit`` took it: Litestar runs listeners on its own
and does not report their failure back, so retrying a failed listener is Litestar's (or
the listener's) business; use ``gateway.on`` for handlers paycore retries (those are also
served by ``litestar paycore worker``). An event type no listener is registered for is
skipped. Several app processes each run an emitter: the queue's lease in storage makes
each event emitted by one of them, once.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import anyio.from_thread
import anyio.to_thread
from litestar import Litestar

from paycore.events.signals import InvoiceEvent
from paycore.gateway import Gateway


class SignalEmitter:
    def __init__(self, gateway: Gateway, *, name: str = "litestar:emit") -> None:
        self.gateway = gateway
        self.name = name

    @asynccontextmanager
    async def lifespan(self, app: Litestar) -> AsyncIterator[None]:
        def emit(event: InvoiceEvent) -> None:
            if app.event_emitter.listeners.get(event.type):
                anyio.from_thread.run_sync(app.emit, event.type, event)

        self.gateway.signals.subscribe(emit, name=self.name)
        halt = threading.Event()
        consumer = self.gateway.signal_consumer()
        interval = self.gateway.settings.worker_poll_interval
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(lambda: anyio.to_thread.run_sync(consumer.run, halt, interval))
                try:
                    yield
                finally:
                    halt.set()
        finally:
            self.gateway.signals.unsubscribe(self.name)
