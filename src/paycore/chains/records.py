"""The record a chain watcher keeps in storage -- where it is, and who is scanning -- and
the batches it hands to ``Gateway.ingest``.

One row per chain holds both the cursor and the lease, so that moving the cursor and proving
the lease is still held are one statement: a watcher whose lease lapsed and was taken over
cannot move the new holder's cursor (see ``StorageTx.advance_chain``). A batch's deposits
and its cursor move commit in one transaction, so neither is ever seen without the other.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from ..domain.records import Deposit, Transaction


@attrs.frozen
class ChainCursor:
    chain_id: int
    #: The last block fully scanned, or None before the first scan.
    block_number: int | None
    #: That block's hash (0x hex), re-checked on the next scan to detect a reorg.
    block_hash: str | None
    #: Who holds the scanning lease, and until when (unix milliseconds).
    holder: str | None = None
    lease_until: int = 0


class LeaseLost(Exception):
    """Another watcher holds the chain now: the batch that found out wrote nothing."""


@attrs.frozen
class CursorMove:
    """Where a batch of deposits leaves its chain's cursor, written in the batch's own
    transaction by ``advance_chain``, which also proves the lease is still ``holder``'s:
    a watcher whose lease was taken over commits nothing at all."""

    holder: str
    #: The cursor as it is (block, hash): kept by a batch that does not finish its range.
    at: tuple[int, str | None]
    #: Where a batch that finishes its range moves it; None keeps it at ``at``.
    to: tuple[int, str | None] | None
    now_ms: int
    lease_ms: int


@attrs.frozen
class DepositBatch:
    """One transaction's worth of a chain's deposits, in chain order, for ``Gateway.ingest``."""

    chain_id: int
    deposits: Sequence[Deposit]
    #: Addresses with a deposit parked already: later deposits to them are parked behind it.
    waiting: frozenset[str] = frozenset()
    #: Stop at the first deposit with no usable price instead of parking it (Tron holds
    #: its range until the price comes).
    hold: bool = False
    #: Withdraw transactions seen in the range, recorded with its last batch.
    withdrawals: Sequence[Transaction] = ()
    cursor: CursorMove | None = None


@attrs.frozen
class Ingested:
    """What one batch did."""

    #: Deposits recorded by this batch or before it (a re-scan): done with.
    attributed: int = 0
    #: Deposits parked to wait for a price (or behind one that waits).
    parked: int = 0
    #: With ``hold``: why the batch stopped before its end; the cursor stayed.
    held: str | None = None
    #: Withdraw transactions newly recorded.
    withdrawals: int = 0
    #: The addresses of the deposits parked, so later batches keep them in order.
    parked_at: frozenset[str] = frozenset()
