"""The subscription status table and ``assess``, with no storage: what each period invoice's
state does to each status, and the calendar arithmetic of monthly periods."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from paycore.domain.records import Status
from paycore.domain.subscription_machine import (
    FINAL,
    SubscriptionEvent,
    SubscriptionMove,
    assess,
    move,
    next_status,
)
from paycore.domain.subscriptions import (
    Period,
    PeriodStatus,
    PeriodUnit,
    Plan,
    Subscription,
    SubscriptionStatus,
    add_months,
    period_bounds,
)
from paycore.errors import IllegalTransition

S = SubscriptionStatus
T0 = int(datetime(2026, 1, 31, 12, tzinfo=UTC).timestamp())


def sub(status: SubscriptionStatus = S.ACTIVE) -> Subscription:
    return Subscription("sub_1", "0xowner", "plan_1", "ref", T0, T0, status)


def period(index: int, guid: str, starts_at: int = T0) -> Period:
    return Period("sub_1", index, starts_at, starts_at + 100, guid, starts_at - 10)


def test_cancelled_is_the_only_final_status_and_refuses_every_move() -> None:
    assert {S.CANCELLED} == FINAL
    for what in SubscriptionMove:
        with pytest.raises(IllegalTransition):
            next_status(S.CANCELLED, what)


def test_a_pending_subscription_does_not_go_past_due() -> None:
    with pytest.raises(IllegalTransition):
        next_status(S.PENDING, SubscriptionMove.OVERDUE)
    assert assess(sub(S.PENDING), [period(0, "g0")], {"g0": Status.INIT}, T0 + 50) == []


def test_paid_overdue_and_lapsed_invoices_move_the_subscription_oldest_first() -> None:
    periods = [period(0, "g0"), period(1, "g1", T0 + 100)]
    steps = assess(sub(), periods, {"g0": Status.PAID, "g1": Status.INIT}, T0 + 150)
    assert [(s.event, s.subscription.status) for s in steps] == [
        (SubscriptionEvent.RENEWED, S.ACTIVE),
        (SubscriptionEvent.PAST_DUE, S.PAST_DUE),
    ]
    assert steps[0].period is not None and steps[0].period.status is PeriodStatus.PAID
    assert steps[1].period is None  # the period stays open while its grace runs
    # Not yet due: nothing happens.
    assert assess(sub(), [period(1, "g1", T0 + 100)], {"g1": Status.INIT}, T0 + 99) == []
    lapsed = assess(sub(S.PAST_DUE), [period(1, "g1")], {"g1": Status.EXPIRED}, T0 + 500)
    [step] = lapsed
    assert step.event is SubscriptionEvent.CANCELLED and step.subscription.cancelled_at == T0 + 500
    assert step.period is not None and step.period.status is PeriodStatus.UNPAID


def test_a_cancelled_subscriptions_periods_settle_without_an_event() -> None:
    [step] = assess(sub(S.CANCELLED), [period(0, "g0")], {"g0": Status.PAID}, T0)
    assert step.event is None and step.subscription.status is S.CANCELLED
    assert step.period is not None and step.period.status is PeriodStatus.PAID


def test_the_merchants_cancel_stamps_the_time() -> None:
    after, event = move(sub(S.TRIALING), SubscriptionMove.CANCEL, T0 + 7)
    assert (after.status, after.cancelled_at, event) == (
        S.CANCELLED,
        T0 + 7,
        SubscriptionEvent.CANCELLED,
    )


def test_months_clamp_to_the_last_day_and_do_not_drift() -> None:
    plan = Plan("p", "o", T0, "n", Decimal(1), "usd", 1, ("1:0x0",), PeriodUnit.MONTH, 1)
    days = [datetime.fromtimestamp(period_bounds(plan, T0, i)[0], UTC).date().isoformat()
            for i in range(4)]  # fmt: skip
    assert days == ["2026-01-31", "2026-02-28", "2026-03-31", "2026-04-30"]
    assert add_months(T0, 12 + 1) == int(datetime(2027, 2, 28, 12, tzinfo=UTC).timestamp())
    daily = Plan("p", "o", T0, "n", Decimal(1), "usd", 1, ("1:0x0",), PeriodUnit.DAY, 7)
    assert period_bounds(daily, T0, 2) == (T0 + 14 * 86_400, T0 + 21 * 86_400)
