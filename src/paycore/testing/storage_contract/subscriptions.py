"""The subscriptions part of the ``paycore.storage`` contract (``paycore.storage.subscriptions``):
plans, subscriptions and periods round-trip every field, lists page newest first, and a
period is inserted once however many transactions race for it."""

from __future__ import annotations

from decimal import Decimal

import attrs
import pytest

from paycore.domain.subscriptions import (
    Period,
    PeriodStatus,
    PeriodUnit,
    Plan,
    Subscription,
    SubscriptionStatus,
)
from paycore.storage import Storage
from paycore.testing.storage_contract.concurrency import race
from paycore.testing.storage_records import BIG, OTHER_OWNER, OWNER, USDT

T0 = 1_700_000_000


def plan(n: int, *, owner: str = OWNER, amount: Decimal = BIG) -> Plan:
    return Plan(
        id=f"plan_{n:04d}",
        owner=owner,
        created_at=T0 + n,
        name=f"Gold ü {n}",
        amount=amount,
        currency="usd",
        chain_id=56,
        accepted_tokens=(USDT, "56:0x0000000000000000000000000000000000000000"),
        period_unit=PeriodUnit.MONTH,
        period_count=3,
        trial_days=14,
        grace_days=5,
    )


def subscription(n: int, *, owner: str = OWNER, issue_at: int = T0) -> Subscription:
    return Subscription(
        id=f"sub_{n:04d}",
        owner=owner,
        plan_id="plan_0001",
        reference=f"customer-{n}",
        created_at=T0 + n,
        anchor=T0 + 14 * 86_400,
        status=SubscriptionStatus.TRIALING,
        next_index=0,
        next_issue_at=issue_at,
        email=f"c{n}@shop.example.test",
        updated_at=T0 + n,
    )


def period(sub_id: str, index: int, guid: str = "") -> Period:
    return Period(
        subscription_id=sub_id,
        index=index,
        starts_at=T0 + index * 1000,
        ends_at=T0 + (index + 1) * 1000,
        guid=guid or f"00000000-0000-4000-8000-{index:012d}",
        issued_at=T0 + index * 1000 - 10,
    )


def test_a_plan_round_trips_every_field_and_lists_newest_first(storage: Storage) -> None:
    tiny = plan(1, amount=Decimal("0.000000000000000001"))
    with storage.transaction() as tx:
        tx.insert_plan(tiny)
        tx.insert_plan(plan(2))
        tx.insert_plan(plan(3, owner=OTHER_OWNER))
    with storage.transaction() as tx:
        assert tx.get_plan("plan_0001") == tiny
        assert tx.get_plan("plan_9999") is None
        items, total = tx.list_plans(OWNER, offset=0, limit=10)
        assert ([p.id for p in items], total) == (["plan_0002", "plan_0001"], 2)
        items, total = tx.list_plans(OWNER, offset=1, limit=10)
        assert ([p.id for p in items], total) == (["plan_0001"], 2)
        with pytest.raises(ValueError, match="exists"):
            tx.insert_plan(plan(1))


def test_a_subscription_round_trips_updates_and_lists(storage: Storage) -> None:
    first = subscription(1)
    with storage.transaction() as tx:
        tx.insert_subscription(first)
        tx.insert_subscription(subscription(2))
        tx.insert_subscription(subscription(3, owner=OTHER_OWNER))
    moved = attrs.evolve(
        first,
        status=SubscriptionStatus.CANCELLED,
        next_index=4,
        next_issue_at=T0 + 99,
        updated_at=T0 + 100,
        cancelled_at=T0 + 100,
        email=None,
    )
    with storage.transaction() as tx:
        assert tx.get_subscription("sub_0001", for_update=True) == first
        tx.update_subscription(moved)
        with pytest.raises(KeyError):
            tx.update_subscription(subscription(9))
    with storage.transaction() as tx:
        assert tx.get_subscription("sub_0001") == moved
        items, total = tx.list_subscriptions(OWNER, offset=0, limit=1)
        assert ([s.id for s in items], total) == (["sub_0002"], 2)
        assert sorted(s.id for s in tx.subscriptions_of(["sub_0001", "sub_0003", "nope"])) == [
            "sub_0001",
            "sub_0003",
        ]


def test_due_subscriptions_are_the_live_ones_whose_next_issue_time_came(
    storage: Storage,
) -> None:
    with storage.transaction() as tx:
        tx.insert_subscription(subscription(1, issue_at=T0 + 50))
        tx.insert_subscription(subscription(2, issue_at=T0 + 10))
        tx.insert_subscription(subscription(3, issue_at=T0 + 500))
        gone = attrs.evolve(subscription(4, issue_at=T0), status=SubscriptionStatus.CANCELLED)
        tx.insert_subscription(gone)
    with storage.transaction() as tx:
        assert [s.id for s in tx.subscriptions_due(T0 + 100, 10)] == ["sub_0002", "sub_0001"]
        assert [s.id for s in tx.subscriptions_due(T0 + 100, 1)] == ["sub_0002"]
        assert tx.subscriptions_due(T0 + 9, 10) == []


def test_a_period_is_inserted_once_and_settles(storage: Storage) -> None:
    with storage.transaction() as tx:
        assert tx.insert_period(period("sub_0001", 0))
        assert tx.insert_period(period("sub_0001", 1))
        assert tx.insert_period(period("sub_0002", 0))
        # The same (subscription, index) with another invoice: refused, nothing changed.
        assert not tx.insert_period(period("sub_0001", 1, guid="other"))
    with storage.transaction() as tx:
        assert tx.periods_of("sub_0001") == [period("sub_0001", 0), period("sub_0001", 1)]
        tx.update_period(attrs.evolve(period("sub_0001", 0), status=PeriodStatus.PAID))
        with pytest.raises(KeyError):
            tx.update_period(period("sub_0009", 0))
    with storage.transaction() as tx:
        assert tx.periods_of("sub_0001")[0].status is PeriodStatus.PAID
        open_ = tx.open_periods(10)
        assert [(p.subscription_id, p.index) for p in open_] == [("sub_0001", 1), ("sub_0002", 0)]
        after = tx.open_periods(10, after=("sub_0001", 1))
        assert [(p.subscription_id, p.index) for p in after] == [("sub_0002", 0)]
        assert len(tx.open_periods(1)) == 1


def test_a_rolled_back_period_is_gone(storage: Storage) -> None:
    with pytest.raises(RuntimeError), storage.transaction() as tx:
        assert tx.insert_period(period("sub_0001", 0))
        raise RuntimeError("the invoice could not be made")
    with storage.transaction() as tx:
        assert tx.periods_of("sub_0001") == []
        assert tx.insert_period(period("sub_0001", 0))


def test_racing_transactions_insert_one_period(storage: Storage) -> None:
    def insert(i: int) -> bool:
        with storage.transaction() as tx:
            return tx.insert_period(period("sub_0001", 0, guid=f"guid-{i}"))

    won = race(4, insert)
    assert won.count(True) == 1
    with storage.transaction() as tx:
        [stored] = tx.periods_of("sub_0001")
    assert stored.guid == f"guid-{won.index(True)}"
