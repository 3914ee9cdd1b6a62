"""The worker inside the app's process: as a thread and as an anyio task, with the expiry
sweeper, and woken by the app's own changes rather than by its poll."""

from __future__ import annotations

import threading
import time

import anyio
from events_helpers import Merchant, Receiver, fast_settings, gateway_on, wait_until

from paycore.runtime.worker import run_worker, worker_task
from paycore.storage.memory import MemoryStorage


def test_thread_worker_delivers_at_once_and_stops_cleanly(receiver: Receiver) -> None:
    """A 30 s poll interval, yet delivery follows the change: the worker's notifier wakes
    the dispatcher when the gateway commits."""
    gateway = gateway_on(MemoryStorage(), fast_settings(worker_poll_interval=30.0))
    merchant = Merchant(gateway)
    receiver.secret = merchant.webhook(receiver.url)
    stop = threading.Event()
    thread = threading.Thread(target=run_worker, args=(gateway,), kwargs={"stop_event": stop})
    thread.start()
    try:
        time.sleep(0.2)  # idle in its 30 s wait
        started = time.monotonic()
        merchant.invoices_paid_in_parts(2, parts=2)
        wait_until(lambda: len(receiver.accepted()) == 4, timeout=5)
        assert time.monotonic() - started < 5
    finally:
        stop.set()
        thread.join(timeout=30)
    assert not thread.is_alive()
    assert not any(n.name == "webhook-dispatcher-wake" for n in gateway.notifiers)


def test_sweeper_expires_overdue_invoices_and_their_webhook_goes_out(receiver: Receiver) -> None:
    gateway = gateway_on(MemoryStorage())
    merchant = Merchant(gateway)
    receiver.secret = merchant.webhook(receiver.url)
    guid, _ = merchant.invoice(deadlineSecs=1)
    stop = threading.Event()
    thread = threading.Thread(target=run_worker, args=(gateway,), kwargs={"stop_event": stop})
    thread.start()
    try:
        wait_until(lambda: len(receiver.accepted()) == 1, timeout=10, what="the expiry event")
    finally:
        stop.set()
        thread.join(timeout=30)
    [event] = receiver.accepted()
    assert (event.guid, event.status, event.verified) == (guid, "expired", True)


def test_anyio_task_delivers_and_stops_on_cancel(receiver: Receiver) -> None:
    gateway = gateway_on(MemoryStorage())
    merchant = Merchant(gateway)
    receiver.secret = merchant.endpoint(receiver.url)  # every type: 3 events

    async def app() -> None:
        async with anyio.create_task_group() as lifespan:
            lifespan.start_soon(worker_task, gateway)
            await anyio.to_thread.run_sync(merchant.invoices_paid_in_parts, 1, 3)
            with anyio.fail_after(10):
                while len(receiver.accepted()) < 3:
                    await anyio.sleep(0.02)
            lifespan.cancel_scope.cancel()  # the app shuts down

    anyio.run(app)
    assert [r.payments for r in receiver.accepted()] == [1, 2, 3]
    assert not any(n.name == "webhook-dispatcher-wake" for n in gateway.notifiers)


def test_anyio_task_returns_when_its_stop_event_is_set(receiver: Receiver) -> None:
    gateway = gateway_on(MemoryStorage())
    merchant = Merchant(gateway)
    receiver.secret = merchant.webhook(receiver.url)

    async def app() -> None:
        stop = anyio.Event()
        async with anyio.create_task_group() as group:
            group.start_soon(lambda: worker_task(gateway, stop_event=stop, sweep=False))
            await anyio.to_thread.run_sync(merchant.invoices_paid_in_parts, 1, 1)
            with anyio.fail_after(10):
                while not receiver.accepted():
                    await anyio.sleep(0.02)
            stop.set()
        # Leaving the task group means worker_task returned by itself.

    anyio.run(app)
    assert len(receiver.accepted()) == 1
