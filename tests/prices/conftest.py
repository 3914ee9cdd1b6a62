"""Fixtures for the price tests: a CoinGecko look-alike on loopback, storage per backend."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from fake_coingecko import FakeCoinGecko, serve

from paycore.storage import Storage


@pytest.fixture
def coingecko() -> Iterator[FakeCoinGecko]:
    with serve() as fake:
        yield fake


BACKENDS = ["memory", "sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


@pytest.fixture(params=BACKENDS)
def price_storage(request: pytest.FixtureRequest, make_storage: Callable[..., Storage]) -> Storage:
    """The storage contract's price part, on each backend (PostgreSQL in its own schema)."""
    return make_storage(request.param)
