"""Fixtures shared by every test folder: a real PostgreSQL, isolated per use; and the markers
of the slow tiers.

Markers (registered in pyproject.toml): ``browser``, ``anvil``, ``postgres``, ``redis``,
``fuzz``, ``node`` and ``slow``. A test that uses the fixture of a service is marked here, by
the fixtures it uses (directly or through other fixtures), so a new test cannot forget its
marker: ``anvil_chain`` -> anvil, ``postgres_server``/``postgres_schema`` -> postgres,
``redis_url`` -> redis. Backends chosen by a parameter carry their mark on the parameter
(``pytest.param("postgresql", marks=pytest.mark.postgres)``); whole modules (the browser,
the fuzzer, subprocess tests) say theirs in ``pytestmark``. ``make test-fast`` deselects every
tier: ``-m "not (browser or anvil or postgres or redis or fuzz or node or slow)"``.

PostgreSQL: ``PAYCORE_TEST_POSTGRES_URL`` if set, else the local trust-auth server as
``postgres`` or ``root``. Each use gets a freshly created schema (selected through
``search_path``), dropped at the end of the session, so runs never see each other's rows.
An unreachable server skips the PostgreSQL cases, unless ``PAYCORE_REQUIRE_POSTGRES=1``
(as in CI), where a skip would hide a missing database, so they fail.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import URL

from paycore_storage.engine import database_url

if TYPE_CHECKING:
    from paycore.storage import Storage

DEFAULT_POSTGRES_URLS = (
    "postgresql://postgres@127.0.0.1:5432/test",
    "postgresql://root@127.0.0.1:5432/test",
)


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
    # One transaction per schema: dropping them all in one takes a lock per table of every
    # schema, which outgrows max_locks_per_transaction once a session has made enough.
    for name in created:
        with admin.begin() as connection:
            connection.execute(text(f'DROP SCHEMA IF EXISTS "{name}" CASCADE'))
    admin.dispose()


#: Fixture name -> the marker of the service it needs.
SERVICE_FIXTURES = {
    "anvil_chain": "anvil",
    "postgres_server": "postgres",
    "postgres_schema": "postgres",
    "redis_url": "redis",
}


@pytest.fixture(scope="session")
def redis_url() -> str:
    """A reachable Redis (``PAYCORE_TEST_REDIS_URL``, else the local one); the test is
    skipped without one, and fails with ``PAYCORE_REQUIRE_REDIS=1``, as ``.ci/run`` sets."""
    import redis

    url = os.environ.get("PAYCORE_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=2)
        client.ping()
        client.close()
    except redis.RedisError as exc:
        reason = f"Redis unreachable at {url}: {exc}"
        if os.environ.get("PAYCORE_REQUIRE_REDIS", "") == "1":
            pytest.fail(reason + " (PAYCORE_REQUIRE_REDIS=1)", pytrace=False)
        pytest.skip(reason)
    return url


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        for fixture, marker in SERVICE_FIXTURES.items():
            if fixture in used and item.get_closest_marker(marker) is None:
                item.add_marker(marker)


#: A storage factory: backend name ("memory", "sqlite", "postgres"/"postgresql") -> Storage.
MakeStorage = Callable[..., "Storage"]


@pytest.fixture
def make_storage(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MakeStorage]:
    """One storage per backend for fixtures parametrised over backends: memory, a SQLite
    file in the test's tmp_path, or a fresh PostgreSQL schema (asked for only then, so a
    memory or SQLite case never needs a server). Everything made is closed at teardown."""
    from paycore.storage.memory import MemoryStorage
    from paycore_storage.sql import SqlStorage

    made: list[Storage] = []

    def make(backend: str, **sql_options: object) -> Storage:
        store: Storage
        if backend == "memory":
            store = MemoryStorage()
        elif backend == "sqlite":
            store = SqlStorage(f"sqlite:///{tmp_path / 'paycore.sqlite3'}", **sql_options)
        else:
            new_schema: Callable[[], URL] = request.getfixturevalue("postgres_schema")
            store = SqlStorage(new_schema(), **sql_options)
        made.append(store)
        return store

    yield make
    for store in made:
        store.close()


class _DiesInBatch:
    """A storage that raises in its ``at``-th bulk write of transaction rows, once the rows
    are written but before the transaction commits: what a watcher process killed in the
    middle of a batch leaves behind. Every other call goes to the real storage."""

    def __init__(self, inner: Storage, at: int) -> None:
        self.inner = inner
        self.at = at
        self.batches = 0

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        with self.inner.transaction() as tx:
            yield _DyingTx(tx, self)

    def close(self) -> None:
        self.inner.close()


class _DyingTx:
    def __init__(self, tx: Any, storage: _DiesInBatch) -> None:
        self._tx = tx
        self._storage = storage

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tx, name)

    def insert_transactions(self, records: Any) -> Any:
        written = self._tx.insert_transactions(records)
        if records:
            self._storage.batches += 1
            if self._storage.batches == self._storage.at:
                raise RuntimeError(f"killed in batch {self._storage.at}")
        return written


@pytest.fixture
def dies_in_batch() -> Callable[[Storage, int], Storage]:
    """``dies_in_batch(storage, n)``: ``storage`` whose ``n``-th batch of deposit rows
    raises ``RuntimeError("killed in batch n")`` before it commits (the watcher tests'
    stand-in for a process killed mid-range); later batches go through."""

    def wrap(storage: Storage, at: int) -> Storage:
        return _DiesInBatch(storage, at)

    return wrap
