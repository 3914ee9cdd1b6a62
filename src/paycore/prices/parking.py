"""Deposits that wait for a price, without holding up their chain.

A counted deposit is never valued at zero or at a stale rate, so one with no fresh price
cannot be attributed yet. Holding the watcher's cursor until it can be (the first design)
stalls every other deposit on the chain behind one unpriced token. Instead the watcher
*parks* it in storage and moves on; each pass it retries the parked deposits first.

Order. Which invoice a deposit pays depends on what was paid before at its address, so
deposits to one address must be attributed in chain order. A deposit to an address that
already has a parked one is therefore parked behind it, priced or not, and a retry stops
at an address's first deposit that still cannot be valued.

Reorgs. A parked deposit carries its block hash; before a retry the caller may say which
parked deposits are still on the canonical chain (``still_there``), and the others are
dropped: if their transaction was re-mined elsewhere, the watcher's re-scan parks (or
attributes) it again with its new block.

Crashes. The watcher parks inside the batch transaction that attributes the deposits
around it (``Gateway.ingest``), and a retry values and unparks in one transaction
(``Gateway.revalue_parked``), so a deposit is never both counted and parked. Parking and
attribution are idempotent besides: attribution on the transfer's unique key, parking on
the same key (a re-sighting replaces the parked copy, since a re-scan only happens in chain
order and may carry a new block hash).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

import attrs

from ..domain.records import Deposit
from ..storage import Storage
from ..storage.protocols import prices as price_store
from .records import ParkedDeposit

if TYPE_CHECKING:
    from ..chains.records import Ingested

log = logging.getLogger("paycore.prices.parking")

#: Parked deposits looked at per retry; the rest wait for the next pass.
RETRY_BATCH = 500

#: Attributes the parked deposits still on the chain that can be valued now, unparks them
#: and the gone ones, in one transaction (``Gateway.revalue_parked``).
Revalue = Callable[[Sequence[Deposit], Sequence[Deposit]], "Ingested"]


@attrs.frozen
class RetryReport:
    valued: int = 0
    waiting: int = 0
    dropped: int = 0


class ParkedDeposits:
    """``Gateway.parking``: the parked deposits in storage, held here privately so the
    watchers that park and retry need not reach storage.

    Built from its parts: the storage, the clock in whole unix seconds (a parking's time)
    and ``revalue``, the one operation that values parked deposits and unparks them in one
    transaction with their invoices' events (the gateway's ``revalue_parked``)."""

    def __init__(self, storage: Storage, now: Callable[[], int], revalue: Revalue) -> None:
        self._storage = storage
        self._now = now
        self._revalue = revalue

    def park(self, parked: ParkedDeposit) -> bool:
        """Store ``parked``; ``False`` when its deposit was parked already (the copy is
        replaced, so the reason and time are the latest)."""
        with self._storage.transaction() as tx:
            return park_in(tx, parked)

    def of_chain(self, chain_id: int, limit: int) -> list[ParkedDeposit]:
        """At most ``limit`` deposits parked on ``chain_id``, oldest first."""
        with self._storage.transaction() as tx:
            return tx.parked_deposits(chain_id, limit)

    def unpark(self, deposit: Deposit) -> None:
        with self._storage.transaction() as tx:
            tx.unpark_deposit(deposit)

    def park_now(self, deposit: Deposit, reason: str) -> bool:
        """Park ``deposit`` now; ``False`` when it was parked already (its copy is
        refreshed)."""
        return self.park(ParkedDeposit(deposit, reason, self._now()))

    def addresses(self, chain_id: int) -> set[str]:
        """Deposit addresses of ``chain_id`` with a deposit parked: later deposits to them
        wait."""
        return {p.deposit.to for p in self.of_chain(chain_id, 10**9)}

    def retry(
        self,
        chain_id: int,
        still_there: Callable[[list[Deposit]], set[Deposit]] | None = None,
    ) -> RetryReport:
        """Attribute the parked deposits of ``chain_id`` that can be valued now, oldest
        first, each address's in chain order, in one transaction (``revalue``); returns
        what happened. ``still_there`` says which parked deposits
        are still on the canonical chain; the others are dropped."""
        parked = self.of_chain(chain_id, RETRY_BATCH)
        if not parked:
            return RetryReport()
        deposits = [p.deposit for p in parked]
        alive = set(deposits) if still_there is None else still_there(deposits)
        gone = [d for d in deposits if d not in alive]
        for deposit in gone:
            log.warning("chain %d: parked deposit %s is gone (reorg)", chain_id, deposit.tx_hash)
        done = self._revalue([d for d in deposits if d in alive], gone)
        if done.attributed:
            log.info(
                "chain %d: %d parked deposits valued, %d still wait",
                chain_id,
                done.attributed,
                done.parked,
            )
        return RetryReport(done.attributed, done.parked, len(gone))


def park_in(tx: price_store.ParkedDeposits, parked: ParkedDeposit) -> bool:
    """``ParkedDeposits.park`` inside the caller's transaction (a watcher's batch)."""
    if tx.park_deposit(parked):
        return True
    tx.unpark_deposit(parked.deposit)
    tx.park_deposit(parked)
    return False


class HoldsParking(Protocol):
    """What the functions below are handed: anything that holds the parked deposits (a
    ``Gateway`` does); kept for callers that know them."""

    @property
    def parking(self) -> ParkedDeposits: ...


def park(holder: HoldsParking, deposit: Deposit, reason: str) -> bool:
    """Park ``deposit``; ``False`` when it was parked already (its copy is refreshed)."""
    return holder.parking.park_now(deposit, reason)


def parked_addresses(holder: HoldsParking, chain_id: int) -> set[str]:
    """Deposit addresses of ``chain_id`` with a deposit parked: later deposits to them wait."""
    return holder.parking.addresses(chain_id)


def retry_parked(
    holder: HoldsParking,
    chain_id: int,
    still_there: Callable[[list[Deposit]], set[Deposit]] | None = None,
) -> RetryReport:
    """``ParkedDeposits.retry``: attribute the parked deposits of ``chain_id`` that can be
    valued now; returns what happened."""
    return holder.parking.retry(chain_id, still_there)
