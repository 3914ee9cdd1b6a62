"""``read_invoice``: an invoice and what joins it in one statement, decoded only on demand.

The public ``GET /invoice/{guid}`` is the checkout page's poll. It used to be a full
transaction -- ``BEGIN``, the invoice's ``SELECT``, for a paid invoice a second one for its
refunds, ``COMMIT`` -- and on SQLite ``BEGIN IMMEDIATE`` under this process's writer lock,
so every poll queued behind every write. Here it is one ``SELECT`` (the invoice's row left
joined to its refunds and its shown detected transfers, by the unique guid and their
indexes), sent in autocommit: on PostgreSQL one round trip; on a SQLite file a plain read
in WAL, which never waits for a writer and takes no lock of this process. On a SQLite
file the invoice's own row comes first, with a probe of each joined table, and the
joined read follows only when a probe finds a row (``_NARROW``): the same rows either way.

``version`` is a hash of the rows exactly as the driver returned them, before any JSON is
decoded or any decimal parsed: every column of the invoice's row (a column a later revision
adds to the table too) and of its refunds, so any change to what the record shows changes
it, and reading it costs no decoding. The decoding (``rows.invoice_from_row``) happens only
when the caller asks for the invoice.
"""

from __future__ import annotations

import hashlib
import io
import json
import pickle
from collections.abc import Callable
from typing import Any

from sqlalchemy import (
    JSON,
    Column,
    Dialect,
    Text,
    and_,
    bindparam,
    exists,
    func,
    literal_column,
    or_,
    select,
)
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.expression import FunctionElement, Join, Label
from sqlalchemy.types import TypeDecorator

from paycore.domain.machine import OPEN
from paycore.domain.records import Status
from paycore.storage.invoice_read import InvoiceRead, decoded_once, with_refunds

from .detected import detected_from_row
from .prepared import Prepared
from .rows import invoice_from_row, refund_from_row
from .tables import detected_transfers, invoices, refunds


class _JsonText(TypeDecorator[Any]):
    """A JSON column read as the text stored, decoded by the read's ``convert``: only when
    the invoice is decoded, as SQLAlchemy's JSON type decodes it on SQLite."""

    impl = Text
    cache_ok = True

    def process_result_value(self, value: Any, dialect: Dialect) -> Any:
        return None if value is None else json.loads(value)


class _as_text(FunctionElement[Any]):  # noqa: N801 -- a SQL construct, named as one
    """A JSON column as its stored text. psycopg decodes a ``json`` column on every fetch,
    where the checkout page's poll, an ETag's version and an answer already cached need
    none of it: four ``json.loads`` a read, the answer's encoding aside."""

    type = _JsonText()
    inherit_cache = True


@compiles(_as_text)
def _as_text_stored(element: _as_text, compiler: SQLCompiler, **kw: Any) -> str:
    return compiler.process(element.clauses, **kw)  # SQLite hands a JSON column's text over


@compiles(_as_text, "postgresql")
def _as_text_on_postgresql(element: _as_text, compiler: SQLCompiler, **kw: Any) -> str:
    return f"CAST({compiler.process(element.clauses, **kw)} AS TEXT)"


def _as_read(column: Column[Any], prefix: str = "") -> Column[Any] | Label[Any]:
    """``column`` as the read selects it, its name prefixed: a JSON one as its text."""
    if isinstance(column.type, JSON):
        return _as_text(column).label(prefix + column.name)
    return column.label(prefix + column.name) if prefix else column


#: An invoice's own columns (``seq`` is the database's numbering, not the record's).
_INVOICE_COLUMNS = [_as_read(column) for column in invoices.c if column.name != "seq"]
_REFUND_PREFIX = "refund_"
_REFUND_COLUMNS = [_as_read(column, _REFUND_PREFIX) for column in refunds.c if column.name != "seq"]
_STATUS = [c.name for c in _INVOICE_COLUMNS].index("status")
_DEADLINE = [c.name for c in _INVOICE_COLUMNS].index("deadline")
_REFUND_ID = len(_INVOICE_COLUMNS) + [c.name for c in _REFUND_COLUMNS].index("refund_id")

