"""Fixtures the event, webhook and worker tests share (tests/events, tests/webhooks,
tests/runtime import them in their conftest.py): storage on every backend, fresh SQL
databases for worker processes, and a live receiver.

PostgreSQL is found and isolated the way tests/storage does it (a schema per use, selected
through ``search_path`` and dropped at the end); an unreachable server skips its cases
unless ``PAYCORE_REQUIRE_POSTGRES=1``, as in CI, where it fails them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from events_helpers import Receiver
from sqlalchemy import text
from sqlalchemy.engine import URL

from paycore.storage import Storage
from paycore.storage.memory import MemoryStorage
from paycore_storage import SqlStorage
from paycore_storage.engine import database_url
from paycore_storage.tables import metadata

BACKENDS = ["memory", "sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
SQL_BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


@pytest.fixture(scope="session")
def shared_postgres_url(postgres_schema: Callable[[], URL]) -> URL:
    """One migrated schema for the in-process tests, emptied before each of them."""
    url = postgres_schema()
    store = SqlStorage(url)
    store.migrate()
    store.close()
    return url


def _emptied(store: SqlStorage) -> SqlStorage:
    names = ", ".join(f'"{table.name}"' for table in metadata.sorted_tables)
    with store.engine.begin() as connection:
        connection.execute(text(f"TRUNCATE {names} RESTART IDENTITY"))
    return store


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Storage]:
    """Storage on each backend, empty."""
    found: Storage
    if request.param == "memory":
        found = MemoryStorage()
    elif request.param == "sqlite":
        found = SqlStorage(f"sqlite:///{tmp_path / 'events.sqlite3'}")
    else:
        found = _emptied(SqlStorage(request.getfixturevalue("shared_postgres_url")))
    yield found
    found.close()


@pytest.fixture(params=SQL_BACKENDS)
def sql_url(request: pytest.FixtureRequest, tmp_path: Path) -> URL:
    """A fresh, migrated SQL database that worker processes can open too."""
    if request.param == "sqlite":
        url = database_url(f"sqlite:///{tmp_path / 'events.sqlite3'}")
    else:
        new_schema: Callable[[], URL] = request.getfixturevalue("postgres_schema")
        url = new_schema()
    store = SqlStorage(url)
    store.migrate()
    store.close()
    return url


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver()
    yield found
    found.close()
