"""Retention through the gateway and on the worker's schedule: a round deletes old events only
once their queues have them, settled deliveries and their logs, expired challenges, and the
worker runs rounds every ``worker_prune_interval`` and stops cleanly."""

from __future__ import annotations

import logging
import re
import threading
from pathlib import Path

import pytest
from events_helpers import OWNER, Merchant, Receiver, fast_settings, gateway_on, wait_until

from paycore import Gateway, Settings
from paycore.domain.records import PowChallenge
from paycore.errors import InvalidInput
from paycore.ops.retention import PruneReport
from paycore.runtime.cli import main
from paycore.runtime.worker import run_worker
from paycore.storage import Storage
from paycore_storage import SqlStorage

DAY = 24 * 3600


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _clocked(store: Storage, settings: Settings, clock: Clock) -> Gateway:
    return Gateway(settings, storage=store, entry_points=False, clock=clock)


def _deliver_all(merchant: Merchant, receiver: Receiver) -> None:
    stop = threading.Event()
    worker = threading.Thread(
        target=run_worker,
        args=(merchant.gateway,),
        kwargs={
            "stop_event": stop,
            "sweep": False,
            "watch": False,
            "prices": False,
            "prune": False,
        },
    )
    worker.start()
    try:
        wait_until(lambda: len(receiver.accepted()) == 4, timeout=20, what="the deliveries")
    finally:
        stop.set()
        worker.join(timeout=30)


def test_a_round_keeps_what_is_still_needed_and_deletes_the_rest(
    store: Storage, receiver: Receiver
) -> None:
    clock = Clock(1_800_000_000)
    settings = fast_settings(
        retention_events=DAY,
        retention_deliveries=2 * DAY,
        retention_expired_grace=60,
        retention_batch=2,
        pow_difficulty=4,  # a challenge is stored only while proof of work is on
    )
    gateway = _clocked(store, settings, clock)  # every record below is stamped with it
    merchant = Merchant(gateway)
    receiver.secret = merchant.webhook(receiver.url)
    gateway.open_queue("key-a", OWNER)
    merchant.invoices_paid_in_parts(2, parts=2)  # four events, four deliveries
    challenge = gateway.pow.issue(OWNER)
    _deliver_all(merchant, receiver)

    assert gateway.retention.prune() == PruneReport()  # nothing is old yet
    clock.now += DAY + 61  # events old, challenge expired past its grace; deliveries not yet
    assert gateway.retention.prune() == PruneReport(challenges=1)  # key-a has not drained
    assert len(gateway.drain_events("key-a")) == 4
    assert gateway.retention.prune() == PruneReport(events=4)  # drained by every queue

    clock.now = 1_800_000_000 + 2 * DAY + 61  # the deliveries' last attempts are old now
    assert gateway.retention.prune() == PruneReport(deliveries=4)
    items, total, _offset, _limit = gateway.webhooks.deliveries(OWNER)
    assert (items, total) == ([], 0)
    # Expired but kept, it would say "expired": it is gone.
    with pytest.raises(InvalidInput, match="unknown or already used"):
        gateway.pow.verify(challenge=challenge.challenge, nonce=0, address=OWNER)


def test_ages_of_zero_keep_events_and_deliveries(store: Storage) -> None:
    clock = Clock(1_800_000_000)
    gateway = _clocked(store, fast_settings(retention_events=0, retention_deliveries=0), clock)
    Merchant(gateway).invoices_paid_in_parts(2, parts=2)
    clock.now += 365 * DAY
    assert gateway.retention.prune() == PruneReport()


def _pruned_events(caplog: pytest.LogCaptureFixture) -> int:
    found = (re.match(r"pruned (\d+) events", r.getMessage()) for r in caplog.records)
    return sum(int(m.group(1)) for m in found if m)


def test_the_worker_prunes_on_its_schedule_and_stops(
    store: Storage, caplog: pytest.LogCaptureFixture
) -> None:
    gateway = gateway_on(store, fast_settings(retention_events=1, worker_prune_interval=0.1))
    Merchant(gateway).invoices_paid_in_parts(2, parts=2)  # no queue: nobody needs them
    stop = threading.Event()
    worker = threading.Thread(
        target=run_worker,
        args=(gateway,),
        kwargs={
            "stop_event": stop,
            "dispatch": False,
            "sweep": False,
            "watch": False,
            "prices": False,
        },
    )
    with caplog.at_level(logging.INFO, logger="paycore.worker"):
        worker.start()
        try:
            # Events are stamped in whole seconds, so they come of age over one or two
            # rounds; all of them go.
            wait_until(lambda: _pruned_events(caplog) == 4, timeout=10, what="prune rounds")
        finally:
            stop.set()
            worker.join(timeout=10)
    assert not worker.is_alive()


def test_paycore_prune_runs_one_round(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'paycore.sqlite3'}"
    seeded = SqlStorage(url)
    with seeded.transaction() as tx:
        for n in range(3):  # created in 2001: old by any retention
            tx.add_event(OWNER, f"g{n}", {"n": n}, 1_000_000_000)
        tx.put_challenge(PowChallenge("c0ffee", OWNER, 8, 1_000_000_120))
    seeded.close()
    assert main(["prune", "--database-url", url]) == 0
    assert capsys.readouterr().out == (
        "pruned 3 events, 0 webhook deliveries, 0 signatures, 1 challenges, 0 idempotency keys\n"
    )
    assert main(["prune", "--database-url", url]) == 0
    assert capsys.readouterr().out.startswith("pruned 0 events,")