_DETECTED_PREFIX = "detected_"
_DETECTED_COLUMNS = [_as_read(column, _DETECTED_PREFIX) for column in detected_transfers.c]
_DETECTED_KEY = [
    len(_INVOICE_COLUMNS) + len(_REFUND_COLUMNS) + [c.name for c in detected_transfers.c].index(n)
    for n in ("chain_id", "tx_hash", "log_index", "token")
]
#: The statuses whose detected transfers the checkout page shows (as SQL literals: a
#: statement compiled once takes no expanding ``IN`` parameter).
_SHOWS_DETECTED = or_(
    *(invoices.c.status == literal_column(f"'{status.value}'") for status in sorted(OPEN))
)

#: The read's columns, in the order its rows hold them.
READ_COLUMNS: list[Column[Any] | Label[Any]] = [
    *_INVOICE_COLUMNS,
    *_REFUND_COLUMNS,
    *_DETECTED_COLUMNS,
]
#: The read's order: refunds by their numbering, then the detected transfers by block.
_READ_ORDER = (
    refunds.c.seq,
    detected_transfers.c.block_number,
    detected_transfers.c.tx_hash,
    detected_transfers.c.log_index,
    detected_transfers.c.token,
)
#: The tables the read joins to the invoice's row, each with its condition: the read joins
#: them, and its narrow form (``_NARROW``) asks whether any row of each joins, so a table
#: added here (its columns in ``READ_COLUMNS``) enters both.
_JOINED = (
    (refunds, refunds.c.guid == invoices.c.guid),
    (detected_transfers, and_(detected_transfers.c.guid == invoices.c.guid, _SHOWS_DETECTED)),
)


def _left_joined() -> Join:
    joined = invoices.outerjoin(*_JOINED[0])
    for table, on in _JOINED[1:]:
        joined = joined.outerjoin(table, on)
    return joined


_READ_FROM = _left_joined()
#: The label of :data:`NUMBERED_READ`'s last column, its rows' place in the read's order.
READ_ORDINAL = "read_ordinal"
#: The read as a subquery may hold it (``spend_nonce_then_read`` on PostgreSQL joins it
#: to the nonce's statement): its columns, then each row's place in the read's order, which
#: a subquery's ``ORDER BY`` would not promise to keep.
NUMBERED_READ = (
    select(
        *READ_COLUMNS,
        func.row_number().over(order_by=_READ_ORDER).label(READ_ORDINAL),
    )
    .select_from(_READ_FROM)
    .where(invoices.c.guid == bindparam("guid"))
)

_READ = Prepared(
    lambda _: (
        select(*READ_COLUMNS).select_from(_READ_FROM)
        .where(invoices.c.guid == bindparam("guid"))
        .order_by(*_READ_ORDER)
    ),
    READ_COLUMNS,
)  # fmt: skip


#: The read's narrow form, for a SQLite file: the invoice's own columns, then for each
#: joined table whether a row of it joins. Most invoices have no refund and no shown
#: detected transfer, and then the joined read's row is these columns and a ``NULL`` for
#: each of the other 33 -- which sqlite3 turns into Python values and describes anew on
#: every execution: 11.1 against 7.6 µs a statement here (12.4 with the read's sort),
#: where the floor's one-table ``SELECT`` is 7.7.
_PROBES = [exists().where(on).label(f"joins_{table.name}") for table, on in _JOINED]
_NARROW = Prepared(
    lambda _: select(*_INVOICE_COLUMNS, *_PROBES).where(invoices.c.guid == bindparam("guid")),
    [*_INVOICE_COLUMNS, *_PROBES],
)
_OWN = len(_INVOICE_COLUMNS)
#: What the joined read's row holds past the invoice's columns when nothing joins.
_NOTHING_JOINED = (None,) * (len(READ_COLUMNS) - _OWN)


def _part(row: dict[str, Any], prefix: str) -> dict[str, Any]:
    return {name[len(prefix) :]: value for name, value in row.items() if name.startswith(prefix)}


