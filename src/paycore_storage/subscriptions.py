"""The subscriptions' statements (``paycore.storage.subscriptions``), mixed into ``SqlTx``.

``insert_period`` is ``INSERT .. ON CONFLICT DO NOTHING`` on the periods' primary key
(subscription_id, idx): on PostgreSQL a second transaction inserting the same period waits
on the first one's uncommitted row and then sees the conflict (or inserts, if the first
rolled back); SQLite runs write transactions one at a time. The row count says who won, and
only the winner makes the period's invoice.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, RowMapping, and_, func, or_, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from paycore.domain.subscriptions import (
    Period,
    PeriodStatus,
    PeriodUnit,
    Plan,
    Subscription,
    SubscriptionStatus,
)

from .tables import subscription_periods, subscription_plans, subscriptions

_P, _S, _R = subscription_plans.c, subscriptions.c, subscription_periods.c
_IN_CHUNK = 500
_CANCELLED = SubscriptionStatus.CANCELLED.value


def _plan_row(plan: Plan) -> dict[str, Any]:
    return {
        "id": plan.id,
        "owner": plan.owner,
        "created_at": plan.created_at,
        "name": plan.name,
        "amount": plan.amount,
        "currency": plan.currency,
        "chain_id": plan.chain_id,
        "accepted_tokens": list(plan.accepted_tokens),
        "period_unit": plan.period_unit.value,
        "period_count": plan.period_count,
        "trial_days": plan.trial_days,
        "grace_days": plan.grace_days,
    }


def _plan(row: RowMapping) -> Plan:
    return Plan(
        id=row["id"],
        owner=row["owner"],
        created_at=int(row["created_at"]),
        name=row["name"],
        amount=row["amount"],
        currency=row["currency"],
        chain_id=int(row["chain_id"]),
        accepted_tokens=tuple(row["accepted_tokens"]),
        period_unit=PeriodUnit(row["period_unit"]),
        period_count=int(row["period_count"]),
        trial_days=int(row["trial_days"]),
        grace_days=int(row["grace_days"]),
    )


def _sub_row(sub: Subscription) -> dict[str, Any]:
    return {
        "id": sub.id,
        "owner": sub.owner,
        "plan_id": sub.plan_id,
        "reference": sub.reference,
        "email": sub.email,
        "created_at": sub.created_at,
        "anchor": sub.anchor,
        "status": sub.status.value,
        "next_index": sub.next_index,
        "next_issue_at": sub.next_issue_at,
        "updated_at": sub.updated_at,
        "cancelled_at": sub.cancelled_at,
    }


def _sub(row: RowMapping) -> Subscription:
    cancelled = row["cancelled_at"]
    return Subscription(
        id=row["id"],
        owner=row["owner"],
        plan_id=row["plan_id"],
        reference=row["reference"],
        email=row["email"],
        created_at=int(row["created_at"]),
        anchor=int(row["anchor"]),
        status=SubscriptionStatus(row["status"]),
        next_index=int(row["next_index"]),
        next_issue_at=int(row["next_issue_at"]),
        updated_at=int(row["updated_at"]),
        cancelled_at=None if cancelled is None else int(cancelled),
    )


def _period(row: RowMapping) -> Period:
    return Period(
        subscription_id=row["subscription_id"],
        index=int(row["idx"]),
        starts_at=int(row["starts_at"]),
        ends_at=int(row["ends_at"]),
        guid=row["guid"],
        issued_at=int(row["issued_at"]),
        status=PeriodStatus(row["status"]),
    )


class SubscriptionStatements:
    """The ``SubscriptionStore`` methods of ``StorageTx``, on the transaction's connection."""

    @property
    def _c(self) -> Connection:
        raise NotImplementedError

    def _insert_new(self, table: Any, row: dict[str, Any], keys: list[str]) -> bool:
        insert_into = pg_insert if self._c.dialect.name == "postgresql" else sqlite_insert
        stmt = (
            insert_into(table)
            .values(row)
            .on_conflict_do_nothing(index_elements=keys)
            .returning(table.c[keys[0]])
        )
        return self._c.execute(stmt).first() is not None

    # -- plans --------------------------------------------------------------------------------
    def insert_plan(self, plan: Plan) -> None:
        if not self._insert_new(subscription_plans, _plan_row(plan), ["id"]):
            raise ValueError(f"plan {plan.id} already exists")

    def get_plan(self, plan_id: str) -> Plan | None:
        row = self._c.execute(select(subscription_plans).where(_P.id == plan_id)).first()
        return None if row is None else _plan(row._mapping)

    def list_plans(self, owner: str, *, offset: int, limit: int) -> tuple[list[Plan], int]:
        total = self._c.execute(
            select(func.count()).select_from(subscription_plans).where(_P.owner == owner)
        ).scalar_one()
        query = (
            select(subscription_plans)
            .where(_P.owner == owner)
            .order_by(_P.created_at.desc(), _P.id.desc())
            .offset(offset)
            .limit(limit)
        )
        return [_plan(r._mapping) for r in self._c.execute(query)], int(total)

    # -- subscriptions ------------------------------------------------------------------------
    def insert_subscription(self, sub: Subscription) -> None:
        if not self._insert_new(subscriptions, _sub_row(sub), ["id"]):
            raise ValueError(f"subscription {sub.id} already exists")

    def get_subscription(self, sub_id: str, *, for_update: bool = False) -> Subscription | None:
        query = select(subscriptions).where(_S.id == sub_id)
        if for_update:
            query = query.with_for_update()
        row = self._c.execute(query).first()
        return None if row is None else _sub(row._mapping)

    def update_subscription(self, sub: Subscription) -> None:
        values = _sub_row(sub)
        del values["id"], values["owner"]
        result = self._c.execute(update(subscriptions).where(_S.id == sub.id).values(values))
        if result.rowcount == 0:
            raise KeyError(sub.id)

    def list_subscriptions(
        self, owner: str, *, offset: int, limit: int
    ) -> tuple[list[Subscription], int]:
        total = self._c.execute(
            select(func.count()).select_from(subscriptions).where(_S.owner == owner)
        ).scalar_one()
        query = (
            select(subscriptions)
            .where(_S.owner == owner)
            .order_by(_S.created_at.desc(), _S.id.desc())
            .offset(offset)
            .limit(limit)
        )
        return [_sub(r._mapping) for r in self._c.execute(query)], int(total)

    def subscriptions_due(self, before: int, limit: int) -> list[Subscription]:
        query = (
            select(subscriptions)
            .where(_S.status != _CANCELLED, _S.next_issue_at <= before)
            .order_by(_S.next_issue_at, _S.id)
            .limit(limit)
        )
        return [_sub(r._mapping) for r in self._c.execute(query)]

    def subscriptions_of(self, ids: Sequence[str]) -> list[Subscription]:
        wanted = sorted(set(ids))
        found: list[Subscription] = []
        for start in range(0, len(wanted), _IN_CHUNK):
            query = select(subscriptions).where(_S.id.in_(wanted[start : start + _IN_CHUNK]))
            found += [_sub(r._mapping) for r in self._c.execute(query)]
        return found

    # -- periods ------------------------------------------------------------------------------
    def insert_period(self, period: Period) -> bool:
        row = {
            "subscription_id": period.subscription_id,
            "idx": period.index,
            "starts_at": period.starts_at,
            "ends_at": period.ends_at,
            "guid": period.guid,
            "issued_at": period.issued_at,
            "status": period.status.value,
        }
        return self._insert_new(subscription_periods, row, ["subscription_id", "idx"])

    def update_period(self, period: Period) -> None:
        result = self._c.execute(
            update(subscription_periods)
            .where(_R.subscription_id == period.subscription_id, _R.idx == period.index)
            .values(status=period.status.value)
        )
        if result.rowcount == 0:
            raise KeyError((period.subscription_id, period.index))

    def periods_of(self, sub_id: str) -> list[Period]:
        query = select(subscription_periods).where(_R.subscription_id == sub_id).order_by(_R.idx)
        return [_period(r._mapping) for r in self._c.execute(query)]

    def open_periods(self, limit: int, after: tuple[str, int] | None = None) -> list[Period]:
        query = select(subscription_periods).where(_R.status == PeriodStatus.OPEN.value)
        if after is not None:
            sub_id, index = after
            query = query.where(
                or_(
                    _R.subscription_id > sub_id,
                    and_(_R.subscription_id == sub_id, _R.idx > index),
                )
            )
        query = query.order_by(_R.subscription_id, _R.idx).limit(limit)
        return [_period(r._mapping) for r in self._c.execute(query)]


__all__ = ["SubscriptionStatements"]
