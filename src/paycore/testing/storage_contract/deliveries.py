"""The delivery-queue part of ``paycore.storage`` on memory, SQLite and PostgreSQL alike:
enqueue only with a URL, leases that exclude and lapse, per-invoice order, settling only
under one's own lease, the log and redelivery."""

from __future__ import annotations

import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

from paycore.domain.records import WebhookConfig
from paycore.storage import Storage
from paycore.webhooks.records import DeliveryAttempt, DeliveryStatus, Settlement

OWNER = "0x1111111111111111111111111111111111111111"
OTHER = "0x2222222222222222222222222222222222222222"
LEASE = 1000


def _with_webhook(storage: Storage, owner: str = OWNER) -> None:
    with storage.transaction() as tx:
        tx.put_webhook(WebhookConfig(owner, "https://merchant.example.test/h", "whsec_AAAA"))


def _enqueue(storage: Storage, guid: str, n: int, owner: str = OWNER, now: int = 0) -> int | None:
    with storage.transaction() as tx:
        return tx.enqueue_delivery(n, owner, guid, f"msg_{owner[-4:]}_{n}", f'{{"n":{n}}}', now)


def _claim(storage: Storage, now: int, token: str = "t", limit: int = 100) -> list[int]:
    with storage.transaction() as tx:
        return [c.id for c in tx.claim_deliveries(now, LEASE, token, limit)]


def _finish(storage: Storage, delivery_id: int, token: str, settlement: Settlement) -> bool:
    ok = settlement.status is DeliveryStatus.DELIVERED
    attempt = DeliveryAttempt(delivery_id, 5, "u", 200 if ok else 500, None, 7)
    with storage.transaction() as tx:
        return tx.finish_delivery(delivery_id, token, attempt, settlement)


DELIVERED = Settlement(DeliveryStatus.DELIVERED)


def test_nothing_is_queued_for_an_owner_without_a_url(storage: Storage) -> None:
    assert _enqueue(storage, "g1", 1) is None
    with storage.transaction() as tx:
        tx.put_webhook(WebhookConfig(OWNER, "", ""))
    assert _enqueue(storage, "g1", 2) is None
    _with_webhook(storage)
    first = _enqueue(storage, "g1", 3)
    second = _enqueue(storage, "g2", 4)
    assert first is not None and second is not None and second > first
    with storage.transaction() as tx:
        items, total = tx.list_deliveries(OWNER)
    assert total == 2 and [d.event_id for d in items] == [4, 3]  # newest first


def test_a_rolled_back_change_leaves_no_delivery(storage: Storage) -> None:
    _with_webhook(storage)

    class Boom(Exception):
        pass

    try:
        with storage.transaction() as tx:
            tx.enqueue_delivery(1, OWNER, "g1", "msg_x", "{}", 0)
            raise Boom
    except Boom:
        pass
    with storage.transaction() as tx:
        assert tx.list_deliveries(OWNER) == ([], 0)


def test_a_claim_carries_body_target_and_a_counted_attempt(storage: Storage) -> None:
    _with_webhook(storage)
    _enqueue(storage, "g1", 1, now=10)
    with storage.transaction() as tx:
        [claimed] = tx.claim_deliveries(20, LEASE, "tok", 10)
    assert (claimed.webhook_id, claimed.body, claimed.attempts) == ("msg_1111_1", '{"n":1}', 1)
    assert (claimed.url, claimed.secret) == ("https://merchant.example.test/h", "whsec_AAAA")
    assert (claimed.lease_token, claimed.lease_until, claimed.retry_from) == ("tok", 1020, 10)


def test_a_lease_excludes_other_claims_until_it_lapses(storage: Storage) -> None:
    _with_webhook(storage)
    [delivery] = [_enqueue(storage, "g1", 1)]
    assert _claim(storage, 0, "a") == [delivery]
    assert _claim(storage, LEASE - 1, "b") == []
    # The claimant died: its lease lapses and the delivery goes out again.
    assert _claim(storage, LEASE, "c") == [delivery]
    with storage.transaction() as tx:
        [item], _ = tx.list_deliveries(OWNER)
    assert item.attempts == 2 and item.status is DeliveryStatus.PENDING


def test_not_due_yet_is_not_claimed(storage: Storage) -> None:
    _with_webhook(storage)
    _enqueue(storage, "g1", 1, now=500)
    assert _claim(storage, 499) == []
    assert len(_claim(storage, 500)) == 1


def test_a_later_event_of_an_invoice_waits_for_the_earlier_one(storage: Storage) -> None:
    _with_webhook(storage)
    a1, a2, b1 = _enqueue(storage, "ga", 1), _enqueue(storage, "ga", 2), _enqueue(storage, "gb", 3)
    assert a1 is not None and a2 is not None and b1 is not None
    assert _claim(storage, 0, "t1") == [a1, b1]
    assert _finish(storage, b1, "t1", DELIVERED)
    # a1 fails and waits for its retry: a2 must not overtake it, however long it takes.
    assert _finish(storage, a1, "t1", Settlement(DeliveryStatus.PENDING, 5000))
    assert _claim(storage, 4999, "t2") == []
    assert _claim(storage, 5000, "t3") == [a1]
    assert _finish(storage, a1, "t3", DELIVERED)
    assert _claim(storage, 5001, "t4") == [a2]


