"""The invoice search's statements (``paycore.storage.search``), mixed into ``SqlTx``.

A page is one ``SELECT`` over ``paycore_invoices`` ordered by ``(created_at, seq)`` after
the position's, narrowed by whichever filters are set: by time first, so that a time range
and a status read one index range in order and stop at the page's end. PostgreSQL picks
the index that narrows most: the trigram GIN index on ``search_text`` for a text (an order
id matches a handful of rows among millions), ``(owner, status, created_at, seq)`` for a
status, ``(owner, created_at, seq, ...)`` for a time range or when the newest rows match
anyway. On SQLite the trigram index is an FTS5 table (revision 0019): a text is the
invoices whose ``seq`` its phrase query finds, and those newer than it holds (it takes them
in batches, revision 0023), the ``LIKE`` then applied to them (docs/performance.md, "Invoice
search", has both).

``invoice_stats`` is one grouped ``SELECT`` over the ``(owner, created_at, status,
chain_id, token, vs_currency, paid_amount)`` index, which holds every column it reads.
Sums are exact: PostgreSQL sums NUMERIC; SQLite, whose ``SUM`` of text gives a float, sums
with an aggregate of Python Decimals registered on the connection.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal, localcontext
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    column,
    func,
    literal_column,
    select,
    table,
    tuple_,
)
from sqlalchemy import text as sql_text

from paycore.domain.money import MONEY_CONTEXT
from paycore.domain.records import Invoice, Status
from paycore.storage.search import InvoiceFilter, StatsRow

from .decimals import exact, exact_text
from .rows import invoice_from_row
from .tables import SEARCH_TEXT_FTS, SEARCH_TEXT_INDEXED, Money, invoices

_I = invoices.c
_COLUMNS = [column for column in invoices.c if column.name not in ("seq", "search_text")]
_DAY = 86_400
_DECIMAL_SUM = "paycore_decimal_sum"


def like_pattern(text: str) -> str:
    """``text`` anywhere, taken literally: ``%``, ``_`` and the escape itself escaped."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


_FTS = table(SEARCH_TEXT_FTS, column("rowid"))
_INDEXED = table(SEARCH_TEXT_INDEXED, column("upto"))


def _phrase(text: str) -> str:
    """An FTS5 phrase of ``text`` taken literally: with the trigram tokenizer, its
    trigrams in a row, which a text containing ``text`` has."""
    return '"' + text.replace('"', '""') + '"'


def _conditions(where: InvoiceFilter, sqlite: bool = False) -> list[ColumnElement[bool]]:
    found = [_I.owner == where.owner]
    if where.statuses:
        found.append(_I.status.in_([s.value for s in where.statuses]))
    if where.created_from is not None:
        found.append(_I.created_at >= where.created_from)
    if where.created_to is not None:
        found.append(_I.created_at < where.created_to)
    if where.chain_id is not None:
        found.append(_I.chain_id == where.chain_id)
    if where.token is not None:
        found.append(_I.token == where.token)
    if where.text is not None:
        # The FTS5 trigram table narrows (a text of three characters or more: shorter ones
        # have no trigram) to its matches and the few invoices it does not hold yet (above
        # its mark, revision 0023); the LIKE below stays the rule.
        if sqlite and len(where.text) >= 3:
            matching = select(_FTS.c.rowid).where(
                literal_column(SEARCH_TEXT_FTS).op("MATCH")(_phrase(where.text))
            )
            newest = select(_I.seq).where(_I.seq > select(_INDEXED.c.upto).scalar_subquery())
            found.append(_I.seq.in_(matching.union_all(newest)))
        found.append(_I.search_text.like(like_pattern(where.text), escape="\\"))
    return found


class _DecimalSum:
    """SQLite's exact sum of text decimals (its own ``SUM`` would make them floats)."""

    def __init__(self) -> None:
        self.total = Decimal(0)

    def step(self, value: Any) -> None:
        if value is not None:
            with localcontext(MONEY_CONTEXT):
                self.total += Decimal(value)

    def finalize(self) -> str:
        return exact_text(exact(self.total))


class SearchStatements:
    """``search_invoices``, ``count_invoice_matches`` and ``invoice_stats`` of ``StorageTx``,
    on the connection of the transaction they run in."""

    @property
    def _c(self) -> Connection:
        raise NotImplementedError

    def search_invoices(
        self, where: InvoiceFilter, *, after: str | None, limit: int, newest_first: bool = True
    ) -> list[Invoice] | None:
        conditions = _conditions(where, self._c.dialect.name == "sqlite")
        if after is not None:
            bound = self._c.execute(select(_I.created_at, _I.seq).where(_I.guid == after)).first()
            if bound is None:
                return None
            key, at = tuple_(_I.created_at, _I.seq), tuple_(bound[0], bound[1])
            conditions.append(key < at if newest_first else key > at)
        order = [_I.created_at, _I.seq]
        query = (
            select(*_COLUMNS)
            .where(*conditions)
            .order_by(*(c.desc() for c in order) if newest_first else order)
            .limit(limit)
        )
        return [invoice_from_row(row) for row in self._c.execute(query).mappings()]

    def count_invoice_matches(self, where: InvoiceFilter, cap: int) -> int:
        sqlite = self._c.dialect.name == "sqlite"
        some = select(_I.seq).where(*_conditions(where, sqlite)).limit(cap).subquery()
        return int(self._c.execute(select(func.count()).select_from(some)).scalar_one())

    def invoice_stats(
        self, owner: str, *, start: int, end: int, offset: int = 0
    ) -> Sequence[StatsRow]:
        if self._c.dialect.name == "sqlite":
            dbapi = self._c.connection.dbapi_connection
            dbapi.create_aggregate(_DECIMAL_SUM, 1, _DecimalSum)  # type: ignore[union-attr]
            paid = func.paycore_decimal_sum(_I.paid_amount, type_=Money())
        else:
            # Room to hash the groups (a few hundred) in memory: with the default work_mem
            # the planner, which cannot tell how few days a range holds, sorts a month's
            # rows on disk instead (docs/performance.md, "Invoice search").
            self._c.execute(sql_text("SET LOCAL work_mem = '32MB'"))
            paid = func.sum(_I.paid_amount, type_=Money())
        day = ((_I.created_at + offset) // _DAY).label("day")
        keys = [day, _I.chain_id, _I.token, _I.status, _I.vs_currency]
        query = (
            select(*keys, func.count().label("n"), paid.label("paid"))
            .where(_I.owner == owner, _I.created_at >= start, _I.created_at < end)
            .group_by(*keys)
        )
        rows = [
            StatsRow(int(r[0]), int(r[1]), str(r[2]), Status(r[3]), str(r[4]), int(r[5]), r[6])
            for r in self._c.execute(query)
        ]
        # Sorted here, as the memory store sorts: status has no bytewise collation on
        # PostgreSQL, and every store must give one order.
        rows.sort(key=lambda r: (r.day, r.chain_id, r.token, r.status.value, r.vs_currency))
        return rows