def read_on(
    dialect: Dialect, dbapi: Any, invalidate: Callable[[BaseException], None], guid: str
) -> InvoiceRead | None:
    """The read on ``dbapi`` (autocommit, or inside the caller's transaction): the
    invoice's row joined to its refunds and, while it is open, to its detected
    transfers (a paid or expired one shows none on the checkout page). One round trip
    where the detected transfers took a second: each refund's rows repeat every detected
    transfer, so both are taken once each, by their keys, in their order.

    On a SQLite file the invoice's own row is read first (``_NARROW``), and the joined read
    made only when it says something joins; the rows are then the joined read's to the
    last value, so the read's ``version`` is the same either way."""
    if dialect.name == "sqlite":
        narrow = _NARROW.raw(dialect, dbapi, invalidate, {"guid": guid})
        if not narrow:
            return None
        own = narrow[0]
        if not any(own[_OWN:]):
            return read_of_rows(
                guid, [own[:_OWN] + _NOTHING_JOINED], lambda _: _NARROW.convert(dialect, own)
            )
    rows = _READ.raw(dialect, dbapi, invalidate, {"guid": guid})
    return read_of_rows(guid, rows, lambda row: _READ.convert(dialect, row))


async def read_on_async(dialect: Dialect, cursor: Any, guid: str) -> InvoiceRead | None:
    """:func:`read_on`'s statement on the cursor of a psycopg ``AsyncConnection`` in
    autocommit (the checkout page's poll answered on an event loop: ``async_read``): the
    same SQL and arguments, the same rows, the same conversions, so the same
    :class:`InvoiceRead` (``version`` included). Driver errors leave as the driver raised
    them."""
    sql, arguments, describe = _READ.call(dialect, {"guid": guid})
    await cursor.execute(sql, arguments)
    rows = await cursor.fetchall()
    if rows and describe:
        _READ.learn(dialect, cursor.description)
    return read_of_rows(guid, rows, lambda row: _READ.convert(dialect, row))


def _version(rows: list[Any]) -> str:
    """The read's ``version``: a hash of its rows as the driver returned them, pickled in
    fast mode. Pickling is a faithful encoding (other values or types, other bytes) at half
    of ``repr``'s CPU with the hash (2 against 4.2 µs for an invoice's row), paid by every
    poll. Fast mode writes no memo, which would write an object met twice as a reference
    to the first: equal values then give equal bytes whether a driver shared their
    objects or not. (Rows are flat tuples, never self-referential, which fast mode would
    not survive.) Equal rows give equal versions as long as the processes serving them
    run one Python."""
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=5)
    pickler.fast = True
    pickler.dump(rows)
    return hashlib.blake2b(buffer.getvalue(), digest_size=12).hexdigest()


def read_of_rows(
    guid: str, rows: list[Any], convert: Callable[[Any], dict[str, Any]]
) -> InvoiceRead | None:
    """The :class:`InvoiceRead` of the read's rows as the driver returned them (the
    columns of ``READ_COLUMNS``, in order); ``convert`` turns one into column -> value
    (the columns' result processors). None for no rows: no such invoice."""
    if not rows:
        return None
    first = rows[0]
    detected_rows: list[Any] = []
    seen: set[tuple[Any, ...]] = set()
    for raw in rows:
        key = tuple(raw[i] for i in _DETECTED_KEY)
        if key[0] is not None and key not in seen:
            seen.add(key)
            detected_rows.append(raw)
    detected = tuple(
        detected_from_row(_part(convert(row), _DETECTED_PREFIX)) for row in detected_rows
    )

    def decode() -> Any:
        converted = [convert(row) for row in rows]
        invoice = invoice_from_row(converted[0])
        found: list[Any] = []
        taken: set[Any] = set()
        for raw, row in zip(rows, converted, strict=True):
            refund_id = raw[_REFUND_ID]
            if refund_id is not None and refund_id not in taken:
                taken.add(refund_id)
                found.append(refund_from_row(_part(row, _REFUND_PREFIX)))
        return with_refunds(invoice, found)

    return InvoiceRead(
        guid,
        Status(first[_STATUS]),
        int(first[_DEADLINE]),
        _version(rows),
        decoded_once(decode),
        detected,
    )
