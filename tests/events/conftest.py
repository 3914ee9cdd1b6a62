"""Fixtures for the webhook tests: storage on every backend, fresh SQL databases for worker
processes, and a live receiver.

PostgreSQL is found and isolated the way tests/storage does it (a schema per use, selected
through ``search_path`` and dropped at the end); an unreachable server skips its cases
unless ``PAYCORE_REQUIRE_POSTGRES=1``, as in CI, where it fails them.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from events_helpers import Receiver
from sqlalchemy import create_engine, text
from sqlalchemy.engine import URL

from paycore.memory import MemoryStorage
from paycore.storage import Storage
from paycore_storage import SqlStorage
from paycore_storage.engine import database_url
from paycore_storage.tables import metadata

DEFAULT_POSTGRES_URLS = (
    "postgresql://postgres@127.0.0.1:5432/test",
    "postgresql://root@127.0.0.1:5432/test",
)
BACKENDS = ["memory", "sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
SQL_BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


def _reachable(candidates: list[str]) -> tuple[URL | None, list[str]]:
    errors: list[str] = []
    for candidate in candidates:
        url = database_url(candidate)
        engine = create_engine(url, connect_args={"connect_timeout": 3})
        try:
            with engine.connect() as connection:
                connection.execute(text("SELECT 1"))
            return url, errors
        except Exception as exc:  # any failure to connect means "not this one"
            errors.append(f"{url.render_as_string(hide_password=True)}: {exc}".splitlines()[0])
        finally:
            engine.dispose()
    return None, errors


@pytest.fixture(scope="session")
def postgres_server() -> URL:
    override = os.environ.get("PAYCORE_TEST_POSTGRES_URL")
    url, errors = _reachable([override] if override else list(DEFAULT_POSTGRES_URLS))
    if url is None:
        reason = "PostgreSQL unreachable: " + "; ".join(errors)
        if os.environ.get("PAYCORE_REQUIRE_POSTGRES", "").lower() in ("1", "true", "yes"):
            pytest.fail(reason + " (PAYCORE_REQUIRE_POSTGRES is set)", pytrace=False)
        pytest.skip(reason)
    return url


@pytest.fixture(scope="session")
def postgres_schema(postgres_server: URL) -> Iterator[Callable[[], URL]]:
    """A factory of URLs, each on a new empty schema; all dropped at session end."""
    admin = create_engine(postgres_server)
    created: list[str] = []

    def new_schema() -> URL:
        name = f"paycore_events_{uuid.uuid4().hex[:16]}"
        with admin.begin() as connection:
            connection.execute(text(f'CREATE SCHEMA "{name}"'))
        created.append(name)
        return postgres_server.update_query_dict({"options": f"-csearch_path={name}"})

    yield new_schema
    with admin.begin() as connection:
        for name in created:
            connection.execute(text(f'DROP SCHEMA IF EXISTS "{name}" CASCADE'))
    admin.dispose()


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
