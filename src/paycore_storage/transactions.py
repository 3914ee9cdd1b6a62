"""The transaction rows' statements (``paycore.storage.protocols.transactions``), mixed into
``SqlTx``: ``INSERT .. ON CONFLICT DO NOTHING`` on the transfer key, so a deposit seen twice
is written once; a reorged row is revived in place; ``mark_reorged`` is one ``UPDATE ..
WHERE NOT reorged``, whose row count says who got it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import ColumnElement, Dialect, bindparam, literal, select, tuple_, update
from sqlalchemy.sql.expression import ClauseElement

from paycore.domain.paging import TxPosition
from paycore.domain.records import Transaction, TxType

from .prepared import Prepared
from .rows import transaction_from_row, transaction_row
from .statements import TRANSACTIONS, SqlTxBase, _chunks, _insert_into
from .tables import transactions

#: The transaction rows' unique key: one transfer (``paycore.storage``: insert_transaction).
_TRANSFER_KEY = ["chain_id", "tx_hash", "log_index", "token"]


_TX_ORDER = ("timestamp", "tx_hash", "log_index", "chain_id", "token")


def _insert_transactions(dialect: Dialect) -> ClauseElement:
    """A batch of transaction rows, every column bound (``Prepared.run_many``): a row whose
    transfer is known already is skipped, which the caller sees in the count."""
    names = [c.name for c in transactions.c if c.name != "id"]
    return (
        _insert_into(dialect, transactions)
        .values({name: bindparam(name, type_=transactions.c[name].type) for name in names})
        .on_conflict_do_nothing(index_elements=_TRANSFER_KEY)
    )


_INSERT_TRANSACTIONS = Prepared(_insert_transactions)


class TransactionStatements(SqlTxBase):
    """The transaction-row methods of ``StorageTx``, on the transaction's connection."""

    def _count_transaction(self, tx: Transaction, delta: int) -> None:
        row_key = f"{tx.tx_hash}:{tx.log_index}:{tx.token}"
        self._add_count(tx.owner, TRANSACTIONS, tx.chain_id, row_key, delta)

    def insert_transaction(self, tx: Transaction) -> bool:
        row = transaction_row(tx)
        if self._insert_new(transactions, row, _TRANSFER_KEY):
            if not tx.reorged:
                self._count_transaction(tx, 1)
            return True
        return self._revive(tx, row)

    def _revive(self, tx: Transaction, row: Mapping[str, Any]) -> bool:
        """Known already: only a reorged row gives way, and the WHERE decides that in the
        same statement that replaces it (a concurrent revival finds it revived). The
        flagged row was no longer counted; the revived one is."""
        replaced = self._c.execute(
            update(transactions)
            .where(*self._transfer(*tx.key), transactions.c.reorged.is_(True))
            .values(row)
        )
        if replaced.rowcount > 0 and not tx.reorged:
            self._count_transaction(tx, 1)
        return replaced.rowcount > 0

    def insert_transactions(self, records: Sequence[Transaction]) -> list[bool]:
        if len(records) < 2:
            return [self.insert_transaction(record) for record in records]
        # All new is the watcher's case: one executemany, no RETURNING (which costs the
        # driver several times the insert). Any row known already makes the count fall
        # short; then the savepoint undoes the lot and each is decided as one insert.
        rows = [transaction_row(record) for record in records]
        savepoint = self._c.begin_nested()
        # The driver's own executemany (SQLAlchemy would send psycopg a multi-row VALUES
        # and lose the row count, and build each row's parameters through its compiler).
        written = _INSERT_TRANSACTIONS.run_many(self._c, rows)
        if written == len(records):
            savepoint.commit()
            for record in records:  # counted exactly as ``insert_transaction`` counts one
                if not record.reorged:
                    self._count_transaction(record, 1)
            return [True] * len(records)
        savepoint.rollback()
        return [self.insert_transaction(record) for record in records]

    def known_transfers(
        self, keys: Sequence[tuple[int, str, int, str]]
    ) -> set[tuple[int, str, int, str]]:
        wanted = set(keys)
        found: set[tuple[int, str, int, str]] = set()
        hashes_by_chain: dict[int, set[str]] = {}
        for chain_id, tx_hash, _index, _token in wanted:
            hashes_by_chain.setdefault(chain_id, set()).add(tx_hash)
        t = transactions.c
        for chain_id, hashes in hashes_by_chain.items():
            for chunk in _chunks(sorted(hashes)):
                query = select(t.chain_id, t.tx_hash, t.log_index, t.token).where(
                    t.chain_id == chain_id, t.tx_hash.in_(chunk), t.reorged.is_(False)
                )
                found.update(k for k in map(tuple, self._c.execute(query)) if k in wanted)
        return found

    @staticmethod
    def _transfer(chain_id: int, tx_hash: str, log_index: int, token: str) -> list[Any]:
        return [
            transactions.c.chain_id == chain_id,
            transactions.c.tx_hash == tx_hash,
            transactions.c.log_index == log_index,
            transactions.c.token == token,
        ]

    def recorded_deposits(self, chain_id: int, from_block: int) -> list[Transaction]:
        query = (
            select(transactions)
            .where(
                transactions.c.chain_id == chain_id,
                transactions.c.block_number >= from_block,
                transactions.c.type == TxType.DEPOSIT.value,
                transactions.c.reorged.is_(False),
            )
            .order_by(
                transactions.c.block_number.desc(),
                transactions.c.tx_hash,
                transactions.c.log_index,
            )
        )
        return [transaction_from_row(r) for r in self._all(query)]

    def mark_reorged(
        self, chain_id: int, tx_hash: str, log_index: int, token: str
    ) -> Transaction | None:
        flagged = self._c.execute(
            update(transactions)
            .where(
                *self._transfer(chain_id, tx_hash, log_index, token),
                transactions.c.reorged.is_(False),
            )
            .values(reorged=True)
            .returning(*transactions.c)
        ).first()
        if flagged is None:
            return None
        record = transaction_from_row(flagged._mapping)
        self._count_transaction(record, -1)
        return record

    @staticmethod
    def _listed_transactions(owner: str, chain_id: int | None) -> list[ColumnElement[bool]]:
        """The rows GET /transactions shows; ``reorged IS false`` is written exactly as the
        partial index ``ix_paycore_transactions_owner_newest`` says it, so both databases
        see that the index covers the query."""
        where = [transactions.c.owner == owner, transactions.c.reorged.is_(False)]
        if chain_id is not None:
            where.append(transactions.c.chain_id == chain_id)
        return where

    def list_transactions(
        self, owner: str, *, chain_id: int | None = None, offset: int = 0, limit: int = 200
    ) -> tuple[list[Transaction], int]:
        """An offset is skipped in ``ix_paycore_transactions_owner_newest`` alone, and only the
        page's rows are read, by their unique transfer key (as in ``list_invoices``)."""
        t = transactions.c
        where = self._listed_transactions(owner, chain_id)
        newest_first = [t[name].desc() for name in _TX_ORDER]
        page = (
            select(*[t[name] for name in _TRANSFER_KEY])
            .where(*where)
            .order_by(*newest_first)
            .offset(offset)
            .limit(limit)
            .subquery()
        )
        query = (
            select(transactions)
            .join(
                page,
                tuple_(*[t[n] for n in _TRANSFER_KEY])
                == tuple_(*[page.c[n] for n in _TRANSFER_KEY]),
            )
            .order_by(*newest_first)
        )
        items = [transaction_from_row(r) for r in self._all(query)]
        return items, self.count_transactions(owner, chain_id=chain_id)

    def transactions_after(
        self,
        owner: str,
        *,
        chain_id: int | None = None,
        after: TxPosition | None = None,
        limit: int,
        newest_first: bool = True,
    ) -> list[Transaction]:
        t = transactions.c
        where = self._listed_transactions(owner, chain_id)
        if after is not None:
            here = tuple_(*[t[name] for name in _TX_ORDER])
            there = tuple_(
                *[
                    literal(value, t[name].type)
                    for name, value in zip(_TX_ORDER, after, strict=True)
                ]
            )
            where.append(here < there if newest_first else here > there)
        order = [t[name].desc() if newest_first else t[name] for name in _TX_ORDER]
        query = select(transactions).where(*where).order_by(*order).limit(limit)
        return [transaction_from_row(r) for r in self._all(query)]

    def count_transactions(self, owner: str, *, chain_id: int | None = None) -> int:
        return self._counted(owner, TRANSACTIONS, chain_id)
