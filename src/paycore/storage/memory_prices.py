"""The memory store's prices, locked quotes and parked deposits
(``paycore.storage.protocols.prices``), mixed into its transaction class.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..domain.records import Deposit
from ..prices.records import LockedQuote, ParkedDeposit, StoredPrice
from .memory_rows import MemoryTxBase


class MemoryPrices(MemoryTxBase):
    """The price methods over the store's ``prices``, ``quotes`` and ``parked`` tables."""

    def put_prices(self, rows: Sequence[StoredPrice]) -> None:
        for row in rows:
            self._t.prices[(row.vs_currency, row.token)] = row

    def get_prices(self, vs_currency: str | None = None) -> list[StoredPrice]:
        return [
            row
            for key, row in sorted(self._t.prices.items())
            if vs_currency is None or key[0] == vs_currency
        ]

    def get_price(self, token: str, vs_currency: str) -> StoredPrice | None:
        return self._t.prices.get((vs_currency, token))

    def put_quotes(self, quotes: Sequence[LockedQuote]) -> None:
        for quote in quotes:
            self._t.quotes[(quote.guid, quote.token)] = quote

    def get_quotes(self, guid: str) -> list[LockedQuote]:
        return [q for (g, _t), q in sorted(self._t.quotes.items()) if g == guid]

    def get_quotes_of(self, guids: Sequence[str]) -> list[LockedQuote]:
        wanted = set(guids)
        return [q for (g, _t), q in sorted(self._t.quotes.items()) if g in wanted]

    def park_deposit(self, parked: ParkedDeposit) -> bool:
        d = parked.deposit
        key = (d.chain_id, d.tx_hash, d.log_index, d.token)
        if key in self._t.parked:
            return False
        self._t.parked[key] = parked
        return True

    def parked_deposits(self, chain_id: int, limit: int) -> list[ParkedDeposit]:
        found = [p for key, p in self._t.parked.items() if key[0] == chain_id]
        return found[:limit]

    def unpark_deposit(self, deposit: Deposit) -> bool:
        key = (deposit.chain_id, deposit.tx_hash, deposit.log_index, deposit.token)
        return self._t.parked.pop(key, None) is not None

    def parked_tokens(self) -> list[str]:
        return sorted({f"{key[0]}:{key[3]}" for key in self._t.parked})
