"""Fixtures: every test runs once per transport, each with a fresh gateway and clock."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import ExitStack
from typing import Any

import pytest
from conf_api import Api
from conf_env import CHECKOUT, PRICES, Env, FakeClock, MakeEnv, XfailFor
from conf_transport import TRANSPORTS, adapter_missing, open_transport

from paycore.config import Settings
from paycore.gateway import Gateway


@pytest.fixture(params=TRANSPORTS)
def transport_name(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    reason = adapter_missing(name)
    if reason is not None:
        pytest.skip(reason)
    return name


@pytest.fixture
def make_env(transport_name: str) -> Iterator[MakeEnv]:
    """Build an Env with Settings overrides; several per test are allowed (strict vs soft)."""
    stack = ExitStack()

    def make(**overrides: Any) -> Env:
        clock = FakeClock()
        values: dict[str, Any] = {
            "database_url": "memory://",
            "prices": PRICES,
            "checkout_url": CHECKOUT,
        }
        values.update(overrides)
        gateway = Gateway(Settings(**values), entry_points=False, clock=clock)
        stack.callback(gateway.close)
        transport = stack.enter_context(open_transport(transport_name, gateway))
        return Env(Api(transport), gateway, clock)

    with stack:
        yield make


@pytest.fixture
def env(make_env: MakeEnv) -> Env:
    """Strict auth, defaults otherwise."""
    return make_env()


@pytest.fixture(params=["strict", "soft"])
def mode(request: pytest.FixtureRequest) -> str:
    value: str = request.param
    return value


@pytest.fixture
def mode_env(make_env: MakeEnv, mode: str) -> Env:
    return make_env(auth_mode=mode)


@pytest.fixture
def xfail_for(request: pytest.FixtureRequest, transport_name: str) -> XfailFor:
    """Mark this test as a known, strict failure on the named transports (a reported bug)."""

    def mark(reasons: Mapping[str, str]) -> None:
        if transport_name in reasons:
            request.node.add_marker(pytest.mark.xfail(strict=True, reason=reasons[transport_name]))

    return mark
