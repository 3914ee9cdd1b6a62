"""The invoice rows' statements (``paycore.storage.protocols.invoices``), mixed into ``SqlTx``.

The request path's reads and the insert are prepared once (``prepared``); ``for_update``
reads are ``SELECT .. FOR UPDATE`` (nothing on SQLite, whose transactions are serial);
``insert_invoice`` is ``INSERT .. ON CONFLICT DO NOTHING RETURNING``, which keeps the
transaction usable on a duplicate; counts go through ``statements.SqlTxBase``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Dialect,
    Select,
    Text,
    any_,
    bindparam,
    func,
    literal_column,
    select,
    text,
    update,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.sql.expression import ClauseElement

from paycore.domain.records import Invoice
from paycore.storage.invoice_read import InvoiceRead

from .decimals import exact_text
from .invoice_read import read_on
from .prepared import Prepared
from .rows import invoice_from_row, invoice_row, invoice_state_row
from .statements import _OPEN_STATUSES, INVOICES, SqlTxBase, _insert_into
from .tables import invoices

#: What deposits and deadlines change in an invoice; the rest is fixed at creation.
_INVOICE_STATE = ("status", "paid_amount", "payments")


#: PostgreSQL: many invoices' state from one JSON document, parsed by the server: one text
#: parameter instead of arrays, which psycopg dumps element by element in Python.
_INVOICE_STATES_JSON = text(
    f"""
    UPDATE {invoices.name} AS i
       SET status = v.status, paid_amount = v.paid, payments = v.payments
      FROM json_to_recordset(CAST(:states AS JSON))
           AS v(guid TEXT, status TEXT, paid NUMERIC, payments JSON)
     WHERE i.guid = v.guid
    """
)


#: SQLite: a batch of invoices' new state, one row each (PostgreSQL takes one JSON document).
_UPDATE_INVOICE_STATES = Prepared(
    lambda _: (
        update(invoices)
        .where(invoices.c.guid == bindparam("_guid"))
        .values({name: bindparam(name, type_=invoices.c[name].type) for name in _INVOICE_STATE})
    )
)


#: An invoice's own columns: ``seq``, its creation sequence, is the database's to number.
_INVOICE_COLUMNS = [column for column in invoices.c if column.name != "seq"]


def _insert_invoice(dialect: Dialect) -> ClauseElement:
    return (
        _insert_into(dialect, invoices)
        .values({column.name: bindparam(column.name) for column in _INVOICE_COLUMNS})
        .on_conflict_do_nothing(index_elements=["guid"])
        .returning(invoices.c.guid)
    )


_INVOICE_BY_GUID = select(*_INVOICE_COLUMNS).where(invoices.c.guid == bindparam("guid"))


#: The request path's invoice statements (see ``prepared``): read, read and lock, create.
_INVOICE = Prepared(lambda _: _INVOICE_BY_GUID, _INVOICE_COLUMNS)


_INVOICE_FOR_UPDATE = Prepared(lambda _: _INVOICE_BY_GUID.with_for_update(), _INVOICE_COLUMNS)


_INSERT_INVOICE = Prepared(_insert_invoice, [invoices.c.guid])


def _invoices_at(dialect: Dialect) -> Select[Any]:
    """The invoices at a batch of addresses (the watcher's), one statement of fixed text for
    any number of them: PostgreSQL takes them as an array, SQLite as a JSON array it unpacks
    (``json_each``), instead of an ``IN`` list of that many placeholders compiled anew for
    each batch. Ordered by address: with ``FOR UPDATE`` PostgreSQL takes the row locks in one
    global order ("C" collation sorts as Python does)."""
    if dialect.name == "postgresql":
        match = invoices.c.address == any_(bindparam("addresses", type_=ARRAY(Text)))
    else:
        listed: Select[Any] = select(literal_column("value")).select_from(
            func.json_each(bindparam("addresses", type_=Text))
        )
        match = invoices.c.address.in_(listed.scalar_subquery())
    return (
        select(*_INVOICE_COLUMNS)
        .where(invoices.c.chain_id == bindparam("chain_id"), match)
        .order_by(invoices.c.address, invoices.c.seq)
    )


_INVOICES_AT = Prepared(_invoices_at, _INVOICE_COLUMNS)


_INVOICES_AT_FOR_UPDATE = Prepared(
    lambda dialect: _invoices_at(dialect).with_for_update(), _INVOICE_COLUMNS
)


class InvoiceStatements(SqlTxBase):
    """The invoice methods of ``StorageTx``, on the transaction's connection."""

    def insert_invoice(self, invoice: Invoice) -> None:
        if not _INSERT_INVOICE.rows(self._c, invoice_row(invoice)):
            raise ValueError(f"invoice {invoice.guid} already exists")
        self._add_count(invoice.owner, INVOICES, invoice.chain_id, invoice.guid, 1)

    def get_invoice(self, guid: str, *, for_update: bool = False) -> Invoice | None:
        query = _INVOICE_FOR_UPDATE if for_update else _INVOICE
        rows = query.rows(self._c, {"guid": guid})
        return invoice_from_row(rows[0]) if rows else None

    def read_invoice(self, guid: str) -> InvoiceRead | None:
        connection = self._c
        dbapi = connection.connection.dbapi_connection
        return read_on(connection.dialect, dbapi, connection.invalidate, guid)

    def update_invoice(self, invoice: Invoice) -> None:
        """Raises ``KeyError`` for an unknown guid: an update that silently did nothing
        would hide a lost invoice. An invoice's owner and chain never change, so its count
        stays where it is."""
        row = invoice_row(invoice)
        del row["guid"]
        result = self._c.execute(
            update(invoices).where(invoices.c.guid == invoice.guid).values(row)
        )
        if result.rowcount == 0:
            raise KeyError(invoice.guid)

    def invoices_at_address(
        self, chain_id: int, address: str, *, for_update: bool = False
    ) -> list[Invoice]:
        query = (
            select(invoices)
            .where(invoices.c.chain_id == chain_id, invoices.c.address == address)
            .order_by(invoices.c.seq)
        )
        return [
            invoice_from_row(r) for r in self._all(query.with_for_update() if for_update else query)
        ]

    def invoices_at_addresses(
        self, chain_id: int, addresses: Sequence[str], *, for_update: bool = False
    ) -> dict[str, list[Invoice]]:
        found: dict[str, list[Invoice]] = {}
        wanted = sorted(set(addresses))
        params = {
            "chain_id": chain_id,
            "addresses": wanted if self._postgres else json.dumps(wanted),
        }
        prepared = _INVOICES_AT_FOR_UPDATE if for_update else _INVOICES_AT
        for row in prepared.rows(self._c, params):
            found.setdefault(row["address"], []).append(invoice_from_row(row))
        return found

    def update_invoice_states(self, records: Sequence[Invoice]) -> None:
        if len(records) < 2:
            for invoice in records:
                self.update_invoice(invoice)
            return
        states = [invoice_state_row(invoice) for invoice in records]
        if self._postgres:  # one statement for them all: a round trip per row costs more
            document = json.dumps(
                [
                    {
                        "guid": invoice.guid,
                        "status": state["status"],
                        "paid": exact_text(state["paid_amount"]),
                        "payments": state["payments"],
                    }
                    for invoice, state in zip(records, states, strict=True)
                ]
            )
            if self._c.execute(_INVOICE_STATES_JSON, {"states": document}).rowcount != len(states):
                self._unknown_invoice([invoice.guid for invoice in records])
            return
        rows = [
            {"_guid": invoice.guid, **state} for invoice, state in zip(records, states, strict=True)
        ]
        if _UPDATE_INVOICE_STATES.run_many(self._c, rows) != len(rows):
            self._unknown_invoice([r["_guid"] for r in rows])

    def _unknown_invoice(self, wanted: list[str]) -> None:
        query = select(invoices.c.guid).where(invoices.c.guid.in_(wanted))
        stored = set(self._c.execute(query).scalars())
        raise KeyError(next((guid for guid in wanted if guid not in stored), wanted[0]))

    @staticmethod
    def _invoice_filter(
        owner: str | None, chain_id: int | None, address: str | None
    ) -> list[ColumnElement[bool]]:
        return [
            column == wanted
            for column, wanted in (
                (invoices.c.owner, owner),
                (invoices.c.chain_id, chain_id),
                (invoices.c.address, address),
            )
            if wanted is not None
        ]

    def list_invoices(
        self,
        *,
        owner: str | None = None,
        chain_id: int | None = None,
        address: str | None = None,
        offset: int = 0,
        limit: int | None = None,
        newest_first: bool = False,
    ) -> tuple[list[Invoice], int]:
        """An offset is skipped in the index alone (a "deferred join"): the page's sequence
        numbers come from (owner, seq) -- an index-only scan on PostgreSQL, a covering index
        on SQLite, where seq is the rowid -- and only the page's own rows are read."""
        where = self._invoice_filter(owner, chain_id, address)
        order = invoices.c.seq.desc() if newest_first else invoices.c.seq
        if offset == 0 and limit is None:
            query = select(invoices).where(*where).order_by(order)
        else:
            page = (
                select(invoices.c.seq)
                .where(*where)
                .order_by(order)
                .offset(offset)
                .limit(limit)
                .subquery()
            )
            query = select(invoices).join(page, invoices.c.seq == page.c.seq).order_by(order)
        items = [invoice_from_row(r) for r in self._all(query)]
        return items, self.count_invoices(owner=owner, chain_id=chain_id, address=address)

    def invoices_after(
        self,
        *,
        owner: str | None = None,
        chain_id: int | None = None,
        address: str | None = None,
        after: str | None = None,
        limit: int,
        newest_first: bool = False,
    ) -> list[Invoice] | None:
        where = self._invoice_filter(owner, chain_id, address)
        if after is not None:
            bound = self._c.execute(
                select(invoices.c.seq).where(invoices.c.guid == after)
            ).scalar_one_or_none()
            if bound is None:
                return None
            where.append(invoices.c.seq < bound if newest_first else invoices.c.seq > bound)
        order = invoices.c.seq.desc() if newest_first else invoices.c.seq
        query = select(invoices).where(*where).order_by(order).limit(limit)
        return [invoice_from_row(r) for r in self._all(query)]

    def count_invoices(
        self, *, owner: str | None = None, chain_id: int | None = None, address: str | None = None
    ) -> int:
        if owner is not None and address is None:
            return self._counted(owner, INVOICES, chain_id)
        return self._count(invoices, *self._invoice_filter(owner, chain_id, address))

    def due_for_expiry(self, now: int, limit: int) -> list[str]:
        query = (
            select(invoices.c.guid)
            .where(invoices.c.status.in_(_OPEN_STATUSES), invoices.c.deadline < now)
            .order_by(invoices.c.deadline, invoices.c.guid)
            .limit(limit)
        )
        return list(self._c.execute(query).scalars())
