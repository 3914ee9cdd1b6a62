"""The prices' part of the storage contract: the price table, the quotes locked at invoice
creation, and the deposits parked until they can be valued.

The refresher writes the last good price of each (token, vsCurrency); every process reads the
same rows, so the table GET /prices shows is the one that values deposits. What storage owes:

- ``put_prices`` and ``put_quotes`` replace the row of the same key: writing one twice is
  writing it once.
- ``park_deposit`` is idempotent on the transfer (chain_id, tx_hash, log_index, token), and
  parked deposits come back in the order they were parked (the watcher parks in chain order).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ...domain.records import Deposit
from ...prices.records import LockedQuote, ParkedDeposit, StoredPrice


class Prices(Protocol):
    """``StorageTx``'s price table: the last stored price of each (token, vsCurrency)."""

    def put_prices(self, rows: Sequence[StoredPrice]) -> None:
        """Insert each row, or replace the row of the same (token, vs_currency)."""

    def get_prices(self, vs_currency: str | None = None) -> list[StoredPrice]:
        """Every stored price (of ``vs_currency`` only, when given), by currency and token."""

    def get_price(self, token: str, vs_currency: str) -> StoredPrice | None:
        """The last stored price of ``token`` (``{chainId}:{address}``) in ``vs_currency``,
        fresh or not (the caller judges its age), or ``None``."""


class Quotes(Protocol):
    """``StorageTx``'s locked quotes: the rates an invoice was created with."""

    def put_quotes(self, quotes: Sequence[LockedQuote]) -> None:
        """Store rates locked at invoice creation; one per (guid, token), replaced if any."""

    def get_quotes(self, guid: str) -> list[LockedQuote]:
        """The rates locked for invoice ``guid``, by token; empty when none were."""

    def get_quotes_of(self, guids: Sequence[str]) -> list[LockedQuote]:
        """The rates locked for any of these invoices, by guid then token (one read for a
        batch of deposits)."""


class ParkedDeposits(Protocol):
    """``StorageTx``'s parked deposits: deposits that wait for a price."""

    def park_deposit(self, parked: ParkedDeposit) -> bool:
        """Keep a deposit that could not be valued yet; ``False`` (nothing written) when the
        same transfer (chain_id, tx_hash, log_index, token) is parked already."""

    def parked_deposits(self, chain_id: int, limit: int) -> list[ParkedDeposit]:
        """Up to ``limit`` parked deposits of ``chain_id``, in the order they were parked
        (the watcher parks in chain order)."""

    def unpark_deposit(self, deposit: Deposit) -> bool:
        """Forget a parked deposit (valued now, or gone in a reorg); ``False`` if unknown."""

    def parked_tokens(self) -> list[str]:
        """The ``{chainId}:{token}`` ids that parked deposits wait for a price of, sorted."""
