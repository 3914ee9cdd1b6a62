"""Subscriptions: plans, subscribers and the periods they are invoiced for. No I/O.

A **plan** is the template of every period's invoice: an amount in a fiat currency, the
chain and tokens it is paid in, the length of a period (days, or calendar months), a free
trial before the first period and a grace after each period's due date. A **subscription**
is one subscriber (the merchant's reference, an optional e-mail) on one plan. Period ``i``
starts at ``period_start(plan, anchor, i)``, where ``anchor`` is the end of the trial; the
start is the period's **due date**. The worker issues each period's invoice
``subscription_lead`` seconds ahead of it (``Settings``), once per (subscription, index):
storage's unique key says so. The invoice's deadline is the due date plus the plan's grace,
so an invoice that expires unpaid is exactly a period unpaid past its grace.

The status machine (``paycore.domain.subscription_machine``) moves a subscription by what its
period invoices did. Money is Decimal; times are unix seconds.
"""

from __future__ import annotations

import calendar
from datetime import UTC, datetime
from decimal import Decimal
from enum import StrEnum

import attrs

from .money import to_text
from .records import Json

DAY = 86_400
#: Longest plan period: a period's invoice must fit the longest invoice deadline (a year).
MAX_PERIOD_DAYS = 365
MAX_PERIOD_MONTHS = 12
MAX_TRIAL_DAYS = 365
MAX_GRACE_DAYS = 90
MAX_REFERENCE = 200
MAX_EMAIL = 254
MAX_PLAN_NAME = 200


class PeriodUnit(StrEnum):
    DAY = "day"
    MONTH = "month"


class SubscriptionStatus(StrEnum):
    #: Created with a trial: nothing is owed until the first period starts.
    TRIALING = "trialing"
    #: Created without a trial: the first period's invoice is open and not yet paid.
    PENDING = "pending"
    #: The latest due period is paid.
    ACTIVE = "active"
    #: A period's due date passed with its invoice unpaid; its grace is running.
    PAST_DUE = "past_due"
    #: By the merchant, or a period unpaid past its grace. Final.
    CANCELLED = "cancelled"


class PeriodStatus(StrEnum):
    OPEN = "open"
    PAID = "paid"
    #: Its invoice expired unpaid (due date plus grace passed).
    UNPAID = "unpaid"


@attrs.frozen
class Plan:
    """What every period of a subscription costs and how long it lasts."""

    id: str
    owner: str
    created_at: int
    name: str
    amount: Decimal  # in ``currency``, a configured fiat currency
    currency: str
    chain_id: int
    accepted_tokens: tuple[str, ...]
    period_unit: PeriodUnit
    period_count: int  # days or months per period
    trial_days: int = 0
    grace_days: int = 0

    def to_wire(self) -> Json:
        return {
            "id": self.id,
            "owner": self.owner,
            "createdAt": self.created_at,
            "name": self.name,
            "amount": to_text(self.amount),
            "currency": self.currency,
            "chainId": self.chain_id,
            "acceptedTokens": list(self.accepted_tokens),
            "periodUnit": self.period_unit.value,
            "periodCount": self.period_count,
            "trialDays": self.trial_days,
            "graceDays": self.grace_days,
        }


@attrs.frozen
class Subscription:
    """One subscriber on one plan. ``next_index`` is the period whose invoice is issued
    next, at ``next_issue_at``; ``anchor`` is the start of period 0 (the trial's end)."""

    id: str
    owner: str
    plan_id: str
    reference: str
    created_at: int
    anchor: int
    status: SubscriptionStatus
    next_index: int = 0
    next_issue_at: int = 0
    email: str | None = None
    updated_at: int = 0
    cancelled_at: int | None = None

    def to_wire(self) -> Json:
        return {
            "id": self.id,
            "owner": self.owner,
            "planId": self.plan_id,
            "reference": self.reference,
            "email": self.email,
            "createdAt": self.created_at,
            "trialEndsAt": self.anchor,
            "status": self.status.value,
            "nextPeriod": self.next_index,
            "nextInvoiceAt": None
            if self.status is SubscriptionStatus.CANCELLED
            else self.next_issue_at,
            "updatedAt": self.updated_at,
            "cancelledAt": self.cancelled_at,
        }


@attrs.frozen
class Period:
    """One period of a subscription and the invoice it was billed with. (``subscription_id``,
    ``index``) is unique in storage: that is what makes issuing exactly-once."""

    subscription_id: str
    index: int
    starts_at: int  # the due date
    ends_at: int
    guid: str
    issued_at: int
    status: PeriodStatus = PeriodStatus.OPEN

    def to_wire(self) -> Json:
        return {
            "index": self.index,
            "startsAt": self.starts_at,
            "endsAt": self.ends_at,
            "dueAt": self.starts_at,
            "guid": self.guid,
            "issuedAt": self.issued_at,
            "status": self.status.value,
        }


def add_months(at: int, months: int) -> int:
    """``at`` moved by ``months`` calendar months (UTC), the day clamped to the month's last
    (31 January + 1 month = 28 or 29 February), the time of day kept."""
    moment = datetime.fromtimestamp(at, UTC)
    total = moment.month - 1 + months
    year, month = moment.year + total // 12, total % 12 + 1
    day = min(moment.day, calendar.monthrange(year, month)[1])
    return int(moment.replace(year=year, month=month, day=day).timestamp())


def period_start(plan: Plan, anchor: int, index: int) -> int:
    """When period ``index`` starts (is due). Months count from the anchor each time, so a
    subscription started on the 31st is due on the last day of shorter months and on the
    31st again after them, never drifting."""
    if plan.period_unit is PeriodUnit.MONTH:
        return add_months(anchor, index * plan.period_count)
    return anchor + index * plan.period_count * DAY


def period_bounds(plan: Plan, anchor: int, index: int) -> tuple[int, int]:
    return period_start(plan, anchor, index), period_start(plan, anchor, index + 1)


def issue_time(plan: Plan, anchor: int, index: int, lead: int) -> int:
    """When period ``index``'s invoice is issued: ``lead`` seconds before it is due."""
    return period_start(plan, anchor, index) - lead


def invoice_deadline(plan: Plan, starts_at: int) -> int:
    """The unix time a period's invoice expires: its due date plus the plan's grace."""
    return starts_at + plan.grace_days * DAY


__all__ = [
    "DAY",
    "Period",
    "PeriodStatus",
    "PeriodUnit",
    "Plan",
    "Subscription",
    "SubscriptionStatus",
    "add_months",
    "invoice_deadline",
    "issue_time",
    "period_bounds",
    "period_start",
]
