"""The prices', locked quotes' and parked deposits' statements
(``paycore.storage.protocols.prices``), mixed into ``SqlTx``.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
from sqlalchemy import select

from paycore.domain.records import Deposit
from paycore.prices.records import LockedQuote, ParkedDeposit, StoredPrice

from .rows import parked_from_row, parked_row
from .statements import SqlTxBase, _chunks
from .tables import invoice_quotes, parked_deposits, prices


class PriceStatements(SqlTxBase):
    """The price methods of ``StorageTx``, on the transaction's connection."""

    def put_prices(self, rows: Sequence[StoredPrice]) -> None:
        for row in rows:
            self._put(prices, attrs.asdict(row, recurse=False))

    def get_prices(self, vs_currency: str | None = None) -> list[StoredPrice]:
        query = select(prices).order_by(prices.c.vs_currency, prices.c.token)
        if vs_currency is not None:
            query = query.where(prices.c.vs_currency == vs_currency)
        return [StoredPrice(**row) for row in self._all(query)]

    def get_price(self, token: str, vs_currency: str) -> StoredPrice | None:
        row = self._one(
            select(prices).where(prices.c.token == token, prices.c.vs_currency == vs_currency)
        )
        return None if row is None else StoredPrice(**row)

    def put_quotes(self, quotes: Sequence[LockedQuote]) -> None:
        for quote in quotes:
            self._put(invoice_quotes, attrs.asdict(quote, recurse=False))

    def get_quotes(self, guid: str) -> list[LockedQuote]:
        q = invoice_quotes
        query = select(q).where(q.c.guid == guid).order_by(q.c.token)
        return [LockedQuote(**row) for row in self._all(query)]

    def get_quotes_of(self, guids: Sequence[str]) -> list[LockedQuote]:
        q = invoice_quotes
        found: list[LockedQuote] = []
        for chunk in _chunks(sorted(set(guids))):
            query = select(q).where(q.c.guid.in_(chunk)).order_by(q.c.guid, q.c.token)
            found += [LockedQuote(**row) for row in self._all(query)]
        return found

    def park_deposit(self, parked: ParkedDeposit) -> bool:
        unique = ["chain_id", "tx_hash", "log_index", "token"]
        return self._insert_new(parked_deposits, parked_row(parked), unique)

    def parked_deposits(self, chain_id: int, limit: int) -> list[ParkedDeposit]:
        p = parked_deposits
        query = select(p).where(p.c.chain_id == chain_id).order_by(p.c.id).limit(limit)
        return [parked_from_row(row) for row in self._all(query)]

    def unpark_deposit(self, deposit: Deposit) -> bool:
        p = parked_deposits
        return self._delete(
            p,
            p.c.chain_id == deposit.chain_id,
            p.c.tx_hash == deposit.tx_hash,
            p.c.log_index == deposit.log_index,
            p.c.token == deposit.token,
        )

    def parked_tokens(self) -> list[str]:
        p = parked_deposits
        query = select(p.c.chain_id, p.c.token).distinct()
        return sorted(f"{row['chain_id']}:{row['token']}" for row in self._all(query))
