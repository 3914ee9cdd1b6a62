"""The accounting export's keyset reads (``paycore.storage.protocols.export``), mixed into
``SqlTx``: each batch starts after a row value (``(columns) > (values)``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, literal, select, tuple_

from paycore.domain.records import Invoice, Transaction, TxType
from paycore.storage.contract import TransferPlace

from .rows import invoice_from_row, transaction_from_row
from .statements import SqlTxBase
from .tables import invoices, transactions


def _after(columns: Sequence[Any], values: Sequence[Any]) -> ColumnElement[bool]:
    """``(columns) > (values)``, row-value order: a keyset batch starts after ``values``."""
    bound = [literal(value, column.type) for column, value in zip(columns, values, strict=True)]
    return tuple_(*columns) > tuple_(*bound)


class ExportStatements(SqlTxBase):
    """The export methods of ``StorageTx``, on the transaction's connection."""

    def export_invoices(
        self,
        owner: str,
        *,
        start: int,
        end: int | None,
        after: tuple[int, str] | None,
        limit: int,
    ) -> list[Invoice]:
        i = invoices.c
        where = [i.owner == owner, i.created_at >= start]
        if end is not None:
            where.append(i.created_at < end)
        if after is not None:
            where.append(_after((i.created_at, i.guid), after))
        query = select(invoices).where(*where).order_by(i.created_at, i.guid).limit(limit)
        return [invoice_from_row(r) for r in self._all(query)]

    def export_transactions(
        self,
        owner: str,
        kind: TxType,
        *,
        start: int,
        end: int | None,
        after: TransferPlace | None,
        limit: int,
    ) -> list[Transaction]:
        t = transactions.c
        place = (t.timestamp, t.chain_id, t.tx_hash, t.log_index, t.token)
        where = [
            t.owner == owner,
            t.type == kind.value,
            t.reorged.is_(False),
            t.timestamp >= start,
        ]
        if end is not None:
            where.append(t.timestamp < end)
        if after is not None:
            where.append(_after(place, after))
        query = select(transactions).where(*where).order_by(*place).limit(limit)
        return [transaction_from_row(r) for r in self._all(query)]
