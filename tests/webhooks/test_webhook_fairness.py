"""Fair webhook delivery: a merchant whose receiver answers ``200 OK`` and then drips a byte
a second holds at most its owner's (and its URL's) share of the delivery slots, each for at
most ``webhook_timeout`` in all, while another merchant's events arrive promptly -- through
``paycore worker`` processes and the dispatcher as the worker runs it, on SQLite and
PostgreSQL (and memory for the claim itself). Redelivery goes through the same caps.

Everything stays on 127.0.0.1; the dripper drips at most 30 bytes and every wait is bounded.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from events_helpers import (
    FAST_ENV,
    OTHER_OWNER,
    Dripper,
    Merchant,
    Receiver,
    fast_settings,
    gateway_on,
    wait_until,
)
from sqlalchemy.engine import URL

from paycore.domain.records import WebhookConfig
from paycore.gateway import Gateway
from paycore.runtime.worker import run_worker
from paycore.storage import Storage
from paycore.webhooks import fairness
from paycore.webhooks.fairness import InFlight, claim_fairly
from paycore.webhooks.records import (
    ClaimedDelivery,
    DeliveryAttempt,
    DeliveryStatus,
    Settlement,
)
from paycore_storage import SqlStorage

#: The pool has 4 slots (FAST); one owner, and one URL, may hold 2 of them.
CAPS = {"webhook_owner_concurrency": 2, "webhook_url_concurrency": 2}
CAPS_ENV = {"PAYCORE_" + name.upper(): str(value) for name, value in CAPS.items()}
#: How late another merchant's event may arrive while the dripper is busy. Quiet, it takes
#: one poll (0.05 s) and a POST; without the caps it waits at least a whole deadline (2 s),
#: and without the deadline, for as long as the dripper likes.
PROMPT = 1.5


@pytest.fixture
def dripper() -> Iterator[Dripper]:
    found = Dripper(every=1.0, most=30)
    yield found
    found.close()


def _pay_and_time(merchant: Merchant, receiver: Receiver, count: int, gap: float) -> list[float]:
    """Pay ``count`` fresh invoices of ``merchant`` once each, ``gap`` s apart, and return
    each event's seconds from its commit to its arrival at ``receiver``."""
    invoices = [merchant.invoice() for _ in range(count)]
    committed: dict[str, float] = {}
    for n, (guid, address) in enumerate(invoices):
        merchant.pay(address, "100", merchant.count * 1000 + n)
        committed[guid] = time.time()  # record_deposit has committed
        time.sleep(gap)
    wait_until(
        lambda: {r.guid for r in receiver.accepted()} >= set(committed),
        timeout=30,
        what="the honest merchant's events",
    )
    arrived = {r.guid: r.at for r in receiver.accepted()}
    return [arrived[guid] - at for guid, at in committed.items()]


def _hostile_attempts(gateway: Gateway, owner: str) -> list[tuple[str | None, int]]:
    with gateway.storage.transaction() as tx:
        items, _total = tx.list_deliveries(owner, limit=50)
    return [(a.error, a.latency_ms) for d in items for a in d.log]


def test_a_dripping_receiver_delays_only_its_own_merchant_in_paycore_worker(
    sql_url: URL, receiver: Receiver, dripper: Dripper, tmp_path: Path
) -> None:
    """Six of the hostile merchant's events are due before the worker starts -- more than
    the pool's four slots, enough to take them all on a first-come claim. The worker holds
    two POSTs to the dripper at a time, ends each at 2 s, and the honest merchant's events,
    committed meanwhile, each arrive within ``PROMPT``."""
    gateway = gateway_on(SqlStorage(sql_url))
    hostile, honest = Merchant(gateway, OTHER_OWNER), Merchant(gateway)
    hostile.webhook(dripper.url)
    receiver.secret = honest.webhook(receiver.url)
    hostile.invoices_paid_in_parts(6, parts=1)
    env = {**os.environ, **FAST_ENV, **CAPS_ENV}
    env.pop("PAYCORE_DATABASE_URL", None)
    log_path = tmp_path / "worker.log"
    command = [sys.executable, "-m", "paycore.runtime.worker", "--database-url"]
    command += [sql_url.render_as_string(hide_password=False), "--no-sweep"]
    with open(log_path, "wb") as log:
        worker = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: dripper.connections() >= 2, timeout=30, what="the dripper's POSTs")
        latencies = _pay_and_time(honest, receiver, count=6, gap=0.5)
        wait_until(lambda: len(dripper.durations()) >= 2, timeout=10, what="a deadline")
    finally:
        worker.terminate()
        worker.wait(timeout=30)
    output = log_path.read_text(errors="replace")
    assert max(latencies) < PROMPT, (latencies, output[-2000:])
    assert [r.verified for r in receiver.accepted()] == [True] * 6
    assert dripper.held_at_once() == 2, dripper.spans  # its share, and no more
    assert all(1.9 <= d < 3.0 for d in dripper.durations()), dripper.durations()
    attempts = _hostile_attempts(gateway, OTHER_OWNER)
    assert attempts and all(error == "no answer within 2 s" for error, _ms in attempts)
    assert all(1900 <= ms < 3000 for _error, ms in attempts), attempts
    gateway.close()


def _fail_all(store: Storage, owner: str) -> int:
    """Settle every due delivery of ``owner`` as failed, as a long outage would have."""
    with store.transaction() as tx:
        claimed = tx.claim_deliveries(2**52, 1000, "setup", 100)
        assert {c.owner for c in claimed} == {owner}
        for c in claimed:
            attempt = DeliveryAttempt(c.id, 0, c.url, None, "down", 1)
            tx.finish_delivery(c.id, "setup", attempt, Settlement(DeliveryStatus.FAILED))
    return len(claimed)


