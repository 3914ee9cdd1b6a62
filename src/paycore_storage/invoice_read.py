"""``read_invoice``: an invoice and its refunds in one statement, decoded only on demand.

The public ``GET /invoice/{guid}`` is the checkout page's poll. It used to be a full
transaction -- ``BEGIN``, the invoice's ``SELECT``, for a paid invoice a second one for its
refunds, ``COMMIT`` -- and on SQLite ``BEGIN IMMEDIATE`` under this process's writer lock,
so every poll queued behind every write. Here it is one ``SELECT`` (the invoice's row left
joined to its refunds, by the unique guid and the refunds' ``(guid, seq)`` index), sent
in autocommit on a pooled connection: on PostgreSQL one round trip; on a SQLite file a
plain read in WAL, which never waits for a writer and takes no lock of this process.

``version`` is a hash of the rows exactly as the driver returned them, before any JSON is
decoded or any decimal parsed: every column of the invoice's row (a column a later revision
adds to the table too) and of its refunds, so any change to what the record shows changes
it, and reading it costs no decoding. The decoding (``rows.invoice_from_row``) happens only
when the caller asks for the invoice.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import Dialect, bindparam, select

from paycore.domain.records import Status
from paycore.storage.invoice_read import InvoiceRead, decoded_once, version_of, with_refunds

from .prepared import Prepared
from .rows import invoice_from_row, refund_from_row
from .tables import invoices, refunds

#: An invoice's own columns (``seq`` is the database's numbering, not the record's).
_INVOICE_COLUMNS = [column for column in invoices.c if column.name != "seq"]
_REFUND_PREFIX = "refund_"
_REFUND_COLUMNS = [
    column.label(_REFUND_PREFIX + column.name) for column in refunds.c if column.name != "seq"
]
_STATUS = [c.name for c in _INVOICE_COLUMNS].index("status")
_DEADLINE = [c.name for c in _INVOICE_COLUMNS].index("deadline")
_REFUND_ID = len(_INVOICE_COLUMNS) + [c.name for c in _REFUND_COLUMNS].index("refund_id")

_READ = Prepared(
    lambda _: (
        select(*_INVOICE_COLUMNS, *_REFUND_COLUMNS)
        .select_from(invoices.outerjoin(refunds, refunds.c.guid == invoices.c.guid))
        .where(invoices.c.guid == bindparam("guid"))
        .order_by(refunds.c.seq)
    ),
    [*_INVOICE_COLUMNS, *_REFUND_COLUMNS],
)


def read_on(
    dialect: Dialect, dbapi: Any, invalidate: Callable[[BaseException], None], guid: str
) -> InvoiceRead | None:
    """The one statement on ``dbapi`` (autocommit, or inside the caller's transaction)."""
    rows = _READ.raw(dialect, dbapi, invalidate, {"guid": guid})
    if not rows:
        return None
    first = rows[0]

    def decode() -> Any:
        converted = [_READ.convert(dialect, row) for row in rows]
        invoice = invoice_from_row(converted[0])
        found = [
            refund_from_row(
                {
                    name[len(_REFUND_PREFIX) :]: value
                    for name, value in row.items()
                    if name.startswith(_REFUND_PREFIX)
                }
            )
            for raw, row in zip(rows, converted, strict=True)
            if raw[_REFUND_ID] is not None
        ]
        return with_refunds(invoice, found)

    return InvoiceRead(
        guid,
        Status(first[_STATUS]),
        int(first[_DEADLINE]),
        version_of(rows),
        decoded_once(decode),
    )
