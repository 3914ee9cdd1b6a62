"""What every mixin of ``SqlTx`` works with (``sql.py`` composes them, one per concern of
``paycore.storage.protocols``): statement helpers on the transaction's connection, the
dialect's own ``INSERT``, ``IN`` lists in chunks, and the owner counts.

Counts. ``paycore_owner_counts`` keeps each owner's invoices and counted transactions per
chain; the changes of a transaction are added up and written just before it commits, in a
fixed row order, so that concurrent inserts of one owner hold the rows' locks only across
a commit and spread over ``COUNT_STRIPES`` rows; in-transaction reads add the pending part.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Dialect,
    RowMapping,
    Select,
    Table,
    bindparam,
    delete,
    func,
    select,
)
from sqlalchemy.dialects.postgresql import Insert as PgInsert
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import Insert as SqliteInsert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.sql.expression import ClauseElement

from paycore.domain.machine import OPEN
from paycore.webhooks.records import DeliveryStatus

from .prepared import Prepared
from .tables import owner_counts

#: Rows each (owner, kind, chain) count is spread over (see Counts in the module docstring).
COUNT_STRIPES = 8
INVOICES, TRANSACTIONS = "invoices", "transactions"


def _insert_into(dialect: Dialect, table: Table) -> PgInsert | SqliteInsert:
    """The dialect's own ``INSERT`` of ``table`` (the one with ``ON CONFLICT``)."""
    return (pg_insert if dialect.name == "postgresql" else sqlite_insert)(table)


#: Values bound in one ``IN (...)``: well below SQLite's limit on host parameters.
_IN_CHUNK = 500


def _chunks(values: Sequence[Any]) -> Iterator[Sequence[Any]]:
    for start in range(0, len(values), _IN_CHUNK):
        yield values[start : start + _IN_CHUNK]


# Sorted so the compiled statement is the same in every process.
_OPEN_STATUSES = tuple(sorted(status.value for status in OPEN))
_PENDING = DeliveryStatus.PENDING.value


def _add_count(dialect: Dialect) -> ClauseElement:
    stmt = _insert_into(dialect, owner_counts).values(
        {name: bindparam(name) for name in ("owner", "kind", "chain_id", "stripe", "n")}
    )
    return stmt.on_conflict_do_update(
        index_elements=["owner", "kind", "chain_id", "stripe"],
        set_={"n": owner_counts.c.n + stmt.excluded.n},
    )


def stripe_of(row_key: str) -> int:
    """Which of its count's stripes a row (an invoice's guid, a transfer's key) adds to."""
    return zlib.crc32(row_key.encode()) % COUNT_STRIPES


#: A counter row's change, written at commit by every transaction that adds or removes an
#: invoice or a transaction row: compiled once (SQLAlchemy's cache does not keep an upsert,
#: and compiling it anew cost more than the rest of an invoice's creation).
_ADD_COUNT = Prepared(_add_count)


class SqlTxBase:
    """The helpers every statement mixin of ``SqlTx`` calls; ``SqlTx`` provides the
    connection (``_c``) and the attributes set in its ``__init__``."""

    _postgres: bool
    _clock: Callable[[], float]
    _insert: Callable[[Table], PgInsert | SqliteInsert]
    #: (owner, kind, chain_id, stripe) -> rows added by this transaction, not yet written.
    _pending_counts: dict[tuple[str, str, int, int], int]

    @property
    def _c(self) -> Connection:
        raise NotImplementedError

    def _one(self, query: Select[Any]) -> RowMapping | None:
        row = self._c.execute(query).first()
        return None if row is None else row._mapping

    def _all(self, query: Select[Any]) -> list[RowMapping]:
        return [row._mapping for row in self._c.execute(query)]

    def _count(self, table: Table, *where: ColumnElement[bool]) -> int:
        return self._c.execute(select(func.count()).select_from(table).where(*where)).scalar_one()

    def _put(self, table: Table, row: Mapping[str, Any]) -> None:
        """Insert, or replace every column of the row with the same primary key."""
        key = [c.name for c in table.primary_key.columns]
        stmt = self._insert(table).values(row)
        self._c.execute(
            stmt.on_conflict_do_update(
                index_elements=key,
                set_={name: stmt.excluded[name] for name in row if name not in key},
            )
        )

    def _insert_new(self, table: Table, row: Mapping[str, Any], unique: Sequence[str]) -> bool:
        """Insert unless a row with the same ``unique`` columns exists; says which."""
        stmt = (
            self._insert(table)
            .values(row)
            .on_conflict_do_nothing(index_elements=unique)
            .returning(*[table.c[name] for name in unique])
        )
        return self._c.execute(stmt).first() is not None

    def _delete(self, table: Table, *where: ColumnElement[bool]) -> bool:
        return self._c.execute(delete(table).where(*where)).rowcount > 0

    def _add_count(self, owner: str, kind: str, chain_id: int, row_key: str, delta: int) -> None:
        slot = (owner, kind, chain_id, stripe_of(row_key))
        self._pending_counts[slot] = self._pending_counts.get(slot, 0) + delta

    def _write_counts(self) -> None:
        """Write this transaction's count changes, in sorted order so that two transactions
        changing the same rows take their locks in the same order and cannot deadlock."""
        pending, self._pending_counts = self._pending_counts, {}
        for (owner, kind, chain_id, stripe), delta in sorted(pending.items()):
            if delta == 0:
                continue
            row = {"owner": owner, "kind": kind, "chain_id": chain_id, "stripe": stripe}
            _ADD_COUNT.rows(self._c, {**row, "n": delta})

    def _counted(self, owner: str, kind: str, chain_id: int | None) -> int:
        c = owner_counts.c
        where = [c.owner == owner, c.kind == kind]
        if chain_id is not None:
            where.append(c.chain_id == chain_id)
        stored: int = self._c.execute(
            select(func.coalesce(func.sum(c.n), 0)).where(*where)
        ).scalar_one()
        pending = sum(
            delta
            for (o, k, chain, _stripe), delta in self._pending_counts.items()
            if o == owner and k == kind and chain_id in (None, chain)
        )
        return int(stored) + pending
