"""On PostgreSQL the statements paycore sends itself (``prepared.connection_runner``,
``prepared.on_dbapi``) go through one psycopg cursor kept on the connection
(``prepared.kept_cursor``: psycopg builds each cursor in Python). The kept cursor must
answer each statement with its own rows, and survive a statement that failed: the error
wrapped as SQLAlchemy wraps it, the next statement answered as ever."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from sqlalchemy import create_engine
from sqlalchemy.engine import URL
from sqlalchemy.exc import DBAPIError

from paycore_storage.prepared import _KEPT_ROWS, connection_runner, on_dbapi

pytestmark = pytest.mark.postgres


@pytest.fixture
def held(postgres_schema: Callable[[], URL]) -> Iterator[tuple[Any, list[int], Any]]:
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

    def direct(sql: str, arguments: Any) -> tuple[list[Any], Any]:
        return on_dbapi(engine.dialect, dbapi, sql, arguments, pooled.invalidate, describe=True)

    try:
        yield run, made, direct
    finally:
        pooled.invalidate()
        engine.dispose()


def test_one_cursor_answers_every_statement_with_its_own_rows(
    held: tuple[Any, list[int], Any],
) -> None:
    run, made, direct = held
    assert run("SELECT %(n)s::int AS n", {"n": 1}) == [(1,)]
    assert run("SELECT generate_series(1, %(n)s)", {"n": 3}) == [(1,), (2,), (3,)]
    rows, description = direct("SELECT %(a)s::text AS a, 2 AS b", {"a": "x"})
    assert rows == [("x", 2)] and [column.name for column in description] == ["a", "b"]
    assert run("SELECT 'x' WHERE false", {}) == []
    assert len(made) == 1


def test_a_failed_statement_is_wrapped_and_the_next_one_answers(
    held: tuple[Any, list[int], Any],
) -> None:
    run, made, direct = held
    with pytest.raises(DBAPIError, match="division by zero"):
        run("SELECT 1 / %(zero)s", {"zero": 0})
    assert run("SELECT %(n)s::int + 1", {"n": 41}) == [(42,)]
    with pytest.raises(DBAPIError, match="division by zero"):
        direct("SELECT 1 / %(zero)s", {"zero": 0})
    assert direct("SELECT %(n)s::int + 2", {"n": 40})[0] == [(42,)]
    assert len(made) == 1


def test_a_large_result_is_not_kept_with_the_connection(
    held: tuple[Any, list[int], Any],
) -> None:
    """A kept cursor holds its last result: after one of more than ``_KEPT_ROWS`` rows it
    is closed, and the next statement makes a new one."""
    run, made, direct = held
    rows, _ = direct("SELECT generate_series(1, %(n)s)", {"n": _KEPT_ROWS + 1})
    assert len(rows) == _KEPT_ROWS + 1
    assert len(made) == 1
    assert direct("SELECT %(n)s::int", {"n": 5})[0] == [(5,)]
    assert run("SELECT %(n)s::int", {"n": 6}) == [(6,)]
    assert len(made) == 2  # one new cursor, kept again
