"""Webhooks end to end in one process: invoice changes through the Gateway, a dispatcher on
real storage, a real HTTP receiver on 127.0.0.1 that is down, failing, then up."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from events_helpers import OTHER_OWNER, Merchant, Receiver, fast_settings, gateway_on, wait_until
from sqlalchemy.engine import URL

from paycore.domain.records import WebhookConfig
from paycore.errors import InvalidInput
from paycore.gateway import Gateway
from paycore.storage import Storage
from paycore.storage.memory import MemoryStorage
from paycore.webhooks.config import clear_webhook, set_webhook
from paycore.webhooks.delivery import Outcome
from paycore.webhooks.dispatcher import Dispatcher
from paycore.webhooks.log import DeliveryNotFound, list_deliveries, redeliver
from paycore.webhooks.records import Delivery, DeliveryStatus
from paycore_storage import SqlStorage

pytestmark = pytest.mark.slow  # real HTTP receivers, waited on through retries


@contextmanager
def dispatching(gateway: Gateway) -> Iterator[Dispatcher]:
    dispatcher = Dispatcher(gateway.storage, gateway.settings, clock=gateway.clock)
    thread = threading.Thread(target=dispatcher.run, daemon=True)
    thread.start()
    try:
        yield dispatcher
    finally:
        dispatcher.stop()
        thread.join(timeout=30)
        assert not thread.is_alive()


def all_deliveries(gateway: Gateway, owner: str) -> list[Delivery]:
    items, total, _, _ = list_deliveries(gateway, owner, limit=50)
    offset = len(items)
    while offset < total:
        more, _, _, _ = list_deliveries(gateway, owner, offset=offset, limit=50)
        items += more
        offset += len(more)
    return items


def test_outage_then_recovery_delivers_everything_once_in_order(
    store: Storage, receiver: Receiver
) -> None:
    """Down (connection refused), then answering 500, then up: every event arrives, each
    webhook-id is accepted exactly once, each invoice's events in order, all signed (with
    the endpoint's own secret: it is sent every type, the further partial payment too)."""
    gateway = gateway_on(store)
    merchant = Merchant(gateway)
    receiver.secret = merchant.endpoint(receiver.url)
    receiver.down()
    guids = merchant.invoices_paid_in_parts(8, parts=3)
    with dispatching(gateway):
        time.sleep(0.4)  # retries against a closed port
        receiver.up("error")
        wait_until(lambda: len(receiver.snapshot()) >= 8, what="failing answers")
        receiver.mode = "up"
        wait_until(lambda: len(receiver.accepted()) >= 24, what="all 24 events")
        time.sleep(0.3)  # anything extra would show up now
    deliveries = all_deliveries(gateway, merchant.owner)
    assert len(deliveries) == 24
    assert all(d.status is DeliveryStatus.DELIVERED for d in deliveries)
    ids = receiver.accepted_ids()
    assert set(ids) == {d.webhook_id for d in deliveries} and set(ids.values()) == {1}
    assert all(r.verified for r in receiver.snapshot())
    assert receiver.order_by_invoice() == {guid: [1, 2, 3] for guid in guids}
    errors = {a.error for d in deliveries for a in d.log if a.error}
    assert any(e.startswith("connection refused") for e in errors)
    assert any(e.startswith("answered 500") for e in errors)


def test_body_is_the_invoice_json_of_a_poll_event_plus_its_type(
    store: Storage, receiver: Receiver
) -> None:
    gateway = gateway_on(store)
    merchant = Merchant(gateway)
    receiver.secret = merchant.webhook(receiver.url)
    gateway.open_queue("poller", merchant.owner)
    merchant.invoices_paid_in_parts(1, parts=2)
    with dispatching(gateway):
        wait_until(lambda: len(receiver.accepted()) == 2)
    polled = [{**e.payload, "type": e.type} for e in gateway.drain_events("poller")]
    assert [r.body for r in receiver.accepted()] == polled
    assert [r.status for r in receiver.accepted()] == ["partialPaid", "paid"]
    assert [r.body["type"] for r in receiver.accepted()] == [
        "invoice.partially_paid",
        "invoice.paid",
    ]


def test_an_in_process_change_is_delivered_without_waiting_for_a_poll(
    receiver: Receiver,
) -> None:
    """With a long poll interval, only the wake after each finished POST and the worker's
    notifier keep delivery prompt; here the dispatcher is woken by hand as the notifier
    would."""
    gateway = gateway_on(MemoryStorage(), fast_settings(worker_poll_interval=30.0))
    merchant = Merchant(gateway)
    receiver.secret = merchant.webhook(receiver.url)
    with dispatching(gateway) as dispatcher:
        time.sleep(0.1)  # let it go idle
        started = time.monotonic()
        merchant.invoices_paid_in_parts(1, parts=3)  # the middle part changes no status
        dispatcher.wake()
        wait_until(lambda: len(receiver.accepted()) == 2, timeout=5)
        assert time.monotonic() - started < 5


