"""The memory store's plans, subscriptions and periods (``paycore.storage.subscriptions``),
mixed into its transaction class. Rows live in one dict of the tables' snapshot, keyed by
kind, so a rollback takes them back with the rest; the store runs one transaction at a time
under its lock, which is what makes a period's insert the only one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from ..domain.subscriptions import Period, PeriodStatus, Plan, Subscription, SubscriptionStatus

#: ("plan", id), ("sub", id) or ("period", subscription id, index) -> the frozen record.
SubKey = tuple[Any, ...]


class MemorySubscriptions:
    """``SubscriptionStore`` over the store's ``subscriptions`` table."""

    @property
    def _t(self) -> Any:
        raise NotImplementedError

    @property
    def _rows(self) -> dict[SubKey, Any]:
        rows: dict[SubKey, Any] = self._t.subscriptions
        return rows

    def _all(self, kind: str) -> list[Any]:
        return [v for k, v in self._rows.items() if k[0] == kind]

    # -- plans --------------------------------------------------------------------------------
    def insert_plan(self, plan: Plan) -> None:
        if ("plan", plan.id) in self._rows:
            raise ValueError(f"plan {plan.id} already exists")
        self._rows[("plan", plan.id)] = plan

    def get_plan(self, plan_id: str) -> Plan | None:
        found: Plan | None = self._rows.get(("plan", plan_id))
        return found

    def list_plans(self, owner: str, *, offset: int, limit: int) -> tuple[list[Plan], int]:
        mine = [p for p in self._all("plan") if p.owner == owner]
        mine.sort(key=lambda p: (p.created_at, p.id), reverse=True)
        return mine[offset : offset + limit], len(mine)

    # -- subscriptions ------------------------------------------------------------------------
    def insert_subscription(self, sub: Subscription) -> None:
        if ("sub", sub.id) in self._rows:
            raise ValueError(f"subscription {sub.id} already exists")
        self._rows[("sub", sub.id)] = sub

    def get_subscription(self, sub_id: str, *, for_update: bool = False) -> Subscription | None:
        found: Subscription | None = self._rows.get(("sub", sub_id))
        return found

    def update_subscription(self, sub: Subscription) -> None:
        stored: Subscription | None = self._rows.get(("sub", sub.id))
        if stored is None:
            raise KeyError(sub.id)
        self._rows[("sub", sub.id)] = attrs.evolve(sub, owner=stored.owner)

    def list_subscriptions(
        self, owner: str, *, offset: int, limit: int
    ) -> tuple[list[Subscription], int]:
        mine = [s for s in self._all("sub") if s.owner == owner]
        mine.sort(key=lambda s: (s.created_at, s.id), reverse=True)
        return mine[offset : offset + limit], len(mine)

    def subscriptions_due(self, before: int, limit: int) -> list[Subscription]:
        due = [
            s
            for s in self._all("sub")
            if s.status is not SubscriptionStatus.CANCELLED and s.next_issue_at <= before
        ]
        due.sort(key=lambda s: (s.next_issue_at, s.id))
        return due[:limit]

    def subscriptions_of(self, ids: Sequence[str]) -> list[Subscription]:
        return [s for i in set(ids) if (s := self._rows.get(("sub", i))) is not None]

    # -- periods ------------------------------------------------------------------------------
    def insert_period(self, period: Period) -> bool:
        key = ("period", period.subscription_id, period.index)
        if key in self._rows:
            return False
        self._rows[key] = period
        return True

    def update_period(self, period: Period) -> None:
        key = ("period", period.subscription_id, period.index)
        stored: Period | None = self._rows.get(key)
        if stored is None:
            raise KeyError((period.subscription_id, period.index))
        self._rows[key] = attrs.evolve(stored, status=period.status)

    def periods_of(self, sub_id: str) -> list[Period]:
        return sorted(
            (p for p in self._all("period") if p.subscription_id == sub_id), key=lambda p: p.index
        )

    def open_periods(self, limit: int, after: tuple[str, int] | None = None) -> list[Period]:
        found = sorted(
            (
                p
                for p in self._all("period")
                if p.status is PeriodStatus.OPEN
                and (after is None or (p.subscription_id, p.index) > after)
            ),
            key=lambda p: (p.subscription_id, p.index),
        )
        return found[:limit]
