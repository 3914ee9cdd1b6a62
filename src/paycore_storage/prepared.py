"""Statements of the request path, compiled once per database and run on the driver.

SQLAlchemy Core builds, caches and compiles a statement on every ``execute``: building the
clause objects, computing the cache key and (for an ``INSERT .. ON CONFLICT .. RETURNING``,
which its cache does not keep) compiling anew cost more CPU per signed request than the
database's own work. A :class:`Prepared` statement is written once in Core, with named
``bindparam``s, compiled once per dialect, and then sent to the DBAPI cursor as it is, with
the same bind and result conversions SQLAlchemy would apply (the column types' own
processors: exact decimals as text on SQLite, JSON both ways). PostgreSQL's driver then
prepares it server-side after a few uses, so it is not even parsed again.

A driver error is wrapped and a connection it broke invalidated just as SQLAlchemy does it
(:func:`on_driver`), so ``engine.unavailable`` still tells an outage from a bug and the pool
never hands a dead connection out again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs
from sqlalchemy import Column, Connection, Dialect
from sqlalchemy.exc import DBAPIError, StatementError
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.expression import ClauseElement, Label

Process = Callable[[Any], Any]


@attrs.define
class _Compiled:
    sql: str
    #: Bind names in the order a positional driver (sqlite3's ``?``) takes them; None for a
    #: driver that takes them by name (psycopg's ``%(name)s``).
    order: tuple[str, ...] | None
    binds: Mapping[str, Process]
    #: Each returned column's name and conversion; known after the first execution, since a
    #: conversion may depend on the type the driver reports (psycopg's numeric codes).
    results: tuple[tuple[str, Process | None], ...] | None = None

    def arguments(self, params: Mapping[str, Any]) -> Any:
        """``params`` as the driver takes them: each value through its type's bind
        processor, by name or in the positional order."""
        binds = self.binds
        values = {name: (binds[name](v) if name in binds else v) for name, v in params.items()}
        return values if self.order is None else tuple(values[n] for n in self.order)


class Prepared:
    """One statement: ``build(dialect)`` gives it in Core (named ``bindparam``s), and
    ``columns`` are the ones it returns, in order (none for a statement without rows)."""

    def __init__(
        self,
        build: Callable[[Dialect], ClauseElement],
        columns: Iterable[Column[Any] | Label[Any]] = (),
    ) -> None:
        self._build = build
        self._columns = tuple(columns)
        self._compiled: dict[str, _Compiled] = {}
        self._lock = threading.Lock()

    def _for(self, dialect: Dialect) -> _Compiled:
        found = self._compiled.get(dialect.name)
        if found is not None:
            return found
        with self._lock:
            compiled = self._build(dialect).compile(dialect=dialect)
            assert isinstance(compiled, SQLCompiler)
            binds = {}
            for name, bind in compiled.binds.items():
                process = bind.type.dialect_impl(dialect).bind_processor(dialect)
                if process is not None:
                    binds[name] = process
            order = tuple(compiled.positiontup or ()) if compiled.positional else None
            found = _Compiled(compiled.string, order, binds)
            self._compiled[dialect.name] = found
        return found

    def compiled(self, dialect: Dialect) -> _Compiled:
        """The statement as ``dialect``'s driver takes it, with its binds' conversions:
        for a statement another one embeds (``signed_create``)."""
        return self._for(dialect)

    def rows(self, connection: Connection, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Run it in ``connection``'s transaction; the returned rows as column -> value."""
        compiled = self._for(connection.dialect)
        arguments = compiled.arguments(params)
        first = compiled.results is None
        fetched, description = on_driver(
            connection, compiled.sql, arguments, fetch=bool(self._columns), describe=first
        )
        if fetched and first:
            compiled.results = self._results(connection.dialect, description)
        results = compiled.results or ()
        return [
            {
                name: (value if process is None else process(value))
                for (name, process), value in zip(results, row, strict=True)
            }
            for row in fetched
        ]

    def raw(
        self,
        dialect: Dialect,
        dbapi: Any,
        invalidate: Callable[[BaseException], None],
        params: Mapping[str, Any],
    ) -> list[Any]:
        """Run it on a DBAPI connection (in whatever transaction, or autocommit, that
        connection is in); the rows as the driver returned them, each turned into column
        -> value by :meth:`convert` when the caller needs it -- and only then."""
        compiled = self._for(dialect)
        first = compiled.results is None
        fetched, description = on_dbapi(
            dialect, dbapi, compiled.sql, compiled.arguments(params), invalidate,
            fetch=True, describe=first,
        )  # fmt: skip
        if fetched and first:
            compiled.results = self._results(dialect, description)
        return fetched

    def call(self, dialect: Dialect, params: Mapping[str, Any]) -> tuple[str, Any, bool]:
        """What :meth:`raw` sends, for a caller that runs it on a driver connection of its
        own (an ``AsyncConnection``: ``invoice_read.read_on_async``): the SQL, the
        arguments, and whether the result conversions are still to be learned from the
        cursor's description (then pass it to :meth:`learn`)."""
        compiled = self._for(dialect)
        return compiled.sql, compiled.arguments(params), compiled.results is None

    def learn(self, dialect: Dialect, description: Sequence[Sequence[Any]]) -> None:
        """Keep the result conversions of a first execution made through :meth:`call`."""
        compiled = self._for(dialect)
        if compiled.results is None:
            compiled.results = self._results(dialect, description)

    def convert(self, dialect: Dialect, row: Sequence[Any]) -> dict[str, Any]:
        """One row of :meth:`raw` as :meth:`rows` would have returned it."""
        results = self._for(dialect).results or ()
        return {
            name: (value if process is None else process(value))
            for (name, process), value in zip(results, row, strict=True)
        }

    def run_many(self, connection: Connection, rows: Sequence[Mapping[str, Any]]) -> int:
        """Run it once per row of ``rows`` (the driver's ``executemany``: sqlite3 loops in C,
        psycopg pipelines) in ``connection``'s transaction; the rows it changed, summed.
        For a statement that returns nothing: a bulk insert or update."""
        compiled = self._for(connection.dialect)
        arguments = [compiled.arguments(params) for params in rows]
        dbapi = connection.connection.dbapi_connection
        dialect = connection.dialect
        cursor: Any = dbapi.cursor()  # type: ignore[union-attr]
        try:
            cursor.executemany(compiled.sql, arguments)
            count: int = cursor.rowcount
            return count
        except Exception as error:
            invalidate = connection.invalidate
            wrapped = _wrapped(error, dialect, dbapi, cursor, compiled.sql, None, invalidate)
            if wrapped is None:
                raise
            raise wrapped from error
        finally:
            cursor.close()

    def _results(
        self, dialect: Dialect, description: Sequence[Sequence[Any]]
    ) -> tuple[tuple[str, Process | None], ...]:
        return tuple(
            (column.name, column.type.dialect_impl(dialect).result_processor(dialect, kind[1]))
            for column, kind in zip(self._columns, description, strict=True)
        )