def test_no_url_no_delivery_and_a_url_set_later_gets_only_later_events(
    store: Storage, receiver: Receiver
) -> None:
    gateway = gateway_on(store)
    merchant = Merchant(gateway)
    merchant.invoices_paid_in_parts(1, parts=2)
    assert all_deliveries(gateway, merchant.owner) == []
    receiver.secret = merchant.webhook(receiver.url)
    [guid] = merchant.invoices_paid_in_parts(1, parts=1)
    with dispatching(gateway):
        wait_until(lambda: len(receiver.accepted()) == 1)
        time.sleep(0.2)
    assert [(r.guid, r.status) for r in receiver.accepted()] == [(guid, "paid")]


def test_a_change_rolled_back_sends_nothing(store: Storage, receiver: Receiver) -> None:
    gateway = gateway_on(store)
    merchant = Merchant(gateway)
    merchant.webhook(receiver.url)
    guid, _ = merchant.invoice()

    class Abort(Exception):
        pass

    with pytest.raises(Abort), gateway.storage.transaction() as tx:
        invoice = tx.get_invoice(guid, for_update=True)
        assert invoice is not None
        gateway._emit(tx, [invoice])
        raise Abort
    assert all_deliveries(gateway, merchant.owner) == []


def test_a_committed_change_survives_a_restart_before_dispatch(
    sql_url: URL, receiver: Receiver
) -> None:
    """The process that made the change dies before any dispatcher ran; a new process on
    the same database delivers it."""
    first = gateway_on(SqlStorage(sql_url))
    merchant = Merchant(first)
    receiver.secret = merchant.webhook(receiver.url)
    merchant.invoices_paid_in_parts(2, parts=1)
    first.close()
    second = gateway_on(SqlStorage(sql_url))
    with dispatching(second):
        wait_until(lambda: len(receiver.accepted()) == 2)
    second.close()


def test_private_target_refused_at_delivery_time(store: Storage, receiver: Receiver) -> None:
    """The URL was accepted (set while allowed, or its DNS changed since): the dispatcher
    checks again before connecting, sends nothing to a loopback address, and fails the
    delivery at once -- every retry of the same URL would be refused the same way (a fixed
    URL gets a redelivery)."""
    gateway = gateway_on(store, fast_settings(webhook_allow_private=False))
    merchant = Merchant(gateway)
    merchant.webhook(receiver.url)  # stored without the set-time check
    merchant.invoices_paid_in_parts(1, parts=1)
    Dispatcher(gateway.storage, gateway.settings).run_once()
    [delivery] = all_deliveries(gateway, merchant.owner)
    assert receiver.snapshot() == []
    assert delivery.status is DeliveryStatus.FAILED and delivery.next_attempt_at is None
    [attempt] = delivery.log
    assert attempt.status_code is None
    assert attempt.error == (
        "refused: 127.0.0.1 resolves to a private, loopback or link-local address "
        "(127.0.0.1: loopback); not retried"
    )


def test_private_target_refused_at_set_time_unless_allowed(store: Storage) -> None:
    with pytest.raises(InvalidInput, match="private, loopback or link-local"):
        set_webhook(store, OTHER_OWNER, "http://127.0.0.1:9/hook")
    with store.transaction() as tx:
        assert tx.get_webhook(OTHER_OWNER) is None
    assert set_webhook(store, OTHER_OWNER, "http://127.0.0.1:9/hook", allow_private=True).url