def test_a_failed_delivery_no_longer_holds_back_its_invoice(storage: Storage) -> None:
    _with_webhook(storage)
    a1, a2 = _enqueue(storage, "ga", 1), _enqueue(storage, "ga", 2)
    assert a1 is not None
    assert _claim(storage, 0) == [a1]
    assert _finish(storage, a1, "t", Settlement(DeliveryStatus.FAILED))
    assert _claim(storage, 1) == [a2]


def test_only_the_current_lease_settles(storage: Storage) -> None:
    _with_webhook(storage)
    delivery = _enqueue(storage, "g1", 1)
    assert delivery is not None
    _claim(storage, 0, "old")
    _claim(storage, LEASE, "new")  # the old claimant's lease lapsed
    assert not _finish(storage, delivery, "old", DELIVERED)
    with storage.transaction() as tx:
        [item], _ = tx.list_deliveries(OWNER)
    assert item.status is DeliveryStatus.PENDING and len(item.log) == 1  # logged, not settled
    assert _finish(storage, delivery, "new", DELIVERED)
    with storage.transaction() as tx:
        [item], _ = tx.list_deliveries(OWNER, status=DeliveryStatus.DELIVERED)
    assert item.next_attempt_at is None and len(item.log) == 2


def test_log_lists_attempts_oldest_first_per_owner(storage: Storage) -> None:
    _with_webhook(storage)
    _with_webhook(storage, OTHER)
    mine = _enqueue(storage, "g1", 1)
    _enqueue(storage, "g2", 2, owner=OTHER)
    assert mine is not None
    for now, token, code in ((0, "a", 500), (10_000, "b", 503)):
        _claim(storage, now, token)
        attempt = DeliveryAttempt(mine, now + 5, "u", code, None, 7)
        with storage.transaction() as tx:
            assert tx.finish_delivery(
                mine, token, attempt, Settlement(DeliveryStatus.PENDING, now + 1)
            )
    with storage.transaction() as tx:
        [item], total = tx.list_deliveries(OWNER)
        others, _ = tx.list_deliveries(OTHER)
        failed, none = tx.list_deliveries(OWNER, status=DeliveryStatus.FAILED)
    assert total == 1 and [a.status_code for a in item.log] == [500, 503]
    assert [a.attempted_at for a in item.log] == [5, 10_005]  # oldest attempt first
    assert item.log[0].to_wire() == {
        "attemptedAt": 5,
        "url": "u",
        "statusCode": 500,
        "error": None,
        "latencyMs": 7,
    }
    assert [d.guid for d in others] == ["g2"] and (failed, none) == ([], 0)


def test_list_pages(storage: Storage) -> None:
    _with_webhook(storage)
    for n in range(1, 6):
        _enqueue(storage, f"g{n}", n)
    with storage.transaction() as tx:
        page, total = tx.list_deliveries(OWNER, offset=1, limit=2)
    assert total == 5 and [d.event_id for d in page] == [4, 3]


def test_redeliver_requeues_with_the_same_webhook_id(storage: Storage) -> None:
    _with_webhook(storage)
    delivery = _enqueue(storage, "g1", 1)
    assert delivery is not None
    _claim(storage, 0)
    _finish(storage, delivery, "t", DELIVERED)
    with storage.transaction() as tx:
        assert tx.redeliver(delivery, OTHER, 50) is None  # not that owner's
        again = tx.redeliver(delivery, OWNER, 50)
    assert again is not None
    assert (again.status, again.attempts, again.next_attempt_at) == (DeliveryStatus.PENDING, 0, 50)
    with storage.transaction() as tx:
        [claimed] = tx.claim_deliveries(50, LEASE, "t2", 10)
    assert (claimed.webhook_id, claimed.attempts, claimed.retry_from) == ("msg_1111_1", 1, 50)


def test_a_cleared_webhook_claims_with_an_empty_target(storage: Storage) -> None:
    _with_webhook(storage)
    _enqueue(storage, "g1", 1)
    with storage.transaction() as tx:
        tx.delete_webhook(OWNER)
    with storage.transaction() as tx:
        [claimed] = tx.claim_deliveries(0, LEASE, "t", 10)
    assert (claimed.url, claimed.secret) == ("", "")


def test_concurrent_claims_never_share_a_delivery(storage: Storage) -> None:
    """Sixteen claimants released together over 60 deliveries of 60 invoices: every
    delivery is claimed once, none twice."""
    _with_webhook(storage)
    for n in range(60):
        _enqueue(storage, f"g{n}", n)
    barrier = threading.Barrier(16)

    def claim(i: int) -> list[int]:
        barrier.wait(timeout=30)
        got: list[int] = []
        for _ in range(10):
            got += _claim(storage, 0, f"w{i}", limit=2)
        return got

    with ThreadPoolExecutor(16) as pool:
        claims = [d for got in pool.map(claim, range(16)) for d in got]
    counts = Counter(claims)
    assert len(counts) == 60 and max(counts.values()) == 1


