"""Fixtures for the price tests: a CoinGecko look-alike on loopback, storage per backend."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fake_coingecko import FakeCoinGecko, serve
from sqlalchemy.engine import URL

from paycore.storage import Storage
from paycore.storage.memory import MemoryStorage
from paycore_storage import SqlStorage


@pytest.fixture
def coingecko() -> Iterator[FakeCoinGecko]:
    with serve() as fake:
        yield fake


BACKENDS = ["memory", "sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


@pytest.fixture(params=BACKENDS)
def price_storage(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Storage]:
    """The storage contract's price part, on each backend (PostgreSQL in its own schema)."""
    store: Storage
    if request.param == "memory":
        store = MemoryStorage()
    elif request.param == "sqlite":
        store = SqlStorage(f"sqlite:///{tmp_path / 'prices.sqlite3'}")
    else:
        new_schema: Callable[[], URL] = request.getfixturevalue("postgres_schema")
        store = SqlStorage(new_schema())
    yield store
    store.close()