def on_driver(
    connection: Connection,
    sql: str,
    arguments: Any,
    *,
    fetch: bool = True,
    describe: bool = False,
) -> tuple[list[Any], Any]:
    """Run ``sql`` (in the driver's own parameter style) on ``connection``'s DBAPI cursor,
    inside its transaction: the rows (all fetched, so no statement stays open; none when
    ``fetch`` is off, for a statement that returns none) and, when ``describe``, the
    cursor's description (psycopg builds it anew on each asking, at a cost per column). A
    driver error leaves as SQLAlchemy's wrapper of it, and a connection it broke is
    invalidated, as SQLAlchemy's own ``execute`` would do."""
    dbapi = connection.connection.dbapi_connection
    return on_dbapi(
        connection.dialect, dbapi, sql, arguments, connection.invalidate,
        fetch=fetch, describe=describe,
    )  # fmt: skip


def on_dbapi(
    dialect: Dialect,
    dbapi: Any,
    sql: str,
    arguments: Any,
    invalidate: Callable[[BaseException], None],
    *,
    fetch: bool = True,
    describe: bool = False,
) -> tuple[list[Any], Any]:
    """:func:`on_driver` for a DBAPI connection held without a SQLAlchemy ``Connection``
    (a pooled one from ``Engine.raw_connection``); ``invalidate`` retires it. On psycopg
    the statement goes through the connection's kept cursor (:func:`kept_cursor`)."""
    postgres = dialect.name == "postgresql"
    cursor = kept_cursor(dbapi) if postgres else dbapi.cursor()
    try:
        cursor.execute(sql, arguments)
        rows = cursor.fetchall() if fetch else []
        described = cursor.description if describe else None
        if postgres and len(rows) > _KEPT_ROWS:
            _drop_kept(dbapi)
        return rows, described
    except Exception as error:
        wrapped = _wrapped(error, dialect, dbapi, cursor, sql, arguments, invalidate)
        if wrapped is None:
            raise
        raise wrapped from error
    finally:
        if not postgres:
            cursor.close()


