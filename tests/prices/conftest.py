"""Fixtures for the price tests: a CoinGecko look-alike on loopback."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fake_coingecko import FakeCoinGecko, serve


@pytest.fixture
def coingecko() -> Iterator[FakeCoinGecko]:
    with serve() as fake:
        yield fake
