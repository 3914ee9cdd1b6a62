"""Fixtures that hand every storage test the same contract on each backend.

``storage`` is parametrised over the in-memory store, SQLite in a temp file and a real
PostgreSQL, so one suite proves all of them honour ``paycore.storage``.

PostgreSQL: ``PAYCORE_TEST_POSTGRES_URL`` if set, else the local trust-auth server as
``postgres`` or ``root``. Each test session works in its own freshly created schema (selected
through ``search_path``) and drops it at the end, so runs never see each other's rows and
nothing is left behind. An unreachable server skips the PostgreSQL cases -- unless
``PAYCORE_REQUIRE_POSTGRES=1`` (CI), where a skip would hide a missing database, so they fail.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import URL

from paycore.storage import Storage
from paycore.storage.memory import MemoryStorage
from paycore.testing.storage_records import FakeClock
from paycore_storage import SqlStorage
from paycore_storage.engine import database_url
from paycore_storage.tables import metadata

BACKENDS = ["memory", "sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
SQL_BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(scope="session")
def postgres_url(postgres_schema: Callable[[], URL]) -> URL:
    """The session's schema for the contract suite; tests empty its tables, not recreate it."""
    return postgres_schema()


@pytest.fixture
def sql_url(request: pytest.FixtureRequest, tmp_path: Path) -> URL:
    """A database URL with no paycore tables yet, per SQL backend."""
    if request.param == "sqlite":
        return database_url(f"sqlite:///{tmp_path / 'paycore.sqlite3'}")
    new_schema: Callable[[], URL] = request.getfixturevalue("postgres_schema")
    return new_schema()


def _emptied(store: SqlStorage) -> SqlStorage:
    store.migrate()
    names = ", ".join(f'"{table.name}"' for table in metadata.sorted_tables)
    with store.engine.begin() as connection:
        connection.execute(text(f"TRUNCATE {names} RESTART IDENTITY"))
    return store


@pytest.fixture(params=BACKENDS)
def storage(request: pytest.FixtureRequest, clock: FakeClock, tmp_path: Path) -> Iterator[Storage]:
    store: Storage
    if request.param == "memory":
        store = MemoryStorage(clock=clock)
    elif request.param == "sqlite":
        store = SqlStorage(f"sqlite:///{tmp_path / 'paycore.sqlite3'}", clock=clock)
    else:
        store = _emptied(SqlStorage(request.getfixturevalue("postgres_url"), clock=clock))
    yield store
    store.close()