def test_log_records_attempts_and_redeliver_resends_with_the_same_id(
    store: Storage, receiver: Receiver
) -> None:
    """Retries run out (horizon 0.3 s here) and the delivery fails; a redelivery starts a
    new schedule and arrives with the webhook-id the failed attempts carried."""
    gateway = gateway_on(store, fast_settings(webhook_retry_horizon=0.3))
    merchant = Merchant(gateway)
    receiver.secret = merchant.webhook(receiver.url)
    receiver.mode = "error"
    merchant.invoices_paid_in_parts(1, parts=1)
    with dispatching(gateway):
        wait_until(
            lambda: all_deliveries(gateway, merchant.owner)[0].status is DeliveryStatus.FAILED,
            what="the delivery to fail",
        )
    [failed] = all_deliveries(gateway, merchant.owner)
    assert len(failed.log) >= 2 and all(a.status_code == 500 for a in failed.log)
    assert all(a.latency_ms >= 0 and a.url == receiver.url for a in failed.log)
    wire = failed.to_wire()
    assert wire["status"] == "failed" and wire["attempts"][0]["error"].startswith("answered 500")
    items, total, _, _ = list_deliveries(gateway, merchant.owner, status="failed")
    assert total == 1 and items[0].id == failed.id
    with pytest.raises(InvalidInput):
        list_deliveries(gateway, merchant.owner, status="lost")

    receiver.mode = "up"
    with pytest.raises(DeliveryNotFound):
        redeliver(gateway, OTHER_OWNER, failed.id)
    again = redeliver(gateway, merchant.owner, failed.id)
    assert again.status is DeliveryStatus.PENDING and again.webhook_id == failed.webhook_id
    with dispatching(gateway):
        wait_until(lambda: len(receiver.accepted()) == 1)
    [done] = all_deliveries(gateway, merchant.owner)
    assert done.status is DeliveryStatus.DELIVERED and done.log[-1].status_code == 200
    assert receiver.accepted()[0].webhook_id == failed.webhook_id
    assert len({r.webhook_id for r in receiver.snapshot()}) == 1


def test_a_cleared_webhook_fails_its_pending_deliveries(store: Storage, receiver: Receiver) -> None:
    gateway = gateway_on(store)
    merchant = Merchant(gateway)
    merchant.webhook(receiver.url)
    merchant.invoices_paid_in_parts(1, parts=1)
    clear_webhook(gateway.storage, merchant.owner)
    Dispatcher(gateway.storage, gateway.settings).run_once()
    [delivery] = all_deliveries(gateway, merchant.owner)
    assert delivery.status is DeliveryStatus.FAILED
    assert delivery.log[0].error == "webhook cleared: no URL to deliver to"
    assert receiver.snapshot() == []


def test_a_url_change_redirects_pending_retries(store: Storage, receiver: Receiver) -> None:
    gateway = gateway_on(store)
    merchant = Merchant(gateway)
    merchant.webhook("http://127.0.0.1:9/closed")  # the discard port: nothing listens
    merchant.invoices_paid_in_parts(1, parts=1)
    Dispatcher(gateway.storage, gateway.settings).run_once()
    receiver.secret = merchant.webhook(receiver.url)
    with dispatching(gateway):
        wait_until(lambda: len(receiver.accepted()) == 1)
    assert all(r.verified for r in receiver.snapshot())


def test_slow_receiver_times_out_and_is_retried(store: Storage, receiver: Receiver) -> None:
    gateway = gateway_on(store, fast_settings(webhook_timeout=0.3, webhook_lease=5.0))
    merchant = Merchant(gateway)
    receiver.secret = merchant.webhook(receiver.url)
    receiver.slow_seconds = 1.0
    receiver.mode = "slow"
    merchant.invoices_paid_in_parts(1, parts=1)
    Dispatcher(gateway.storage, gateway.settings).run_once()
    [delivery] = all_deliveries(gateway, merchant.owner)
    assert delivery.status is DeliveryStatus.PENDING
    assert delivery.log[0].error == "no answer within 0.3 s"
    assert 250 <= delivery.log[0].latency_ms < 1000


def test_redirects_are_not_followed(store: Storage) -> None:
    """A 3xx could bounce the POST to an inside address, so it is only a failure."""
    gateway = gateway_on(store)
    with gateway.storage.transaction() as tx:
        tx.put_webhook(WebhookConfig(OTHER_OWNER, "https://merchant.example.test/h", "whsec_AA"))
    Merchant(gateway, OTHER_OWNER).invoices_paid_in_parts(1, parts=1)

    def redirecting(url: str, body: bytes, headers: dict[str, str], **_: object) -> Outcome:
        return Outcome(307, "answered 307 Temporary Redirect", 2)

    Dispatcher(gateway.storage, gateway.settings, send=redirecting).run_once()
    [delivery] = all_deliveries(gateway, OTHER_OWNER)
    assert delivery.status is DeliveryStatus.PENDING and delivery.log[0].status_code == 307


def test_the_secret_never_reaches_the_log_output(
    store: Storage, receiver: Receiver, caplog: pytest.LogCaptureFixture
) -> None:
    gateway = gateway_on(store)
    merchant = Merchant(gateway)
    secret = merchant.webhook(receiver.url)
    receiver.secret = secret
    receiver.mode = "error"
    merchant.invoices_paid_in_parts(1, parts=1)
    with caplog.at_level("DEBUG"):
        Dispatcher(gateway.storage, gateway.settings).run_once()
    assert "failed (attempt 1)" in caplog.text
    assert secret not in caplog.text and secret.removeprefix("whsec_") not in caplog.text
