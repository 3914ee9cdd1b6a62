"""``spend_nonce_then_read``: a signed ``GET /invoice/{guid}``'s two storage calls in one.

A signed read spends its nonce (``SqlStorage.spend_nonce``) and then reads the invoice
(``SqlStorage.read_invoice``): two pooled connections' checkouts and, on PostgreSQL, two
round trips, each with psycopg's Python around it. Here, on PostgreSQL, they are one
statement: the spend's data-modifying CTEs, then the numbered read
(``invoice_read.NUMBERED_READ``) joined ``LATERAL`` to the key the spend returned. The
spend commits with the statement (autocommit), durably, before the answer comes back; a
refused or replayed nonce returns no row, so nothing is read and nothing changed -- the
``INSERT .. ON CONFLICT DO NOTHING`` refused the message, exactly as the spend alone does.
The read sees the database as the statement began, which is what a read sent just before
it would have seen. On a SQLite file the two run one after the other on one pooled
connection: the spend in its ``BEGIN IMMEDIATE`` transaction, committed, then the read in
autocommit (WAL: it takes no lock).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import Any

from sqlalchemy import Dialect

from paycore.domain.records import SessionKey
from paycore.storage.invoice_read import InvoiceRead

from .auth import _KEY_NAMES, _SPEND
from .invoice_read import NUMBERED_READ, READ_COLUMNS, READ_ORDINAL, read_of_rows
from .prepared import on_dbapi

_KEYS = len(_KEY_NAMES)
_READS = len(READ_COLUMNS)
#: Where the invoice's guid sits in a row of the read: NULL when the spend found no invoice.
_GUID = _KEYS + [c.name for c in READ_COLUMNS].index("guid")


class _Statement:
    """The PostgreSQL statement for one nonce mode, and the read's result conversions
    (known after the first row comes back: they depend on the types psycopg reports)."""

    def __init__(self, dialect: Dialect, strict: bool) -> None:
        # The spend's CTEs (up to the last one's closing parenthesis), and its final
        # SELECT of the key, which becomes the CTE ``spent``.
        found = re.fullmatch(r"(.*\))\s*SELECT\s+(.*)", _SPEND[(True, strict)][0].strip(), re.S)
        assert found is not None
        head, last = found.groups()
        read = str(NUMBERED_READ.compile(dialect=dialect))
        self.sql = (
            f"{head.rstrip()}, spent AS (SELECT {last})\n"
            f"SELECT spent.*, read.* FROM spent LEFT JOIN LATERAL ({read}) AS read ON true\n"
            f"ORDER BY read.{READ_ORDINAL}"
        )
        self._dialect = dialect
        self._processors: list[Callable[[Any], Any] | None] | None = None
        self._lock = threading.Lock()

    def convert(self, description: Any) -> Callable[[Any], dict[str, Any]]:
        """Turn one row's read part into column -> value, as ``read_invoice`` does."""
        if self._processors is None:
            with self._lock:
                self._processors = [
                    column.type.dialect_impl(self._dialect).result_processor(self._dialect, kind[1])
                    for column, kind in zip(
                        READ_COLUMNS, description[_KEYS : _KEYS + _READS], strict=True
                    )
                ]
        processors = self._processors
        names = [column.name for column in READ_COLUMNS]
        return lambda row: {
            name: (value if process is None else process(value))
            for name, process, value in zip(names, processors, row, strict=True)
        }


_STATEMENTS: dict[bool, _Statement] = {}
_STATEMENTS_LOCK = threading.Lock()


def spend_then_read_on_postgres(
    dialect: Dialect,
    dbapi: Any,
    invalidate: Callable[[BaseException], None],
    params: dict[str, Any],
    strict: bool,
    guid: str,
) -> tuple[SessionKey | None, InvoiceRead | None]:
    """The one statement on ``dbapi``, in autocommit (the caller's)."""
    statement = _statement(dialect, strict)
    rows, description = on_dbapi(
        dialect, dbapi, statement.sql, {**params, "guid": guid}, invalidate,
        describe=statement._processors is None,
    )  # fmt: skip
    return _of_rows(statement, rows, description, guid)


async def spend_then_read_on_postgres_async(
    dialect: Dialect, cursor: Any, params: dict[str, Any], strict: bool, guid: str
) -> tuple[SessionKey | None, InvoiceRead | None]:
    """:func:`spend_then_read_on_postgres` on the cursor of a psycopg ``AsyncConnection``
    in autocommit (a signed read answered on an event loop:
    ``AsyncReads.spend_nonce_then_read``): the same statement, arguments and conversions,
    so the same key and ``InvoiceRead``. Driver errors leave as the driver raised them."""
    statement = _statement(dialect, strict)
    await cursor.execute(statement.sql, {**params, "guid": guid})
    rows = await cursor.fetchall()
    description = cursor.description if statement._processors is None else None
    return _of_rows(statement, rows, description, guid)


def _statement(dialect: Dialect, strict: bool) -> _Statement:
    statement = _STATEMENTS.get(strict)
    if statement is None:
        with _STATEMENTS_LOCK:
            statement = _STATEMENTS.setdefault(strict, _Statement(dialect, strict))
    return statement


def _of_rows(
    statement: _Statement, rows: list[Any], description: Any, guid: str
) -> tuple[SessionKey | None, InvoiceRead | None]:
    """The key and the read of the statement's rows (``description`` needed on the first
    rows only, before the conversions are known)."""
    if not rows:
        return None, None  # refused: nothing was spent, nothing read
    key = SessionKey(**dict(zip(_KEY_NAMES, rows[0][:_KEYS], strict=True)))
    if rows[0][_GUID] is None:
        return key, None  # spent; no such invoice
    convert = statement.convert(description)
    read = read_of_rows(guid, [row[_KEYS : _KEYS + _READS] for row in rows], convert)
    return key, read