def test_redelivery_goes_through_the_same_caps(
    store: Storage, receiver: Receiver, dripper: Dripper
) -> None:
    """Six failed deliveries of the hostile merchant, redelivered at once, while the
    dispatcher runs as the worker runs it: the dripper still holds two slots at most, and
    the honest merchant's events arrive promptly."""
    gateway = gateway_on(store, fast_settings(**CAPS))
    hostile, honest = Merchant(gateway, OTHER_OWNER), Merchant(gateway)
    hostile.webhook(dripper.url)
    receiver.secret = honest.webhook(receiver.url)
    hostile.invoices_paid_in_parts(6, parts=1)
    assert _fail_all(store, OTHER_OWNER) == 6
    stop = threading.Event()
    loops = {"sweep": False, "watch": False, "prices": False, "prune": False, "signals": False}
    thread = threading.Thread(
        target=run_worker, args=(gateway,), kwargs={"stop_event": stop, **loops}
    )
    thread.start()
    try:
        assert gateway.webhooks.redeliver_failed(OTHER_OWNER, 0) == 6
        wait_until(lambda: dripper.connections() >= 2, timeout=10, what="the redeliveries")
        latencies = _pay_and_time(honest, receiver, count=4, gap=0.3)
    finally:
        stop.set()
        thread.join(timeout=30)
    assert not thread.is_alive()
    assert max(latencies) < PROMPT, latencies
    assert dripper.held_at_once() == 2, dripper.spans


# -- the claim itself, on every backend ---------------------------------------------------------

SLOW, FAST, SHARED = OTHER_OWNER, "0x" + "44" * 20, "0x" + "55" * 20


def _queue(store: Storage) -> dict[str, list[int]]:
    """SLOW's ten deliveries are the oldest; FAST's two and SHARED's two (SHARED's webhook
    is SLOW's URL) come after."""
    urls = {SLOW: "https://slow.example.test/h", FAST: "https://fast.example.test/h"}
    urls[SHARED] = urls[SLOW]
    ids: dict[str, list[int]] = {owner: [] for owner in urls}
    with store.transaction() as tx:
        for owner, url in urls.items():
            tx.put_webhook(WebhookConfig(owner, url, "whsec_AAAA"))
        plan = [(SLOW, n) for n in range(10)] + [(o, n) for o in (FAST, SHARED) for n in (0, 1)]
        for at, (owner, n) in enumerate(plan):
            found = tx.enqueue_delivery(at, owner, f"{owner[-4:]}-{n}", f"msg_{at}", "{}", at)
            assert found is not None
            ids[owner].append(found)
    return ids


def _claim(store: Storage, in_flight: InFlight, limit: int) -> list[ClaimedDelivery]:
    with store.transaction() as tx:
        return claim_fairly(tx, in_flight, 10**6, 60_000, "t", limit)


def test_a_fair_claim_takes_an_owners_share_and_moves_past_it(store: Storage) -> None:
    ids = _queue(store)
    in_flight = InFlight(owner_cap=3, url_cap=4)
    claimed = _claim(store, in_flight, 8)
    # SLOW's first three (its cap), FAST's two, then SHARED's first (SLOW's URL had one
    # slot left): the rest of SLOW's queue, older than them all, held back no one.
    assert [c.id for c in claimed] == [*ids[SLOW][:3], *ids[FAST], ids[SHARED][0]]
    for delivery in claimed:
        in_flight.started(delivery)
    assert _claim(store, in_flight, 8) == []  # every owner left is at a cap
    in_flight.finished(claimed[0])  # one of SLOW's ends: one more of SLOW's may go
    assert [c.id for c in _claim(store, in_flight, 8)] == [ids[SLOW][3]]


def test_a_fair_claim_never_goes_past_a_cap_of_an_owner_already_in_flight(
    store: Storage,
) -> None:
    ids = _queue(store)
    in_flight = InFlight(owner_cap=4, url_cap=100)
    with store.transaction() as tx:  # two of SLOW's are under way already
        for delivery in tx.claim_deliveries(10**6, 60_000, "t0", 2):
            in_flight.started(delivery)
    claimed = _claim(store, in_flight, 20)
    assert [c.id for c in claimed if c.owner == SLOW] == ids[SLOW][2:4]
    assert {c.owner for c in claimed} == {SLOW, FAST, SHARED} and len(claimed) == 6


# -- the redelivery pace ------------------------------------------------------------------------


def test_the_pace_slides_and_forgets_idle_owners_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fairness, "PACE_MEMORY", 4)
    now = [1000.0]
    pace = fairness.RedeliveryPace(limit=2, window=10, clock=lambda: now[0])
    pace.take("a")
    now[0] += 4
    pace.take("a")
    with pytest.raises(fairness.TooManyRedeliveries) as refused:
        pace.take("a")
    assert refused.value.status == 429 and refused.value.headers == {"retry-after": "6"}
    now[0] += 6  # the first call leaves the window
    pace.take("a")
    for owner in ("b", "c", "d"):  # four owners remembered: the memory is full
        pace.take(owner)
    now[0] += 11  # every window has ended: the next owner makes room by forgetting them
    pace.take("e")
    assert set(pace._calls) == {"e"}
    for owner in ("f", "g", "h"):  # all four in their windows now: the oldest half goes
        now[0] += 0.1
        pace.take(owner)
    pace.take("i")
    assert set(pace._calls) == {"g", "h", "i"}
