"""Parallel checkouts from one session key, end to end through ``paycore.api.handle`` on
memory, SQLite and PostgreSQL: the audit's case of a shop firing 20 invoice creations at once
with ``Date.now()`` nonces, and 200, and replays of them, in each nonce mode."""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

import pytest
from auth_helpers import NOW, SessionClient, account, registration_body
from sqlalchemy.engine import URL

from paycore.api import Request, Response, handle
from paycore.config import Settings
from paycore.gateway import Gateway
from paycore.storage import Storage
from paycore.storage.memory import MemoryStorage
from paycore_storage import SqlStorage

T = TypeVar("T")
ETH_1 = "1:0x0000000000000000000000000000000000000000"
#: Date.now() at the test clock's NOW: what a browser client would send as nonces.
DATE_NOW = NOW * 1000


def race(workers: int, work: Callable[[int], T]) -> list[T]:
    """``work(i)`` on ``workers`` threads released together by a barrier."""
    barrier = threading.Barrier(workers)

    def start(i: int) -> T:
        barrier.wait(timeout=60)
        return work(i)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(start, range(workers)))


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Storage]:
    found: Storage
    if request.param == "memory":
        found = MemoryStorage(clock=lambda: NOW)
    elif request.param == "sqlite":
        found = SqlStorage(f"sqlite:///{tmp_path / 'auth.sqlite3'}")
    else:
        new_schema: Callable[[], URL] = request.getfixturevalue("postgres_schema")
        # Enough connections that 200 requests overlap instead of queueing for the pool.
        found = SqlStorage(new_schema(), pool_size=20, max_overflow=20, pool_timeout=60)
    yield found
    found.close()


class Shop:
    """A merchant's server: one session key, many parallel requests."""

    def __init__(self, store: Storage, nonce_mode: str) -> None:
        settings = Settings(nonce_mode=nonce_mode, prices={ETH_1: "2000"})
        self.gateway = Gateway(settings, storage=store, entry_points=False, clock=lambda: NOW)
        self.owner = account("shop owner")
        self.client = SessionClient(account("shop session key"))
        body = json.dumps(registration_body(self.owner, self.client.key)).encode()
        assert self.send("POST", "/auth/register-pubkey", body, {}).status == 200

    def send(self, method: str, path: str, body: bytes, headers: dict[str, str]) -> Response:
        request = Request(method, path, headers=headers, body=body, raw_uri="/paycore" + path)
        return handle(self.gateway, request)

    def checkout(self, order: int, nonce: int) -> tuple[bytes, dict[str, str]]:
        """A signed POST /invoice, ready to send (or to capture and send again)."""
        body = json.dumps(
            {
                "value": "10",
                "chainId": 1,
                "acceptedTokens": [ETH_1],
                "description": f"order {order}",
                "address": account(f"deposit {order}").address,
            }
        ).encode()
        return body, self.client.headers("POST", "/invoice", body, nonce=nonce)

    def post(self, request: tuple[bytes, dict[str, str]]) -> Response:
        body, headers = request
        return self.send("POST", "/invoice", body, headers)

    def invoices(self) -> int:
        with self.gateway.storage.transaction() as tx:
            return tx.list_invoices(owner=self.owner.address)[1]


def statuses(responses: list[Response]) -> list[int]:
    return [r.status for r in responses]


@pytest.mark.parametrize("workers", [20, 200])
def test_parallel_checkouts_all_pass_in_window_mode(store: Storage, workers: int) -> None:
    shop = Shop(store, "window")
    # Date.now() nonces of requests started together: close, some equal, any arrival order.
    nonces = [DATE_NOW + i // 3 for i in range(workers)]
    random.Random(workers).shuffle(nonces)
    requests = [shop.checkout(i, nonces[i]) for i in range(workers)]
    answers = race(workers, lambda i: shop.post(requests[i]))
    assert statuses(answers) == [201] * workers, [r.body for r in answers if r.status != 201]
    assert shop.invoices() == workers


@pytest.mark.parametrize("workers", [20, 200])
def test_strict_mode_refuses_checkouts_that_arrive_out_of_order(
    store: Storage, workers: int
) -> None:
    shop = Shop(store, "strict")
    requests = [shop.checkout(i, DATE_NOW + i) for i in range(workers)]
    assert shop.post(requests[-1]).status == 201  # the newest one got there first
    answers = race(workers - 1, lambda i: shop.post(requests[i]))
    assert statuses(answers) == [401] * (workers - 1)
    assert {r.body for r in answers} == {
        b"session signature: nonce is not greater than the last accepted one"
    }
    # Sent together, as in the audit: some pass, the rest are refused, none twice.
    later = [shop.checkout(workers + i, DATE_NOW + workers + i) for i in range(workers)]
    answers = race(workers, lambda i: shop.post(later[i]))
    assert set(statuses(answers)) <= {201, 401}
    assert statuses(answers).count(201) >= 1
    assert shop.invoices() == 1 + statuses(answers).count(201)


@pytest.mark.parametrize("mode", ["window", "strict"])
def test_replays_in_the_window_are_refused_each_request_counted_once(
    store: Storage, mode: str
) -> None:
    """20 checkouts, each captured and sent 5 times at once: each is accepted exactly once."""
    shop = Shop(store, mode)
    requests = [shop.checkout(i, DATE_NOW + i) for i in range(20)]
    sends = [i % 20 for i in range(100)]
    random.Random(3).shuffle(sends)
    answers = race(100, lambda i: shop.post(requests[sends[i]]))
    accepted = sorted(sends[i] for i, r in enumerate(answers) if r.status == 201)
    refused = [r for r in answers if r.status != 201]
    assert all(r.status == 401 for r in refused)
    if mode == "window":
        assert accepted == list(range(20))
        assert {r.body for r in refused} == {
            b"session signature: this nonce was already accepted for this request (a replay)"
        }
    else:  # each at most once; out-of-order ones are refused as well
        assert len(set(accepted)) == len(accepted) >= 1
    assert shop.invoices() == len(accepted)
    # And afterwards, one by one: every captured request is refused.
    assert statuses([shop.post(r) for r in requests]) == [401] * 20


def test_the_same_millisecond_with_the_same_body_is_a_replay(store: Storage) -> None:
    """Two different checkouts in one millisecond pass; one request sent twice does not."""
    shop = Shop(store, "window")
    first, second = shop.checkout(1, DATE_NOW), shop.checkout(2, DATE_NOW)
    assert statuses([shop.post(first), shop.post(second), shop.post(first)]) == [201, 201, 401]
