"""The subscriptions' part of the storage contract: plans, subscriptions and their periods
(``paycore.domain.subscriptions``).

What storage owes for them:

- ``insert_period`` is the exactly-once of period invoices: (subscription id, index) is a
  unique key the store enforces, so of two transactions inserting the same period, one
  inserts it and the other is told ``False`` (PostgreSQL: the second waits on the first's
  uncommitted row, then sees the conflict; SQLite and memory run writes one at a time). The
  caller makes the period's invoice in the same transaction, only when it inserted the row,
  so a period is invoiced once however many workers race and across restarts.
- ``get_subscription(..., for_update=True)`` locks the row until the transaction ends, so
  status moves of one subscription run one after the other.
- Lists are newest first, paged by ``offset`` and ``limit``, with their total.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ..domain.subscriptions import Period, Plan, Subscription


class SubscriptionStore(Protocol):
    """``StorageTx``'s plan, subscription and period methods."""

    def insert_plan(self, plan: Plan) -> None:
        """Store a new plan; raises ``ValueError`` when its id exists."""

    def get_plan(self, plan_id: str) -> Plan | None:
        """The plan with this id, or None; any owner's (the caller checks whose it is)."""

    def list_plans(self, owner: str, *, offset: int, limit: int) -> tuple[list[Plan], int]:
        """(``owner``'s plans newest first, from ``offset``, at most ``limit``; their total)."""

    def insert_subscription(self, sub: Subscription) -> None:
        """Store a new subscription; raises ``ValueError`` when its id exists."""

    def get_subscription(self, sub_id: str, *, for_update: bool = False) -> Subscription | None:
        """The subscription with this id, or None. ``for_update`` locks its row until the
        transaction ends, so two workers issuing its next period take turns."""

    def update_subscription(self, sub: Subscription) -> None:
        """Replace every field but ``id`` and ``owner``; ``KeyError`` for an unknown id."""

    def list_subscriptions(
        self, owner: str, *, offset: int, limit: int
    ) -> tuple[list[Subscription], int]:
        """(``owner``'s subscriptions newest first, from ``offset``, at most ``limit``; total)."""

    def subscriptions_due(self, before: int, limit: int) -> list[Subscription]:
        """Up to ``limit`` subscriptions not cancelled whose ``next_issue_at`` is at or
        before ``before``, soonest first: those whose next period is to be invoiced."""

    def insert_period(self, period: Period) -> bool:
        """Store a period; ``False`` (and nothing written) when the subscription has that
        index already: the database's unique key decides between racing workers."""

    def update_period(self, period: Period) -> None:
        """Replace the period's ``status``; ``KeyError`` when there is no such period."""

    def periods_of(self, sub_id: str) -> list[Period]:
        """The subscription's periods, by index."""

    def open_periods(self, limit: int, after: tuple[str, int] | None = None) -> list[Period]:
        """Up to ``limit`` periods with status ``open``, ordered by (subscription id, index),
        starting after the key ``after``: what the worker watches for payment and expiry."""

    def subscriptions_of(self, ids: Sequence[str]) -> list[Subscription]:
        """The subscriptions among ``ids`` (unknown ids are left out), in no set order."""
