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

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import URL
from storage_records import FakeClock

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


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def _first_reachable(candidates: list[str]) -> tuple[URL | None, list[str]]:
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
    """The URL of a reachable PostgreSQL (skip, or fail when required, if there is none)."""
    override = os.environ.get("PAYCORE_TEST_POSTGRES_URL")
    url, errors = _first_reachable([override] if override else list(DEFAULT_POSTGRES_URLS))
    if url is None:
        reason = "PostgreSQL unreachable: " + "; ".join(errors)
        if os.environ.get("PAYCORE_REQUIRE_POSTGRES", "").lower() in ("1", "true", "yes"):
            pytest.fail(reason + " (PAYCORE_REQUIRE_POSTGRES is set)", pytrace=False)
        pytest.skip(reason)
    return url


@pytest.fixture(scope="session")
def postgres_schema(postgres_server: URL) -> Iterator[Callable[[], URL]]:
    """A factory of URLs each pointing at a new, empty schema; all dropped at session end."""
    admin = create_engine(postgres_server)
    created: list[str] = []

    def new_schema() -> URL:
        name = f"paycore_test_{uuid.uuid4().hex[:16]}"
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
