"""Host signals: typed events from the outbox, once per change, after commit, across restarts.

Events are made by the real attribution path (``Gateway.record_deposit``, what the watcher
calls) on every backend; the consumer reads them back from storage.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest
from events_helpers import CHAIN, PAYER, TOKEN, Merchant, fast_settings, gateway_on

from paycore import Deposit, InvoiceEvent
from paycore.domain.changes import ALL_TYPES
from paycore.events.signals import SignalConsumer, Signals
from paycore.storage import Storage
from paycore_storage import SqlStorage


def consumer(merchant: Merchant) -> SignalConsumer:
    return SignalConsumer(merchant.gateway.storage, [merchant.gateway.signals])


def late(merchant: Merchant, address: str, amount: str, n: int, at: int) -> None:
    deposit = Deposit(
        CHAIN, f"0x{merchant.prefix}{n:056x}", 0, TOKEN, PAYER, address, Decimal(amount), at
    )
    assert merchant.gateway.record_deposit(deposit)


def test_each_event_names_its_change_not_only_the_status(store: Storage) -> None:
    gateway = gateway_on(store)
    merchant = Merchant(gateway)
    seen: list[tuple[str, str, str]] = []

    @gateway.on(name="all")
    def record(event: InvoiceEvent) -> None:
        seen.append((event.guid, event.type, event.invoice["status"]))

    run = consumer(merchant)
    run.run_once()  # opens the handler's queue at the newest event: nothing before it
    guid, address = merchant.invoice()
    merchant.pay(address, "40", 1)
    merchant.pay(address, "60", 2)
    merchant.pay(address, "5", 3)
    run.run_once()
    assert seen == [
        (guid, "invoice.partially_paid", "partialPaid"),
        (guid, "invoice.paid", "paid"),
        (guid, "invoice.overpaid", "paid"),  # paid again: not a second "invoice.paid"
    ]
    seen.clear()
    late_guid, late_address = merchant.invoice()
    deadline = gateway.get_invoice(late_guid).deadline
    late(merchant, late_address, "100", 4, deadline + 1)
    run.run_once()
    assert seen == [
        (late_guid, "invoice.expired", "expired"),
        (late_guid, "invoice.late_payment", "expired"),
    ]
    seen.clear()
    [paid_tx, *_] = [
        t
        for t in gateway.list_transactions(merchant.owner, offset=0, limit=50)[0]
        if t.guid == guid and t.amount == Decimal(60)
    ]
    gateway.reorg_deposit(paid_tx)
    run.run_once()
    assert seen == [(guid, "invoice.payment_reversed", "partialPaid")]


def test_the_webhook_body_is_the_invoice_plus_its_type(store: Storage) -> None:
    gateway = gateway_on(store)
    merchant = Merchant(gateway)
    merchant.webhook("http://127.0.0.1:9/hook")
    guid, address = merchant.invoice()
    every = gateway.webhooks.endpoints.create(merchant.owner, "http://127.0.0.1:9/all", ALL_TYPES)
    merchant.pay(address, "100", 1)
    merchant.pay(address, "1", 2)
    with store.transaction() as tx:
        deliveries, _total = tx.list_deliveries(merchant.owner)
    bodies = [json.loads(d.body) for d in reversed(deliveries) if d.endpoint_id == every.id]
    assert [b["type"] for b in bodies] == ["invoice.paid", "invoice.overpaid"]
    # The /webhook/set URL is sent the status change only (docs/interface.md §Events).
    spec = [json.loads(d.body)["type"] for d in deliveries if d.endpoint_id is None]
    assert spec == ["invoice.paid"]
    wire = gateway.invoice_wire(gateway.get_invoice(guid))
    assert {k: v for k, v in bodies[-1].items() if k != "type"} == wire


def test_a_failing_handler_is_retried_and_holds_up_no_other(store: Storage) -> None:
    gateway = gateway_on(store)
    merchant = Merchant(gateway)
    good: list[int] = []
    tried: list[int] = []
    broken = True

    @gateway.on("invoice.paid", name="good")
    def fulfil(event: InvoiceEvent) -> None:
        good.append(event.id)

    @gateway.on("invoice.paid", name="flaky")
    def flaky(event: InvoiceEvent) -> None:
        tried.append(event.id)
        if broken:
            raise RuntimeError("mail server down")

    run = consumer(merchant)
    run.run_once()
    for _ in range(2):
        _guid, address = merchant.invoice()
        merchant.pay(address, "100", merchant.count)
    run.run_once()
    run.run_once()
    assert len(good) == 2 and len(set(good)) == 2
    assert tried == [good[0], good[0]]  # the first event, again; the second waits behind it
    broken = False
    run.run_once()
    assert tried == [good[0], good[0], good[0], good[1]]
    run.run_once()
    assert len(tried) == 4 and len(good) == 2


@pytest.mark.parametrize("restarts", [1, 3])
def test_exactly_once_per_change_across_consumer_restarts(tmp_path: Path, restarts: int) -> None:
    url = f"sqlite:///{tmp_path / 'shop.sqlite3'}"
    fulfilled: list[tuple[int, str]] = []

    def start() -> tuple[Merchant, SignalConsumer]:
        gateway = gateway_on(SqlStorage(url), fast_settings(url))
        gateway.on("invoice.paid", "invoice.overpaid", name="shop.fulfil")(
            lambda e: fulfilled.append((e.id, e.type))
        )
        return Merchant(gateway), SignalConsumer(gateway.storage, [gateway.signals])

    merchant, run = start()
    run.run_once()
    paid: list[str] = []
    for round_ in range(restarts + 1):
        guid, address = merchant.invoice()
        paid.append(guid)
        merchant.pay(address, "100", 10 * round_ + 1)
        run.run_once()
        merchant.pay(address, "3", 10 * round_ + 2)  # committed, not yet consumed
        merchant.gateway.close()
        merchant, run = start()  # a new process: a new gateway and consumer on the file
        merchant.count = 100 * (round_ + 1)
        run.run_once()
        run.run_once()
    ids = [i for i, _type in fulfilled]
    assert len(ids) == len(set(ids)) == 2 * (restarts + 1)
    assert [t for _i, t in fulfilled] == ["invoice.paid", "invoice.overpaid"] * (restarts + 1)


def test_paycore_on_reaches_every_gateways_consumer(store: Storage) -> None:
    from paycore.events.signals import default_signals

    got: list[str] = []
    sub = default_signals.subscribe(lambda e: got.append(e.type), name="test.global")
    try:
        gateway = gateway_on(store)
        merchant = Merchant(gateway)
        run = gateway.signal_consumer()
        run.run_once()
        _guid, address = merchant.invoice()
        merchant.pay(address, "100", 1)
        run.run_once()
        assert got == ["invoice.paid"]
    finally:
        default_signals.unsubscribe(sub.name)


def test_unknown_event_types_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown event type 'invoice.payed'"):
        Signals().on("invoice.payed")


def test_the_worker_refuses_a_signals_module_it_cannot_import(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from paycore.runtime.worker import main

    assert main(["--signals", "no_such_module_for_paycore_signals"]) == 2
    assert "--signals" in capsys.readouterr().err


def test_the_embedded_worker_runs_the_handlers() -> None:
    import threading

    from events_helpers import wait_until

    from paycore.runtime.worker import run_worker
    from paycore.storage.memory import MemoryStorage

    gateway = gateway_on(MemoryStorage())
    merchant = Merchant(gateway)
    heard: list[str] = []
    gateway.on("invoice.paid", name="worker.test")(lambda e: heard.append(e.guid))
    stop = threading.Event()
    worker = threading.Thread(
        target=run_worker,
        args=(gateway,),
        kwargs={"stop_event": stop, "watch": False, "prices": False},
    )
    worker.start()
    try:
        # The queue opens on the consumer's first pass; pay once it has run.
        wait_until(lambda: _opened(gateway), what="the signal queue to open")
        guid, address = merchant.invoice()
        merchant.pay(address, "100", 1)
        wait_until(lambda: heard == [guid], what="the handler")
    finally:
        stop.set()
        worker.join()


def _opened(gateway: object) -> bool:
    storage = gateway.storage  # type: ignore[attr-defined]
    with storage.transaction() as tx:
        return tx.read_outbox("signal:worker.test", 1) is not None


def test_signals_module_factory_is_called_and_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--signals MODULE:FACTORY`` calls the factory, whose handlers are then there to serve;
    a module found in the current directory imports like ``flask --app`` finds it."""
    from paycore.events.signals import default_signals
    from paycore.runtime.worker import import_signals

    (tmp_path / "factory_shop_for_signals.py").write_text(
        "import paycore\n"
        "def create_app():\n"
        "    paycore.on('invoice.paid', name='factory.ship')(lambda event: None)\n"
    )
    monkeypatch.chdir(tmp_path)
    try:
        import_signals("factory_shop_for_signals")
        assert "factory.ship" not in {s.name for s in default_signals.subscriptions()}
        import_signals("factory_shop_for_signals:create_app")
        assert "factory.ship" in {s.name for s in default_signals.subscriptions()}
        with pytest.raises(ImportError, match="no callable 'make'"):
            import_signals("factory_shop_for_signals:make")
    finally:
        default_signals.unsubscribe("factory.ship")


def test_a_halted_consumer_finishes_the_call_in_progress_and_stops(store: Storage) -> None:
    """A worker told to stop (SIGTERM) lets the running handler return, records it, and
    calls no further handler: the rest wait for the next consumer, nothing is repeated."""
    import threading

    gateway = gateway_on(store)
    merchant = Merchant(gateway)
    halt = threading.Event()
    calls: list[int] = []

    def slow(event: InvoiceEvent) -> None:
        calls.append(event.id)
        halt.set()  # the stop arrives while this handler runs

    gateway.on("invoice.paid", name="halt.test")(slow)
    run = consumer(merchant)
    run.run_once()
    for _ in range(3):
        _guid, address = merchant.invoice()
        merchant.pay(address, "100", merchant.count)
    assert run.run_once(halt) == 1 and len(calls) == 1
    halt.clear()
    assert run.run_once(halt) == 1  # the next one, not the first again
    halt.clear()
    assert run.run_once(halt) == 1
    assert len(calls) == len(set(calls)) == 3
    assert run.run_once() == 0
