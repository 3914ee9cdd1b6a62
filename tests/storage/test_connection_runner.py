"""``prepared.connection_runner`` on PostgreSQL keeps one psycopg cursor for every
statement of the held connection (psycopg builds each cursor in Python). The kept cursor
must answer each statement with its own rows, and survive a statement that failed: the
error wrapped as SQLAlchemy wraps it, the next statement answered as ever."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from sqlalchemy import create_engine
from sqlalchemy.engine import URL
from sqlalchemy.exc import DBAPIError

from paycore_storage.prepared import connection_runner

pytestmark = pytest.mark.postgres


@pytest.fixture
def held(postgres_schema: Callable[[], URL]) -> Iterator[tuple[Any, list[int]]]:
    engine = create_engine(postgres_schema())
    pooled = engine.raw_connection()
    dbapi: Any = pooled.dbapi_connection
    dbapi.autocommit = True
    made: list[int] = []
    cursor = dbapi.cursor

    def counted(*args: Any, **kwargs: Any) -> Any:
        made.append(1)
        return cursor(*args, **kwargs)

    dbapi.cursor = counted
    run = connection_runner(engine.dialect, dbapi, pooled.invalidate)
    try:
        yield run, made
    finally:
        pooled.invalidate()
        engine.dispose()


def test_one_cursor_answers_every_statement_with_its_own_rows(
    held: tuple[Any, list[int]],
) -> None:
    run, made = held
    assert run("SELECT %(n)s::int AS n", {"n": 1}) == [(1,)]
    assert run("SELECT generate_series(1, %(n)s)", {"n": 3}) == [(1,), (2,), (3,)]
    assert run("SELECT 'x' WHERE false", {}) == []
    assert len(made) == 1


def test_a_failed_statement_is_wrapped_and_the_next_one_answers(
    held: tuple[Any, list[int]],
) -> None:
    run, made = held
    with pytest.raises(DBAPIError, match="division by zero"):
        run("SELECT 1 / %(zero)s", {"zero": 0})
    assert run("SELECT %(n)s::int + 1", {"n": 41}) == [(42,)]
    assert len(made) == 1
