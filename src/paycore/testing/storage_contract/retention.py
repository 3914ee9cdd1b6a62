"""The retention part of ``paycore.storage`` on memory, SQLite and PostgreSQL alike: what the
``prune_*`` methods delete, what they must keep (an event a queue can still hand out, a
pending or recently tried delivery, a live signature or challenge), and how the batches stop
and resume."""

from __future__ import annotations

from paycore.domain.records import PowChallenge, WebhookConfig
from paycore.storage import PruneBatch, Storage
from paycore.testing.storage_records import OTHER_OWNER, OWNER
from paycore.webhooks.records import DeliveryAttempt, DeliveryStatus, Settlement

CAP = 1000  # a queue cap larger than any test's event count
OLD, YOUNG = 100, 10_000  # created_at of events below / above the cut-off of 5,000
CUTOFF = 5_000


def _events(storage: Storage, owner: str, created: list[int]) -> list[int]:
    with storage.transaction() as tx:
        return [
            tx.add_event(owner, f"g-{owner[-1]}-{i}", {"n": i}, at) for i, at in enumerate(created)
        ]


def _prune_all(storage: Storage, created_before: int, cap: int, limit: int = 100) -> int:
    deleted, after = 0, 0
    while True:
        with storage.transaction() as tx:
            batch = tx.prune_events(created_before, cap, after, limit)
        deleted += batch.deleted
        if batch.resume_after is None:
            return deleted
        after = batch.resume_after


def _drain(storage: Storage, consumer: str) -> list[int]:
    with storage.transaction() as tx:
        return [e.id for e in tx.drain_queue(consumer, CAP)]


# -- events ------------------------------------------------------------------------------------


def test_old_events_no_queue_waits_for_go_even_the_newest(storage: Storage) -> None:
    ids = _events(storage, OWNER, [OLD] * 4)
    assert _prune_all(storage, CUTOFF, CAP) == 4  # the newest event of all too
    assert _prune_all(storage, CUTOFF, CAP) == 0  # and a second round finds nothing
    # Ids are never handed out again: the next event comes after the pruned ones, and a
    # queue opened now hands out that event, and only that one.
    with storage.transaction() as tx:
        tx.open_queue("key-a", OWNER)
    [later] = _events(storage, OWNER, [YOUNG])
    assert later > ids[-1]
    assert _drain(storage, "key-a") == [later]


def test_an_event_a_queue_has_not_drained_is_kept(storage: Storage) -> None:
    with storage.transaction() as tx:
        tx.open_queue("key-a", OWNER)
    mine = _events(storage, OWNER, [OLD] * 3)
    _events(storage, OTHER_OWNER, [OLD] * 2)  # nobody's queue: they go
    assert _prune_all(storage, CUTOFF, CAP) == 2
    assert _drain(storage, "key-a") == mine  # every undrained event was still there
    # Drained now: the owner's events are no longer needed.
    assert _prune_all(storage, CUTOFF, CAP) == 3


def test_events_past_the_queue_cap_go_even_undrained(storage: Storage) -> None:
    """A drain hands out the newest ``cap`` events at most, so older ones are dead weight."""
    with storage.transaction() as tx:
        tx.open_queue("key-a", OWNER)
    mine = _events(storage, OWNER, [OLD] * 5)
    assert _prune_all(storage, CUTOFF, cap=2) == 3
    assert _drain(storage, "key-a") == mine[-2:]


def test_the_slowest_queue_of_an_owner_decides(storage: Storage) -> None:
    with storage.transaction() as tx:
        tx.open_queue("fast", OWNER)
        tx.open_queue("slow", OWNER)
    first = _events(storage, OWNER, [OLD] * 2)
    assert _drain(storage, "fast") == first
    second = _events(storage, OWNER, [OLD] * 2)
    assert _prune_all(storage, CUTOFF, CAP) == 0  # "slow" has drained none of them
    assert _drain(storage, "slow") == first + second
    assert _drain(storage, "fast") == second
    assert _prune_all(storage, CUTOFF, CAP) == 4


def test_young_events_stay_and_end_the_round(storage: Storage) -> None:
    old = _events(storage, OWNER, [OLD, OLD])
    _events(storage, OWNER, [YOUNG])
    _events(storage, OWNER, [OLD])  # created after the young one (clocks differ): next round
    _events(storage, OTHER_OWNER, [YOUNG])
    with storage.transaction() as tx:
        batch = tx.prune_events(CUTOFF, CAP, 0, 100)
    assert batch == PruneBatch(deleted=len(old), resume_after=None)


def test_event_batches_resume_after_the_last_id_seen(storage: Storage) -> None:
    ids = _events(storage, OWNER, [OLD] * 7)
    with storage.transaction() as tx:
        first = tx.prune_events(CUTOFF, CAP, 0, 3)
    assert first == PruneBatch(deleted=3, resume_after=ids[2])
    with storage.transaction() as tx:
        second = tx.prune_events(CUTOFF, CAP, ids[2], 3)
    assert second == PruneBatch(deleted=3, resume_after=ids[5])
    with storage.transaction() as tx:
        last = tx.prune_events(CUTOFF, CAP, ids[5], 3)
    assert last == PruneBatch(deleted=1, resume_after=None)  # the newest as well


