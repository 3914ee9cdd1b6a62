"""A subscription's status as one transition table, with no I/O, like the invoice's
(``paycore.domain.machine``) and the refund's (``paycore.domain.refund_machine``).

The moves are what a period's invoice did, and the merchant's cancel:

- ``PAID``: a period's invoice was paid. The subscription is ``active``; from ``active`` it
  stays ``active`` and the event is ``subscription.renewed``.
- ``OVERDUE``: a period's due date (its start) passed with its invoice unpaid: ``past_due``
  while the plan's grace runs. A ``pending`` subscription (no trial: its first period is due
  when it is created) does not go past due; it is ``pending`` until paid or lapsed.
- ``LAPSED``: a period's invoice expired unpaid (its deadline is the due date plus the grace):
  ``cancelled``.
- ``CANCEL``: the merchant cancelled it: ``cancelled``.

``cancelled`` is final. :func:`assess` reads a subscription's open periods against their
invoices' statuses and returns the moves to make, oldest period first, so the worker and a
read agree on what happened without either holding state of its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import StrEnum

import attrs

from ..errors import IllegalTransition
from .records import Status
from .subscriptions import Period, PeriodStatus, Subscription
from .subscriptions import SubscriptionStatus as S


class SubscriptionMove(StrEnum):
    PAID = "a period's invoice was paid"
    OVERDUE = "a period's due date passed with its invoice unpaid"
    LAPSED = "a period's invoice expired unpaid"
    CANCEL = "the merchant cancelled it"


class SubscriptionEvent(StrEnum):
    """The outbox types of subscription events (``paycore.domain.changes.ALL_TYPES``)."""

    CREATED = "subscription.created"
    ACTIVE = "subscription.active"
    RENEWED = "subscription.renewed"
    PAST_DUE = "subscription.past_due"
    CANCELLED = "subscription.cancelled"
    #: A period's invoice was issued (the worker, ahead of its due date).
    INVOICED = "subscription.invoiced"


M = SubscriptionMove
#: (status, move) -> next status. Anything absent is illegal.
TRANSITIONS: dict[S, dict[SubscriptionMove, S]] = {
    S.TRIALING: {
        M.PAID: S.ACTIVE,
        M.OVERDUE: S.PAST_DUE,
        M.LAPSED: S.CANCELLED,
        M.CANCEL: S.CANCELLED,
    },
    S.PENDING: {M.PAID: S.ACTIVE, M.LAPSED: S.CANCELLED, M.CANCEL: S.CANCELLED},
    S.ACTIVE: {
        M.PAID: S.ACTIVE,
        M.OVERDUE: S.PAST_DUE,
        M.LAPSED: S.CANCELLED,
        M.CANCEL: S.CANCELLED,
    },
    S.PAST_DUE: {M.PAID: S.ACTIVE, M.LAPSED: S.CANCELLED, M.CANCEL: S.CANCELLED},
    S.CANCELLED: {},
}

FINAL: frozenset[S] = frozenset(s for s, moves in TRANSITIONS.items() if not moves)

#: The event each status is announced with when a move leads into it.
_ENTERED: dict[S, SubscriptionEvent] = {
    S.ACTIVE: SubscriptionEvent.ACTIVE,
    S.PAST_DUE: SubscriptionEvent.PAST_DUE,
    S.CANCELLED: SubscriptionEvent.CANCELLED,
}


def allows(status: S, move: SubscriptionMove) -> bool:
    return move in TRANSITIONS[status]


def next_status(status: S, move: SubscriptionMove) -> S:
    try:
        return TRANSITIONS[status][move]
    except KeyError:
        raise IllegalTransition(
            f"subscription: {move.value} is not allowed in status {status.value}"
        ) from None


def move(
    sub: Subscription, what: SubscriptionMove, at: int
) -> tuple[Subscription, SubscriptionEvent]:
    """``sub`` after ``what`` at time ``at``, and the event that announces it."""
    after = next_status(sub.status, what)
    event = SubscriptionEvent.RENEWED if after is sub.status else _ENTERED[after]
    cancelled_at = at if after is S.CANCELLED else sub.cancelled_at
    return attrs.evolve(sub, status=after, updated_at=at, cancelled_at=cancelled_at), event


@attrs.frozen
class Step:
    """One move :func:`assess` found: the period with its new status (None when the
    period stays open), the subscription after it and the event to write."""

    period: Period | None
    subscription: Subscription
    event: SubscriptionEvent | None  # None: only the period settles


def assess(
    sub: Subscription, periods: Sequence[Period], invoices: Mapping[str, Status], now: int
) -> list[Step]:
    """The moves ``sub``'s periods call for at ``now``, oldest period first, given the
    status of each period's invoice (``invoices``, by guid). A paid invoice pays its period;
    an expired one lapses it (and cancels the subscription); an open one past its due date
    makes the subscription past due once. Moves the table does not allow (anything after
    ``cancelled``) are left out, so a cancelled subscription's periods still settle."""
    steps: list[Step] = []
    for period in sorted(periods, key=lambda p: p.index):
        if period.status is not PeriodStatus.OPEN:
            continue
        status = invoices.get(period.guid)
        if status is Status.PAID:
            settled: Period | None = attrs.evolve(period, status=PeriodStatus.PAID)
            what = M.PAID
        elif status is Status.EXPIRED:
            settled, what = attrs.evolve(period, status=PeriodStatus.UNPAID), M.LAPSED
        elif now >= period.starts_at and sub.status is not S.PAST_DUE:
            settled, what = None, M.OVERDUE
        else:
            continue
        if not allows(sub.status, what):
            if settled is not None:  # the period settles; the subscription does not move
                steps.append(Step(settled, sub, None))
            continue
        sub, event = move(sub, what, now)
        steps.append(Step(settled, sub, event))
    return steps


__all__ = [
    "FINAL",
    "TRANSITIONS",
    "Step",
    "SubscriptionEvent",
    "SubscriptionMove",
    "allows",
    "assess",
    "move",
    "next_status",
]
