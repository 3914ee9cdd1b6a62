"""Each period is invoiced once across workers and restarts, on a SQLite file and PostgreSQL:
workers on separate connections race for the same due periods; a restarted worker issues
nothing again; and a worker that read a subscription before another worker issued its period
(a stale read) is stopped by the database's unique key on (subscription, period index),
its invoice rolled back."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import URL
from subs_env import DAY, OWNER, USDC_1, Clock, gateway

from paycore import Gateway
from paycore.domain.subscriptions import Subscription
from paycore.storage import Storage
from paycore.subscriptions.requests import NewPlan, NewSubscription
from paycore_storage import SqlStorage

SQL = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
SUBSCRIBERS = 6


@pytest.fixture(params=SQL)
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], SqlStorage]]:
    """Opens another connection pool to one database: one per worker process."""
    if request.param == "sqlite":
        url: str | URL = f"sqlite:///{tmp_path / 'paycore.sqlite3'}"
    else:
        new_schema: Callable[[], URL] = request.getfixturevalue("postgres_schema")
        url = new_schema()
    opened: list[SqlStorage] = []

    def open_() -> SqlStorage:
        store = SqlStorage(url)
        opened.append(store)
        return store

    yield open_
    for store in opened:
        store.close()


def _subscribe(gw: Gateway) -> list[str]:
    plan = gw.subscriptions.create_plan(
        OWNER,
        NewPlan(
            name="Silver",
            amount=Decimal("5"),  # type: ignore[arg-type]
            chain_id=1,  # type: ignore[arg-type]
            accepted_tokens=(USDC_1,),  # type: ignore[arg-type]
            period_unit="day",
            period_count=7,  # type: ignore[arg-type]
        ),
    )
    return [
        gw.subscriptions.create(OWNER, NewSubscription(plan.id, f"c{i}")).id
        for i in range(SUBSCRIBERS)
    ]


def _issued(gw: Gateway, ids: list[str]) -> list[int]:
    with gw.storage.transaction() as tx:
        return [len(tx.periods_of(i)) for i in ids]


def test_racing_workers_and_a_restart_invoice_each_period_once(
    database: Callable[[], SqlStorage],
) -> None:
    clock = Clock()
    workers = [gateway(database(), clock) for _ in range(4)]
    ids = _subscribe(workers[0])
    barrier = threading.Barrier(len(workers))
    counts: list[int] = []

    def work(gw: Gateway) -> None:
        barrier.wait()
        counts.append(gw.subscriptions.issue_due())

    threads = [threading.Thread(target=work, args=(gw,)) for gw in workers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(counts) == SUBSCRIBERS
    assert _issued(workers[0], ids) == [1] * SUBSCRIBERS
    with workers[0].storage.transaction() as tx:
        assert tx.count_invoices(owner=OWNER) == SUBSCRIBERS

    restarted = gateway(database(), clock)  # a new process on the same database
    assert restarted.subscriptions.issue_due() == 0
    clock.advance(7 * DAY - 3 * DAY)  # period 1's issue time
    assert restarted.subscriptions.issue_due() == SUBSCRIBERS
    assert workers[1].subscriptions.issue_due() == 0
    assert _issued(restarted, ids) == [2] * SUBSCRIBERS
    with restarted.storage.transaction() as tx:
        assert tx.count_invoices(owner=OWNER) == 2 * SUBSCRIBERS


class _StaleReads:
    """A storage whose ``get_subscription`` answers what it read before another worker
    issued the period: the database's key is then all that stands between it and a second
    invoice. Everything else is the real storage."""

    def __init__(self, inner: Storage, stale: dict[str, Subscription]) -> None:
        self.inner = inner
        self.stale = stale

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        with self.inner.transaction() as tx:
            yield _StaleTx(tx, self.stale)

    def close(self) -> None:
        self.inner.close()


class _StaleTx:
    def __init__(self, tx: Any, stale: dict[str, Subscription]) -> None:
        self._tx = tx
        self._stale = stale

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tx, name)

    def get_subscription(self, sub_id: str, *, for_update: bool = False) -> Subscription | None:
        self._tx.get_subscription(sub_id, for_update=for_update)  # takes the lock all the same
        return self._stale[sub_id]

    def subscriptions_due(self, before: int, limit: int) -> list[Subscription]:
        return list(self._stale.values())


def test_a_stale_worker_is_stopped_by_the_unique_period_key(
    database: Callable[[], SqlStorage],
) -> None:
    clock = Clock()
    first = gateway(database(), clock)
    ids = _subscribe(first)
    with first.storage.transaction() as tx:
        before = {i: s for i in ids if (s := tx.get_subscription(i)) is not None}
    assert first.subscriptions.issue_due() == SUBSCRIBERS
    stale = gateway(_StaleReads(database(), before), clock)  # type: ignore[arg-type]
    assert stale.subscriptions.issue_due() == 0
    with first.storage.transaction() as tx:
        assert tx.count_invoices(owner=OWNER) == SUBSCRIBERS  # its invoices rolled back
        assert [len(tx.periods_of(i)) for i in ids] == [1] * SUBSCRIBERS
