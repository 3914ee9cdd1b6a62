"""Fixtures for the GET /ws tests: a gateway on a movable clock served by each adapter's
real server, a registered session key, and the real Redis at 127.0.0.1:6379.

Redis is skipped when unreachable unless ``PAYCORE_REQUIRE_REDIS=1`` (CI), where a skip
would hide a missing service, so it fails instead. Each test gets its own channel, so
tests (and developers' other processes) sharing that Redis never see each other's events.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest
from eth_account.signers.local import LocalAccount
from realtime_helpers import (
    FRAMEWORKS,
    PREFIX,
    Clock,
    Merchant,
    Nonces,
    account,
    make_gateway,
    registration,
    served,
)

from paycore import Gateway


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def gateway(clock: Clock) -> Iterator[Gateway]:
    gw = make_gateway(clock)
    yield gw
    gw.close()


@pytest.fixture(params=FRAMEWORKS)
def framework(request: pytest.FixtureRequest) -> str:
    param: str = request.param
    return param


@pytest.fixture
def server(framework: str, gateway: Gateway) -> Iterator[str]:
    with served(framework, gateway) as base:
        yield base


@pytest.fixture
def owner() -> LocalAccount:
    return account("realtime owner")


@pytest.fixture
def key() -> LocalAccount:
    return account("realtime session key")


@pytest.fixture
def nonces() -> Nonces:
    return Nonces()


@pytest.fixture
def registered(server: str, owner: LocalAccount, key: LocalAccount) -> LocalAccount:
    """``key`` registered for ``owner`` over HTTP on the server under test."""
    answer = httpx.post(server + PREFIX + "/auth/register-pubkey", json=registration(owner, key))
    assert answer.status_code == 200, answer.text
    return key


@pytest.fixture
def merchant(gateway: Gateway, owner: LocalAccount) -> Merchant:
    return Merchant(gateway, owner)


@pytest.fixture
def channel() -> str:
    return f"paycore:test:{uuid.uuid4().hex}"
