"""The price records storage keeps, so that every process values and serves one table.

Web processes and ``paycore worker`` are separate processes: a table held in one process's
memory would let a web worker quote one price on GET /prices while the watcher values the
deposit at another. So the refresher writes what it fetched here, and everybody reads it.
"""

from __future__ import annotations

from decimal import Decimal

import attrs

from ..domain.records import Deposit


@attrs.frozen
class StoredPrice:
    """The last good price of one token in one vsCurrency (one row per pair)."""

    token: str  # "{chainId}:{address}", canonical
    vs_currency: str  # lowercase code
    price: Decimal
    #: Unix seconds the price describes (the source's own time when it tells one); its age,
    #: measured from here, decides whether it may still value a deposit.
    fetched_at: int
    #: Name of the source that gave it ("coingecko", "chainlink", "static", ...).
    source: str
    #: Unix seconds a refresher last wrote this row: refreshers in other processes skip a
    #: round when every row is recent, so N workers do not ask CoinGecko N times.
    checked_at: int = 0


@attrs.frozen
class LockedQuote:
    """A rate locked at invoice creation (``Settings.rate_lock``): the price of one
    accepted token that values the invoice's deposits until its deadline."""

    guid: str
    token: str
    vs_currency: str
    price: Decimal
    fetched_at: int
    source: str


@attrs.frozen
class ParkedDeposit:
    """A confirmed deposit that could not be valued yet (no fresh price). The watcher moves
    on past its block and retries it, with every later deposit to the same address, once
    a fresh price exists: the chain is not held up for one token."""

    deposit: Deposit
    reason: str
    parked_at: int