#: Where a psycopg connection keeps paycore's cursor (:func:`kept_cursor`).
_KEPT = "_paycore_kept_cursor"
#: A kept cursor holds its last result until the next statement: one with more rows than
#: this (a watcher's batch, a page) closes it, so an idle pooled connection holds no
#: copy of a large result.
_KEPT_ROWS = 64


def kept_cursor(dbapi: Any) -> Any:
    """The one cursor paycore keeps on a psycopg connection for the statements it sends
    itself (:func:`on_dbapi`, :func:`connection_runner`). psycopg builds a cursor in
    Python, its adapters' map copied and its state set up: 8 µs of a statement's CPU
    here, where one cursor serves them all -- a connection runs its holder's statements
    one at a time, and each is fetched whole before the next is sent. Kept on the
    connection itself, so that it goes where the connection goes: a connection the pool
    discards takes it along, a new one makes its own."""
    found = getattr(dbapi, _KEPT, None)
    if found is None:
        found = dbapi.cursor()
        setattr(dbapi, _KEPT, found)
    return found


def _drop_kept(dbapi: Any) -> None:
    found = getattr(dbapi, _KEPT, None)
    if found is not None:
        delattr(dbapi, _KEPT)
        found.close()


def connection_runner(
    dialect: Dialect, dbapi: Any, invalidate: Callable[[BaseException], None]
) -> Callable[..., list[Any]]:
    """``run(sql, arguments, fetch=True) -> rows`` on one DBAPI connection, made once and
    kept with it: :func:`on_dbapi` without a cursor to open and close for each statement
    (sqlite3's ``execute`` opens one in C; psycopg's is the kept one), errors wrapped and
    a broken connection retired the same way. ``fetch`` is there for ``_Run``'s
    signature: a statement that returns no rows fetches an empty list at no cost."""
    postgres = dialect.name == "postgresql"

    def run(sql: str, arguments: Any, fetch: bool = True) -> list[Any]:
        try:
            cursor = kept_cursor(dbapi) if postgres else dbapi
            rows: list[Any] = cursor.execute(sql, arguments).fetchall()
            return rows
        except Exception as error:
            wrapped = _wrapped(error, dialect, dbapi, None, sql, arguments, invalidate)
            if wrapped is None:
                raise
            raise wrapped from error

    return run


def _wrapped(
    error: Exception,
    dialect: Dialect,
    dbapi: Any,
    cursor: Any,
    sql: str,
    arguments: Any,
    invalidate: Callable[[BaseException], None],
) -> StatementError | None:
    """A driver's error as SQLAlchemy's wrapper of it (``None`` for any other error), the
    connection invalidated first when the error broke it."""
    base = dialect.loaded_dbapi.Error
    if not isinstance(error, base):
        return None
    broken = dialect.is_disconnect(error, dbapi, cursor)
    if broken:
        invalidate(error)
    return DBAPIError.instance(
        sql, arguments, error, base, connection_invalidated=broken, dialect=dialect
    )


def copy_rows(
    connection: Connection, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]
) -> None:
    """PostgreSQL: ``COPY table (columns) FROM STDIN`` of ``rows`` (Python values, ``None``
    for NULL) on ``connection``'s DBAPI connection, inside its transaction: the bulk path for
    thousands of rows, several times faster than any ``INSERT`` psycopg can send. Errors
    leave as :func:`on_driver`'s do."""
    dbapi: Any = connection.connection.dbapi_connection
    names = ", ".join(columns)
    sql = f"COPY {table} ({names}) FROM STDIN"
    cursor = dbapi.cursor()
    try:
        with cursor.copy(sql) as copy:
            for row in rows:
                copy.write_row(row)
    except Exception as error:
        dialect, invalidate = connection.dialect, connection.invalidate
        wrapped = _wrapped(error, dialect, dbapi, cursor, sql, None, invalidate)
        if wrapped is None:
            raise
        raise wrapped from error
    finally:
        cursor.close()