FAILED = Settlement(DeliveryStatus.FAILED)


def _fail(storage: Storage, delivery_id: int, now: int) -> None:
    token = f"fail{delivery_id}"
    with storage.transaction() as tx:
        claimed = [c.id for c in tx.claim_deliveries(now, LEASE, token, 100)]
    assert delivery_id in claimed
    _finish(storage, delivery_id, token, FAILED)


def test_the_log_filters_by_invoice_and_by_state_together(storage: Storage) -> None:
    _with_webhook(storage)
    _with_webhook(storage, OTHER)
    first = _enqueue(storage, "g1", 1)
    second = _enqueue(storage, "g2", 2)
    third = _enqueue(storage, "g1", 3)
    _enqueue(storage, "g1", 4, owner=OTHER)  # the same guid text, another owner's
    assert first is not None and second is not None and third is not None
    _fail(storage, first, 0)
    with storage.transaction() as tx:
        mine, total = tx.list_deliveries(OWNER, guid="g1")
        failed, failed_total = tx.list_deliveries(OWNER, guid="g1", status=DeliveryStatus.FAILED)
        pending, _ = tx.list_deliveries(OWNER, guid="g1", status=DeliveryStatus.PENDING)
        page, _ = tx.list_deliveries(OWNER, guid="g1", offset=1, limit=1)
        none = tx.list_deliveries(OWNER, guid="g9")
    assert total == 2 and [d.id for d in mine] == [third, first]  # newest first
    assert failed_total == 1 and failed[0].id == first and len(failed[0].log) == 1
    assert [d.id for d in pending] == [third]
    assert [d.id for d in page] == [first]
    assert none == ([], 0)


def test_redeliver_failed_takes_every_failed_one_since_a_time_and_nothing_else(
    storage: Storage,
) -> None:
    """Failed deliveries created at or after ``since`` become pending, due now, attempts
    reset, webhook ids kept; older failed ones, pending and delivered ones, and another
    owner's, are left as they are."""
    _with_webhook(storage)
    _with_webhook(storage, OTHER)
    old = _enqueue(storage, "g1", 1, now=100)
    edge = _enqueue(storage, "g2", 2, now=200)
    late = _enqueue(storage, "g3", 3, now=300)
    done = _enqueue(storage, "g4", 4, now=300)
    waiting = _enqueue(storage, "g5", 5, now=300)
    theirs = _enqueue(storage, "g6", 6, owner=OTHER, now=300)
    assert None not in (old, edge, late, done, waiting, theirs)
    with storage.transaction() as tx:
        claimed = {c.id for c in tx.claim_deliveries(1000, LEASE, "t", 100)}
    assert claimed == {old, edge, late, done, waiting, theirs}
    for delivery in (old, edge, late, theirs):
        assert delivery is not None
        _finish(storage, delivery, "t", FAILED)
    assert done is not None and waiting is not None
    _finish(storage, done, "t", DELIVERED)
    _finish(storage, waiting, "t", Settlement(DeliveryStatus.PENDING, 9000))
    with storage.transaction() as tx:
        before = {d.id: d for d in tx.list_deliveries(OWNER, limit=50)[0]}
        assert tx.redeliver_failed(OWNER, 200, 5000) == 2
    with storage.transaction() as tx:
        after = {d.id: d for d in tx.list_deliveries(OWNER, limit=50)[0]}
        [their] = tx.list_deliveries(OTHER)[0]
    for delivery_id in (edge, late):
        assert delivery_id is not None
        item = after[delivery_id]
        assert (item.status, item.attempts, item.next_attempt_at, item.retry_from) == (
            DeliveryStatus.PENDING,
            0,
            5000,
            5000,
        )
        assert item.webhook_id == before[delivery_id].webhook_id
        assert item.log == before[delivery_id].log  # the attempts stay in the log
    assert old is not None and after[old].status is DeliveryStatus.FAILED
    assert after[done].status is DeliveryStatus.DELIVERED
    assert after[waiting].status is DeliveryStatus.PENDING
    assert after[waiting].next_attempt_at == 9000
    assert their.status is DeliveryStatus.FAILED
    with storage.transaction() as tx:
        assert tx.redeliver_failed(OWNER, 0, 6000) == 1  # only ``old`` is still failed
        assert tx.redeliver_failed(OWNER, 0, 7000) == 0


def test_redeliver_failed_rolls_back_with_its_transaction(storage: Storage) -> None:
    _with_webhook(storage)
    delivery = _enqueue(storage, "g1", 1)
    assert delivery is not None
    _fail(storage, delivery, 0)

    class Boom(Exception):
        pass

    try:
        with storage.transaction() as tx:
            assert tx.redeliver_failed(OWNER, 0, 10) == 1
            raise Boom
    except Boom:
        pass
    with storage.transaction() as tx:
        [item], _ = tx.list_deliveries(OWNER)
    assert item.status is DeliveryStatus.FAILED
