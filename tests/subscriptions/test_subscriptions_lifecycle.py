"""A subscription's life through the gateway and the worker's steps, on memory, a SQLite file
and PostgreSQL: invoices issued ahead of each due date, once; statuses moved by what those
invoices did; an event in the outbox for each move."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

import pytest
from subs_env import DAY, OWNER, T0, USDC_1, Clock, events, gateway, pay

from paycore import Gateway
from paycore.domain.records import Status
from paycore.domain.subscriptions import PeriodStatus, PeriodUnit, add_months
from paycore.errors import Conflict, InvalidInput, NotFound
from paycore.storage import Storage
from paycore.subscriptions.requests import NewPlan, NewSubscription

BACKENDS = ["memory", "sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
LEAD = 3 * DAY


def plan_request(**fields: object) -> NewPlan:
    values: dict[str, object] = {
        "name": "Gold",
        "amount": Decimal("10.50"),
        "chain_id": 1,
        "accepted_tokens": (USDC_1,),
        "period_unit": "day",
        "period_count": 30,
        "currency": "usd",
        "grace_days": 2,
    }
    values.update(fields)
    return NewPlan(**values)  # type: ignore[arg-type]


@pytest.fixture(params=BACKENDS)
def env(
    request: pytest.FixtureRequest, make_storage: Callable[..., Storage]
) -> tuple[Gateway, Clock]:
    clock = Clock()
    return gateway(make_storage(request.param), clock), clock


def test_a_subscription_without_trial_goes_pending_active_past_due_active_cancelled(
    env: tuple[Gateway, Clock],
) -> None:
    gw, clock = env
    subs = gw.subscriptions
    plan = subs.create_plan(OWNER, plan_request())
    assert (plan.amount, plan.period_unit, plan.grace_days) == (Decimal("10.50"), PeriodUnit.DAY, 2)
    sub = subs.create(OWNER, NewSubscription(plan.id, "customer-7", "c7@shop.example.test"))
    assert sub.status.value == "pending" and sub.next_issue_at == T0 - LEAD

    # Period 0 is due at once: issued by the first pass, and by no later one.
    assert subs.issue_due() == 1
    assert subs.issue_due() == 0
    view = subs.view(sub.id, OWNER)
    [p0] = view.periods
    invoice = view.invoices[p0.guid]
    assert (p0.index, p0.starts_at, p0.ends_at) == (0, T0, T0 + 30 * DAY)
    assert invoice.value == Decimal("10.50") and invoice.vs_currency == "usd"
    assert invoice.deadline == T0 + 2 * DAY  # due date plus grace
    assert invoice.data["subscription"] == sub.id and invoice.owner == OWNER
    assert subs.settle() == 0  # pending does not go past due; nothing paid yet

    pay(gw, invoice)
    assert subs.settle() == 1
    assert subs.view(sub.id).subscription.status.value == "active"
    assert subs.view(sub.id).periods[0].status is PeriodStatus.PAID

    # Period 1 is issued LEAD before it is due, not earlier.
    clock.advance(30 * DAY - LEAD - 1)
    assert subs.issue_due() == 0
    clock.advance(1)
    assert subs.issue_due() == 1
    clock.advance(LEAD)  # due now, unpaid: past due, once
    assert subs.settle() == 1
    assert subs.settle() == 0
    view = subs.view(sub.id)
    assert view.subscription.status.value == "past_due"
    pay(gw, view.invoices[view.periods[1].guid])
    subs.settle()
    assert subs.view(sub.id).subscription.status.value == "active"

    # Period 2 unpaid past its grace: its invoice expires and the subscription is cancelled.
    clock.advance(30 * DAY)
    subs.tick()
    assert subs.view(sub.id).subscription.status.value == "past_due"
    clock.advance(2 * DAY + 1)
    subs.tick()
    final = subs.view(sub.id)
    assert final.subscription.status.value == "cancelled"
    assert final.invoices[final.periods[2].guid].status is Status.EXPIRED
    assert final.periods[2].status is PeriodStatus.UNPAID
    clock.advance(60 * DAY)
    assert subs.issue_due() == 0  # a cancelled subscription is invoiced no more

    assert [(t, s) for t, _id, s in events(gw)] == [
        ("subscription.created", "pending"),
        ("subscription.invoiced", "pending"),
        ("subscription.active", "active"),
        ("subscription.invoiced", "active"),
        ("subscription.past_due", "past_due"),
        ("subscription.active", "active"),
        ("subscription.invoiced", "active"),
        ("subscription.past_due", "past_due"),
        ("subscription.cancelled", "cancelled"),
    ]
    assert {i for _t, i, _s in events(gw)} == {sub.id}


def test_a_trial_defers_the_first_invoice_and_monthly_periods_follow_the_calendar(
    env: tuple[Gateway, Clock],
) -> None:
    gw, clock = env
    subs = gw.subscriptions
    plan = subs.create_plan(OWNER, plan_request(period_unit="month", period_count=1, trial_days=14))
    sub = subs.create(OWNER, NewSubscription(plan.id, "customer-8"))
    assert sub.status.value == "trialing" and sub.anchor == T0 + 14 * DAY
    assert subs.issue_due() == 0
    clock.advance(14 * DAY - LEAD)
    assert subs.issue_due() == 1
    view = subs.view(sub.id)
    [p0] = view.periods
    assert (p0.starts_at, p0.ends_at) == (T0 + 14 * DAY, add_months(T0 + 14 * DAY, 1))
    pay(gw, view.invoices[p0.guid])  # paid during the trial, ahead of its due date
    subs.settle()
    assert subs.view(sub.id).subscription.status.value == "active"


def test_the_merchant_cancels_once_and_only_their_own(env: tuple[Gateway, Clock]) -> None:
    gw, _clock = env
    subs = gw.subscriptions
    plan = subs.create_plan(OWNER, plan_request())
    sub = subs.create(OWNER, NewSubscription(plan.id, "customer-9"))
    other = "0x2222222222222222222222222222222222222222"
    with pytest.raises(NotFound):
        subs.cancel(other, sub.id)
    with pytest.raises(NotFound):
        subs.create(other, NewSubscription(plan.id, "x"))  # another owner's plan
    assert subs.cancel(OWNER, sub.id).status.value == "cancelled"
    with pytest.raises(Conflict):
        subs.cancel(OWNER, sub.id)
    assert subs.issue_due() == 0
    assert [t for t, _i, _s in events(gw)] == ["subscription.created", "subscription.cancelled"]


@pytest.mark.parametrize(
    ("fields", "text"),
    [
        ({"amount": Decimal(0)}, "amount: must be above 0"),
        ({"period_unit": "week"}, "periodUnit: must be day or month"),
        ({"period_count": 0}, "periodCount: must be between 1 and 365 days"),
        ({"period_unit": "month", "period_count": 13}, "periodCount: must be between 1 and 12"),
        ({"grace_days": 91}, "graceDays: must be at most 90"),
        ({"trial_days": 366}, "trialDays: must be at most 365"),
        ({"currency": "xyz"}, "currency: must be one of usd"),
        ({"chain_id": 99}, "99"),
        ({"name": "  "}, "name: must not be empty"),
    ],
)
def test_a_bad_plan_is_refused_with_one_line_and_nothing_stored(
    make_storage: Callable[..., Storage], fields: dict[str, object], text: str
) -> None:
    gw = gateway(make_storage("memory"), Clock())
    with pytest.raises(InvalidInput) as refused:
        gw.subscriptions.create_plan(OWNER, plan_request(**fields))
    assert text in str(refused.value) and "\n" not in str(refused.value)
    assert gw.subscriptions.list_plans(OWNER)[1] == 0


def test_a_bad_subscriber_is_refused(make_storage: Callable[..., Storage]) -> None:
    gw = gateway(make_storage("memory"), Clock())
    plan = gw.subscriptions.create_plan(OWNER, plan_request())
    with pytest.raises(InvalidInput, match="email: not an e-mail address"):
        gw.subscriptions.create(OWNER, NewSubscription(plan.id, "c", "not-mail"))
    with pytest.raises(InvalidInput, match="reference: must not be empty"):
        gw.subscriptions.create(OWNER, NewSubscription(plan.id, " "))
    assert gw.subscriptions.list(OWNER)[1] == 0