# -- webhook deliveries ------------------------------------------------------------------------

MS = 1000
SETTLED_BEFORE = 50 * MS


def _delivery(
    storage: Storage,
    n: int,
    *,
    created: int,
    settle: DeliveryStatus | None,
    attempted: int | None = None,
) -> int:
    with storage.transaction() as tx:
        tx.put_webhook(WebhookConfig(OWNER, "https://merchant.example.test/h", "whsec_AAAA"))
        delivery_id = tx.enqueue_delivery(n, OWNER, f"g{n}", f"msg_{n}", f'{{"n":{n}}}', created)
    assert delivery_id is not None
    if settle is None:
        return delivery_id
    at = created if attempted is None else attempted
    with storage.transaction() as tx:
        [claimed] = [
            c for c in tx.claim_deliveries(at, 10 * MS, f"t{n}", 100) if c.id == delivery_id
        ]
        attempt = DeliveryAttempt(claimed.id, at, "https://merchant.example.test/h", 200, None, 3)
        assert tx.finish_delivery(claimed.id, f"t{n}", attempt, Settlement(settle))
    return delivery_id


def _deliveries(storage: Storage) -> dict[int, tuple[DeliveryStatus, int]]:
    with storage.transaction() as tx:
        items, _total = tx.list_deliveries(OWNER, limit=100)
    return {d.id: (d.status, len(d.log)) for d in items}


def test_settled_deliveries_go_with_their_log_pending_ones_stay(storage: Storage) -> None:
    delivered = _delivery(storage, 1, created=1 * MS, settle=DeliveryStatus.DELIVERED)
    failed = _delivery(storage, 2, created=2 * MS, settle=DeliveryStatus.FAILED)
    pending = _delivery(storage, 3, created=3 * MS, settle=None)
    # Settled long ago by the schedule's start, but tried again recently: kept.
    late = _delivery(
        storage, 4, created=4 * MS, settle=DeliveryStatus.FAILED, attempted=SETTLED_BEFORE + 1
    )
    young = _delivery(storage, 5, created=SETTLED_BEFORE, settle=DeliveryStatus.DELIVERED)
    with storage.transaction() as tx:
        batch = tx.prune_deliveries(SETTLED_BEFORE, 0, 100)
    assert batch == PruneBatch(deleted=2, resume_after=None)
    left = _deliveries(storage)
    assert delivered not in left and failed not in left
    assert left == {
        pending: (DeliveryStatus.PENDING, 0),
        late: (DeliveryStatus.FAILED, 1),
        young: (DeliveryStatus.DELIVERED, 1),
    }


def test_a_redelivered_delivery_is_kept(storage: Storage) -> None:
    failed = _delivery(storage, 1, created=1 * MS, settle=DeliveryStatus.FAILED)
    with storage.transaction() as tx:
        assert tx.redeliver(failed, OWNER, SETTLED_BEFORE + 5) is not None
    with storage.transaction() as tx:
        assert tx.prune_deliveries(SETTLED_BEFORE, 0, 100).deleted == 0
    assert _deliveries(storage) == {failed: (DeliveryStatus.PENDING, 1)}


def test_delivery_batches_resume_after_the_last_id_seen(storage: Storage) -> None:
    ids = [
        _delivery(storage, n, created=n * MS, settle=DeliveryStatus.DELIVERED) for n in (1, 2, 3)
    ]
    with storage.transaction() as tx:
        first = tx.prune_deliveries(SETTLED_BEFORE, 0, 2)
    assert first == PruneBatch(deleted=2, resume_after=ids[1])
    with storage.transaction() as tx:
        assert tx.prune_deliveries(SETTLED_BEFORE, ids[1], 2) == PruneBatch(1, None)
    assert _deliveries(storage) == {}


# -- signatures and challenges -----------------------------------------------------------------


def test_only_expired_signatures_are_forgotten(storage: Storage) -> None:
    with storage.transaction() as tx:
        for n, expires in enumerate((100, 110, 120, 500)):
            assert tx.remember_signature(f"d{n}", expires, now=50)
    with storage.transaction() as tx:
        assert tx.prune_signatures(200, limit=2) == 2
    with storage.transaction() as tx:
        assert tx.prune_signatures(200, limit=2) == 1
        assert tx.prune_signatures(200, limit=2) == 0
    with storage.transaction() as tx:
        # The live one still refuses its replay; a forgotten one is new again.
        assert tx.remember_signature("d3", 600, now=200) is False
        assert tx.remember_signature("d0", 600, now=200) is True


def test_only_expired_challenges_are_deleted(storage: Storage) -> None:
    live = PowChallenge("live", OWNER, 8, 500)
    with storage.transaction() as tx:
        tx.put_challenge(PowChallenge("old-1", OWNER, 8, 100))
        tx.put_challenge(PowChallenge("old-2", OWNER, 8, 199))
        tx.put_challenge(PowChallenge("edge", OWNER, 8, 200))
        tx.put_challenge(live)
    with storage.transaction() as tx:
        assert tx.prune_challenges(200, limit=10) == 2
    with storage.transaction() as tx:
        assert tx.take_challenge("old-1") is None
        assert tx.take_challenge("old-2") is None
        assert tx.take_challenge("edge") is not None
        assert tx.take_challenge("live") == live
