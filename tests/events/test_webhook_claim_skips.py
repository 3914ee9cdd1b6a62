"""``claim_deliveries`` with ``skip_owners`` / ``skip_urls`` on memory, SQLite and PostgreSQL:
the deliveries of a capped owner or URL are passed over, not returned and not leased, and the
ones after them in the queue are claimed instead -- so an owner whose receiver is slow (its
dispatcher cap reached) holds back no one else's events."""

from __future__ import annotations

from paycore.domain.records import WebhookConfig
from paycore.storage import Storage

SLOW = "0x1111111111111111111111111111111111111111"
FAST = "0x2222222222222222222222222222222222222222"
SHARED = "0x3333333333333333333333333333333333333333"
LEASE = 1000
SLOW_URL = "https://slow.example.test/h"


def _setup(store: Storage) -> dict[str, list[int]]:
    """Ten due deliveries of SLOW first (the oldest), then two each of FAST and of SHARED,
    whose webhook points at SLOW's URL too; one invoice each, so none waits on another."""
    urls = {SLOW: SLOW_URL, FAST: "https://fast.example.test/h", SHARED: SLOW_URL}
    ids: dict[str, list[int]] = {owner: [] for owner in urls}
    with store.transaction() as tx:
        for owner, url in urls.items():
            tx.put_webhook(WebhookConfig(owner, url, "whsec_AAAA"))
        plan = [(SLOW, n) for n in range(10)] + [(o, n) for o in (FAST, SHARED) for n in (0, 1)]
        for at, (owner, n) in enumerate(plan):
            delivery = tx.enqueue_delivery(at, owner, f"{owner[-4:]}-{n}", f"msg_{at}", "{}", at)
            assert delivery is not None
            ids[owner].append(delivery)
    return ids


def test_a_skipped_owner_holds_back_no_one(store: Storage) -> None:
    ids = _setup(store)
    with store.transaction() as tx:
        claimed = tx.claim_deliveries(100, LEASE, "t1", 3, skip_owners={SLOW})
    assert [c.id for c in claimed] == [*ids[FAST], ids[SHARED][0]]  # oldest due first
    assert all(c.lease_token == "t1" and c.attempts == 1 for c in claimed)
    with store.transaction() as tx:  # SLOW's were not leased: an unfiltered claim gets them
        again = tx.claim_deliveries(100, LEASE, "t2", 100)
    assert [c.id for c in again] == [*ids[SLOW], ids[SHARED][1]]
    assert {c.attempts for c in again} == {1}


def test_a_skipped_url_passes_over_every_owner_that_points_at_it(store: Storage) -> None:
    ids = _setup(store)
    with store.transaction() as tx:
        claimed = tx.claim_deliveries(100, LEASE, "t1", 100, skip_urls={SLOW_URL})
    assert [(c.id, c.url) for c in claimed] == [
        (i, "https://fast.example.test/h") for i in ids[FAST]
    ]
    with store.transaction() as tx:
        both = tx.claim_deliveries(100, LEASE, "t2", 100, skip_owners={SHARED}, skip_urls={"x"})
    assert [c.id for c in both] == ids[SLOW]


def test_skipping_nothing_is_the_plain_claim(store: Storage) -> None:
    ids = _setup(store)
    with store.transaction() as tx:
        claimed = tx.claim_deliveries(100, LEASE, "t", 4, skip_owners=(), skip_urls=())
    assert [c.id for c in claimed] == ids[SLOW][:4]
