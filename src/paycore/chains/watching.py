"""What every chain's deposit watcher shares (docs/architecture.md §Chains): the lease, the cursor,
the shape of one pass and the loop of passes.

A watcher holds its chain's lease in storage; the same row holds the cursor (the last block
scanned and its hash). :meth:`ChainWatcher.step` claims the lease, reads the head, and on
the very first pass starts at ``start_block``, or else before the oldest watched invoice
was created (found by block timestamp, ``timeline``); the scan itself --
how blocks are fetched, checked against reorgs and matched -- is the chain's own
(:meth:`ChainWatcher._scan`). What a scan finds is turned into :class:`Deposit` and withdraw
:class:`Transaction` records here, so both chains value and record them alike.

Deep reorgs. A reorg deeper than ``confirmations`` can replace a block whose deposit was
already counted. Every recorded deposit keeps its block's number and hash, and a reorg
replaces a suffix of the chain, so a replaced deposit block means a replaced cursor block:
whenever the chain's scan finds the cursor's block replaced (:meth:`ChainWatcher._rewind`),
the recorded deposits of the ``reorg_depth`` blocks below it are re-checked, newest block
first, up to the first block still on the chain. Each deposit whose block is gone is taken
back out of its invoice (``Gateway.reorg_deposits``, all in one transaction: paidAmount and
status recomputed, an event emitted), and the cursor rewinds below the lowest such block,
so a transfer the new chain mined again is found and counted again, once. Deposits
recorded above the cursor (the committed batches of a range whose watcher died before its
last batch moved the cursor) are re-checked at every pass.

Nodes that lag. Behind a load balancer one request may reach a node a few blocks behind
the last: it answers an older head and no block above its own. Such an answer never moves
the cursor back (a head below the cursor ends the pass), and a block it lacks is never taken
for a replaced one (:meth:`ChainWatcher._known_hashes`): deposits are only taken back on a
node that shows another block at their height. A read whose answers disagree is asked again
at once (:func:`asked_again`), since the next request often reaches another node.

Attribution. A range's deposits go to ``Gateway.ingest`` in batches of
``Settings.ingest_batch``, one storage transaction each; the last batch of a range also
moves the cursor, in the statement that proves the lease (docs/decisions.md, Batched
ingest).

Detection. After the scan, a pass also reads the blocks above the safe head and makes
their transfers to watched addresses the chain's detected transfers
(``Gateway.record_detected``, replaced whole): the invoices' provisional ``detected`` list,
"payment detected, confirming", never counted (docs/chains.md, Detection). A read that
cannot be stood behind leaves the list as it was.

Why one place: the lease and cursor protocol is what makes a watcher safe to kill and to run
twice; two copies of it could drift apart and only one chain would then count a deposit
twice or lose one.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable, Sequence
from decimal import Decimal
from functools import partial
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import attrs

from paycore.accounting.attribution import AttributionRace
from paycore.chains.records import CursorMove, DepositBatch, Ingested, LeaseLost
from paycore.domain.money import from_base_units, value_at
from paycore.domain.records import Deposit, Transaction, TxType, Valuation
from paycore.domain.tokens import NATIVE
from paycore.errors import PriceUnavailable, StorageUnavailable
from paycore.ops.outages import LoopGuard

from .common import ChainBase, Transfer
from .timeline import last_block_before

if TYPE_CHECKING:
    from paycore.chains.host import ChainHost
    from paycore.chains.records import ChainCursor
    from paycore.prices.pricing import PriceTable

log = logging.getLogger("paycore.watcher")


def default_holder() -> str:
    """A lease holder id unique to this watcher instance, readable in the database."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


@attrs.frozen
class StepReport:
    """What one pass did; ``caught_up`` means a caller may sleep before the next."""

    held: bool
    scanned_from: int | None = None
    scanned_to: int | None = None
    deposits: int = 0
    withdrawals: int = 0
    rewound_to: int | None = None
    caught_up: bool = True
    error: str | None = None
    #: Deposits left waiting for a fresh price this pass (``paycore.prices.parking``).
    parked: int = 0
    #: Recorded deposits taken back this pass because a reorg replaced their block.
    reorged: int = 0
    #: Transfers detected above the safe head (provisional, not counted); None: not read.
    detected: int | None = None


ChainT = TypeVar("ChainT", bound=ChainBase)
W = TypeVar("W")


@attrs.frozen
class FetchedRange(Generic[W]):
    """A fetched and checked block range, ready for attribution: the hash of its last
    block (the cursor's next hash), its matched transfers in chain order, the time of
    every block they (and the withdrawals) are in, and the chain's withdrawal events."""

    end_hash: str
    transfers: list[Transfer]
    timestamps: dict[int, int]
    withdrawals: list[W]
    #: The last block fetched when the fetch stopped short of the range's end (None: the
    #: whole range): what was read is attributed and the cursor moves to it, so the next
    #: pass asks only for the rest.
    last_block: int | None = None
    #: Why it stopped short (a request that kept failing), reported as the pass's error;
    #: None when it stopped for a reason of the pass's own (a stop, a deadline).
    stopped: str | None = None


#: Block hashes asked for at once when recorded deposits are re-checked.
_HASHES_PER_BATCH = 16
#: Seconds before the oldest watched invoice's creation a new watcher begins: room for the
#: gateway host's clock to run ahead of the block producers' (docs/chains.md).
FIRST_PASS_MARGIN = 600
#: The longest wait between passes while the node fails: each failed pass doubles the wait
#: from ``poll_interval`` up to this, so a dead node is asked once a minute, not every 2 s.
NODE_BACKOFF_CAP = 60.0
#: A node outage is said when it starts and again every this many failed passes.
NODE_REMIND_EVERY = 30


class Inconsistent(Exception):
    """The node's answers disagree (the chain moved mid-read, or a node that lags behind a
    load balancer answered part of them): retry the range later. ``logged``: the chain's
    watcher has said why already, at the level it deserves."""

    def __init__(self, message: str = "", *, logged: bool = False) -> None:
        super().__init__(message)
        self.logged = logged


#: Tries of a read whose answers disagree before the pass gives up: behind a load balancer
#: the next request often reaches another node, so asking again at once usually settles it.
ASK_AGAIN = 3
T = TypeVar("T")


def asked_again(read: Callable[[], T], tries: int = ASK_AGAIN) -> T:
    """``read()``, asked again at once while it raises :class:`Inconsistent`, ``tries``
    times in all; the last one's :class:`Inconsistent` is raised, and so is at once one
    already ``logged`` (the chain's reader gave up on purpose: asking again would not help)."""
    for attempt in range(tries):
        try:
            return read()
        except Inconsistent as exc:
            if exc.logged or attempt == tries - 1:
                raise
    raise AssertionError("unreachable")


class Forked(Exception):
    """The block after the cursor does not descend from the cursor's block."""


class RangeHeld(Exception):
    """Attribution cannot finish this range now (a deposit has no fresh price): the cursor
    stays, and the range is read again on a later pass."""


class ChainWatcher(Generic[ChainT]):
    """The lease, cursor and pass loop of one chain's watcher; a subclass scans.

    Subclasses provide :meth:`_head`, :meth:`_block_hash` and :meth:`_scan`, and set
    ``_replaced`` to the word their logs use for a replaced block ("reorg", "fork").
    """

    _replaced = "reorg"
    #: Block timestamps asked for at once when searching where a first pass starts.
    _probes = 1

    def __init__(self, gateway: ChainHost, chain: ChainT, *, holder: str | None = None) -> None:
        self.gateway = gateway
        self.chain = chain
        self.config = chain.config
        self.holder = holder or default_holder()
        self._wallet_owners: dict[str, str | None] = {}
        self._reorged = 0  # deposits taken back during the current pass
        #: The highest head any node has answered: a node answering less is behind.
        self._seen_head = -1
        #: Whether this watcher has emptied the chain's detected list since detection is off.
        self._detect_cleared = False

    # -- what the chain provides -------------------------------------------------------------
    def _head(self) -> int:
        """The number of the chain's latest block."""
        raise NotImplementedError

    def _block_hash(self, number: int) -> str:
        """The hash (blockID) of block ``number``; raises when the node does not have it."""
        raise NotImplementedError

    def _block_times(self, numbers: Sequence[int]) -> dict[int, int]:
        """The timestamp (unix seconds) of each block; raises :class:`Inconsistent` when the
        node lacks one. Asked ``_probes`` at a time by the first pass's search."""
        raise NotImplementedError

    def _block_hashes(self, numbers: Sequence[int]) -> dict[int, str | None]:
        """The hash of each block, None for one the chain does not have (any more). A chain
        whose node answers several at once overrides this."""
        hashes: dict[int, str | None] = {}
        for number in numbers:
            try:
                hashes[number] = self._block_hash(number)
            except Inconsistent:
                hashes[number] = None
        return hashes

    def _scan(
        self, last: int, last_hash: str | None, safe: int, stop: threading.Event | None
    ) -> StepReport:
        """Scan the blocks after ``last`` (whose hash the cursor holds, if any) up to
        ``safe``, attributing what they hold and advancing the cursor range by range."""
        raise NotImplementedError

    def _node_failed(self, exc: Exception, failures: int) -> None:
        """Say a node outage once, as it starts, and again every ``NODE_REMIND_EVERY``
        failed passes, instead of a line (or a traceback) every pass while it lasts."""
        level = logging.WARNING if failures % NODE_REMIND_EVERY == 1 else logging.DEBUG
        log.log(
            level,
            "chain %d: watcher pass failed: %s (%d in a row; backing off)",
            self.chain.chain_id,
            exc,
            failures,
        )

    def _node_trouble(self, exc: Exception) -> float | None:
        """Seconds to wait before the next pass when ``exc`` is the node failing (no answer,
        a refusal, every endpoint resting), or None for anything else (logged in full)."""
        return None

    # -- lease and cursor -----------------------------------------------------------------
    def _now_ms(self) -> int:
        return int(self.gateway.clock() * 1000)

    def _lease_ms(self) -> int:
        return int(self.config.watcher_lease * 1000)

    def _claim(self) -> ChainCursor | None:
        return self.gateway.chain_ledger.claim(
            self.chain.chain_id, self.holder, self._now_ms(), self._lease_ms()
        )

    def _advance(self, number: int, block_hash: str | None) -> bool:
        return self.gateway.chain_ledger.advance(
            self.chain.chain_id,
            self.holder,
            number,
            block_hash,
            self._now_ms(),
            self._lease_ms(),
        )

    def release(self) -> None:
        self.gateway.chain_ledger.release(self.chain.chain_id, self.holder)

    def _rewind(self, last: int) -> tuple[int, str | None]:
        """Move the cursor ``reorg_rewind`` blocks back (never below ``start_block``) after
        block ``last`` was found replaced; returns the new cursor and its hash.

        First the deposits recorded in the ``reorg_depth`` blocks up to ``last`` are
        re-checked, and those whose block was replaced are taken back; the cursor then
        rewinds below the lowest of them too, so the new chain is scanned from there."""
        floor = (self.config.start_block or 0) - 1
        target = max(last - max(self.config.reorg_rewind, 1), floor)
        lowest = self._check_recorded(max(last - self.config.reorg_depth, floor + 1, 0))
        if lowest is not None:
            target = max(min(target, lowest - 1), floor)
        target_hash = self._block_hash(target) if target >= 0 else None
        self._advance(target, target_hash)
        log.warning(
            "chain %d: block %d was replaced (%s); re-scanning from %d",
            self.chain.chain_id,
            last,
            self._replaced,
            target + 1,
        )
        return target, target_hash

    def _check_recorded(self, from_block: int) -> int | None:
        """Take back every recorded deposit in blocks ``from_block`` and later whose block
        is no longer on the chain; returns the lowest such block, or None.

        Blocks are checked newest first, a batch at a time, and the check stops at the
        first block still on the chain: a reorg replaces a suffix, so every older block is
        intact too, and the cost is the replaced blocks, not the depth looked at."""
        recorded = self.gateway.chain_ledger.recorded_deposits(self.chain.chain_id, from_block)
        by_block: dict[int, list[Transaction]] = {}
        for record in recorded:  # newest block first
            assert record.block_number is not None
            by_block.setdefault(record.block_number, []).append(record)
        numbers = list(by_block)
        lowest: int | None = None
        taken: list[Transaction] = []
        for start in range(0, len(numbers), _HASHES_PER_BATCH):
            chunk = numbers[start : start + _HASHES_PER_BATCH]
            hashes = asked_again(partial(self._known_hashes, chunk))
            intact = False
            for number in chunk:
                gone = [r for r in by_block[number] if r.block_hash != hashes[number]]
                if not gone:
                    intact = True
                    break
                for record in gone:
                    log.warning(
                        "chain %d: block %d of deposit %s (log %d) was replaced; taking it back",
                        self.chain.chain_id,
                        number,
                        record.tx_hash,
                        record.log_index,
                    )
                taken += gone
                lowest = number
            if intact:
                break
        if taken:  # one transaction for them all
            self.gateway.reorg_deposits(taken)
            self._reorged += len(taken)
        return lowest

    def _known_hashes(self, numbers: Sequence[int]) -> dict[int, str]:
        """The hash of each block; :class:`Inconsistent` when the node lacks one. No block
        at a height is no proof of a reorg: a node that lags (behind a load balancer, say)
        answers the same, so recorded deposits are judged only by a node that has it."""
        hashes = self._block_hashes(numbers)
        missing = [n for n in numbers if hashes.get(n) is None]
        if missing:
            raise Inconsistent(f"block {missing[0]} of a recorded deposit is not available")
        return {n: h for n, h in hashes.items() if h is not None}

    # -- one pass -------------------------------------------------------------------------
    def step(self, stop: threading.Event | None = None) -> StepReport:
        """Claim the lease, then scan up to the block ``confirmations`` below the head.

        A chain without a cursor starts at ``start_block`` when it is set, else before the
        oldest watched invoice was created (:meth:`_first_cursor`). A pass whose node
        answers something it cannot stand behind -- a head below the cursor, a block it
        does not have -- ends with ``error`` set and the cursor where it was."""
        self._reorged = 0
        try:
            report = self._step(stop)
        except Inconsistent as exc:
            if not exc.logged:
                log.warning("chain %d: %s; retrying", self.chain.chain_id, exc)
            report = StepReport(held=True, caught_up=False, error=str(exc))
        return attrs.evolve(report, reorged=self._reorged) if self._reorged else report

    def _step(self, stop: threading.Event | None) -> StepReport:
        cursor = self._claim()
        if cursor is None:
            return StepReport(held=False)
        head = self._head()
        for _ in range(ASK_AGAIN - 1):  # an older head than seen: maybe another node has more
            if head >= self._seen_head:
                break
            head = max(head, self._head())
        self._seen_head = max(self._seen_head, head)
        safe = head - self.config.confirmations
        if safe < 0:
            return StepReport(held=True)
        last, last_hash = cursor.block_number, cursor.block_hash
        if last is None:
            if self.config.start_block is None:
                last, last_hash = self._first_cursor(safe)
            else:
                last, last_hash = self.config.start_block - 1, None
        elif head < last:
            # Behind a load balancer, a node that lags answers an older head: it does not
            # have the cursor's block, so nothing it says about it can be trusted (a reorg
            # to a shorter chain looks the same, and shows once the chain passes the cursor).
            raise Inconsistent(f"the node's head {head} is behind the cursor {last}")
        # Deposits above the cursor were recorded by a watcher that died before advancing
        # it; the scan will meet the blocks again, but a replaced one would go unnoticed.
        self._check_recorded(last + 1)
        report = self._scan(last, last_hash, safe, stop)
        if report.held and not (stop is not None and stop.is_set()):
            detected = self._detect(safe, head)
            if detected is not None:
                report = attrs.evolve(report, detected=detected)
        return report

    # -- detection (docs/chains.md, Detection) ----------------------------------------------
    def _detect(self, safe: int, head: int) -> int | None:
        """Read the blocks above ``safe`` up to ``head`` -- mined, not yet deep enough to be
        attributed -- and make their transfers to watched addresses the chain's detected
        transfers (``Gateway.record_detected``), replacing the last pass's: a transfer a
        reorg dropped is gone from the new read, one that reached its depth was attributed
        by this pass's scan and is below the range. Returns how many were stored; None when
        detection is off or the node's answers could not be stood behind (the list stays as
        it was: it is provisional, and the next pass reads it again)."""
        required = self.config.confirmations
        if required <= 0 or not self.config.detect_unconfirmed:
            if not self._detect_cleared:  # a list kept from when it was on goes at once
                self.gateway.record_detected(self.chain.chain_id, [], {}, required)
                self._detect_cleared = True
            return None
        self._detect_cleared = False
        if head <= safe:
            return None
        try:
            transfers, decimals, timestamps = self._unconfirmed(safe + 1, head)
        except Inconsistent as exc:
            log.info("chain %d: unconfirmed blocks not read: %s", self.chain.chain_id, exc)
            return None
        except Exception as exc:
            if self._node_trouble(exc) is None:
                raise
            log.info("chain %d: unconfirmed blocks not read: %s", self.chain.chain_id, exc)
            return None
        deposits = [self._deposit(t, decimals, timestamps) for t in transfers]
        depth = {t.block_number: head - t.block_number + 1 for t in transfers}
        return len(self.gateway.record_detected(self.chain.chain_id, deposits, depth, required))

    def _unconfirmed(
        self, start: int, end: int
    ) -> tuple[list[Transfer], dict[str, int], dict[int, int]]:
        """The transfers to watched addresses in blocks ``start..end`` (above the safe
        head), in chain order, with the decimals of their tokens and their blocks' times.
        What a chain keeps from an earlier pass it uses only while the block is still the
        one on the chain (a reorg must show); raises :class:`Inconsistent` when the read
        cannot be stood behind."""
        raise NotImplementedError

    def _first_cursor(self, safe: int) -> tuple[int, str | None]:
        """Where a watcher with no cursor and no ``start_block`` begins, set as its cursor:
        the last block more than ``FIRST_PASS_MARGIN`` seconds before the oldest watched
        invoice was created, found by block timestamp; the safe head when no invoice is
        watched (no older block can pay an invoice that does not exist yet: the head was
        read before the invoices). Never above the safe head."""
        oldest = self.gateway.chain_ledger.earliest_watched(
            self.chain.chain_id, int(self.gateway.clock()) - self.config.watch_grace
        )
        start = safe
        if oldest is not None:
            moment = oldest - FIRST_PASS_MARGIN
            start = min(safe, last_block_before(moment, safe, self._block_times, self._probes))
        start_hash = asked_again(partial(self._block_hash, start)) if start >= 0 else None
        self._advance(start, start_hash)
        log.info(
            "chain %d: first pass starts after block %d (%s)",
            self.chain.chain_id,
            start,
            "no invoice is watched"
            if oldest is None
            else f"the oldest watched invoice is {oldest}",
        )
        return start, start_hash

    def _ranges(
        self,
        report: StepReport,
        last: int,
        last_hash: str | None,
        safe: int,
        stop: threading.Event | None,
        fetch: Callable[[int, int, str | None], FetchedRange[Any]],
        decimals: dict[str, int],
        waiting: set[str] | None,
    ) -> StepReport:
        """Range after range of ``block_batch`` blocks up to ``safe``: ``fetch`` the blocks
        after ``last`` (given the hash they must descend from), then attribute the range's
        deposits, record its withdrawals and advance the cursor, in one storage
        transaction per ``Settings.ingest_batch`` deposits (:meth:`_commit`). A watcher
        killed mid-range leaves the cursor where it was; its successor re-scans the range
        and the idempotent attribution counts every deposit once.

        ``waiting`` holds the addresses with a parked deposit (a deposit with no fresh
        price is parked, and so is any later one to its address); None holds the range
        instead, to be read again on a later pass (:class:`RangeHeld`).

        ``fetch`` raises :class:`Forked` when the first block does not descend from the
        cursor's (the cursor rewinds, once a pass), :class:`Inconsistent` when the node's
        answers disagree. A fetch that read only part of the range says so
        (``FetchedRange.last_block``): that part is attributed and the cursor moves past it.
        """
        rewound = False
        while last < safe:
            if stop is not None and stop.is_set():
                return attrs.evolve(report, caught_up=False)
            end = min(last + self.config.block_batch, safe)
            try:
                fetched = asked_again(partial(fetch, last + 1, end, last_hash))
            except Forked:
                if rewound:  # the chain is still moving under us: next pass
                    return attrs.evolve(report, caught_up=False, error="fork")
                last, last_hash = self._rewind(last)
                rewound = True
                report = attrs.evolve(report, rewound_to=last, scanned_from=last + 1)
                continue
            except Inconsistent as exc:
                if not exc.logged:
                    log.warning("chain %d: %s; retrying", self.chain.chain_id, exc)
                return attrs.evolve(report, caught_up=False, error=str(exc))
            if fetched.last_block is not None:  # stopped short: attribute what was read
                end = fetched.last_block
            try:
                done = self._commit(fetched, decimals, (last, last_hash), end, waiting)
            except RangeHeld as exc:
                return attrs.evolve(report, caught_up=False, error=str(exc))
            except AttributionRace as exc:  # rolled back: the next pass reads it again
                log.warning("chain %d: %s; retrying", self.chain.chain_id, exc)
                return attrs.evolve(report, caught_up=False, error=str(exc))
            except LeaseLost:
                log.warning("chain %d: lease lost to another watcher", self.chain.chain_id)
                return attrs.evolve(report, held=False, caught_up=False)
            last, last_hash = end, fetched.end_hash
            report = attrs.evolve(
                report,
                scanned_to=end,
                deposits=report.deposits + done.attributed,
                withdrawals=report.withdrawals + done.withdrawals,
                parked=report.parked + done.parked,
            )
            if fetched.stopped is not None:
                return attrs.evolve(report, caught_up=False, error=fetched.stopped)
        return report

    def _commit(
        self,
        fetched: FetchedRange[Any],
        decimals: dict[str, int],
        at: tuple[int, str | None],
        end: int,
        waiting: set[str] | None,
    ) -> Ingested:
        """Attribute a fetched range through ``Gateway.ingest``, ``Settings.ingest_batch``
        deposits per transaction. Only the last batch records the withdrawals and moves the
        cursor to ``end``; every batch proves the lease in its own transaction, so a
        watcher whose lease was taken over writes nothing. Raises :class:`RangeHeld` (the
        batches before the held deposit stay committed, the cursor stays at ``at``)."""
        deposits = [self._deposit(t, decimals, fetched.timestamps) for t in fetched.transfers]
        withdrawals = self._withdrawal_records(fetched)
        size = self.gateway.settings.ingest_batch
        batches = [deposits[i : i + size] for i in range(0, len(deposits), size)] or [[]]
        attributed = parked = 0
        for n, batch in enumerate(batches):
            last = n == len(batches) - 1
            done = self.gateway.ingest(
                DepositBatch(
                    self.chain.chain_id,
                    batch,
                    waiting=frozenset(waiting or ()),
                    hold=waiting is None,
                    withdrawals=withdrawals if last else (),
                    cursor=CursorMove(
                        self.holder,
                        at,
                        (end, fetched.end_hash) if last else None,
                        self._now_ms(),
                        self._lease_ms(),
                    ),
                )
            )
            attributed += done.attributed
            parked += done.parked
            if done.held is not None:
                log.error(
                    "chain %d: deposit not valued, will retry: %s", self.chain.chain_id, done.held
                )
                raise RangeHeld(done.held)
            if done.parked:
                log.warning(
                    "chain %d: %d deposits wait for a price", self.chain.chain_id, done.parked
                )
            if waiting is not None:
                waiting |= done.parked_at
        return attrs.evolve(done, attributed=attributed, parked=parked)

    def _withdrawal_records(self, fetched: FetchedRange[Any]) -> list[Transaction]:
        """The range's ``Withdrawn`` events of genuine paycore wallets, as withdraw
        transactions (read from the node before the range's transaction opens)."""
        raise NotImplementedError

    def _watched_addresses(self) -> list[str]:
        deadline_after = int(self.gateway.clock()) - self.config.watch_grace
        return self.gateway.chain_ledger.watched_addresses(self.chain.chain_id, deadline_after)

    def _token_decimals(self) -> dict[str, int]:
        """Decimals of the native coin and every token this chain watches: configured, then
        priced (stale prices too: a token priced once is still watched)."""
        known = self.chain.known_tokens({}, self.gateway.pricing.tokens())
        contracts = [t for t in known if t != NATIVE]
        metas = self.chain.token_meta(contracts)
        return {NATIVE: self.config.native_decimals} | {t: m.decimals for t, m in metas.items()}

    # -- recording ------------------------------------------------------------------------
    def _deposit(
        self, transfer: Transfer, decimals: dict[str, int], timestamps: dict[int, int]
    ) -> Deposit:
        """The deposit a matched transfer is, valued in whole tokens, stamped with its
        block's time."""
        return Deposit(
            chain_id=self.chain.chain_id,
            tx_hash=transfer.tx_hash,
            log_index=transfer.log_index,
            token=transfer.token,
            from_=transfer.from_,
            to=transfer.to,
            amount=from_base_units(transfer.units, decimals[transfer.token]),
            timestamp=timestamps[transfer.block_number],
            block_number=transfer.block_number,
            block_hash=transfer.block_hash,
        )

    def _withdrawal(
        self,
        *,
        tx_hash: str,
        log_index: int,
        token: str,
        units: int,
        owner: str,
        to: str,
        timestamp: int,
        prices: PriceTable,
    ) -> Transaction | None:
        """A genuine wallet's ``Withdrawn`` event as a withdraw transaction; None for a
        token that has no decimals (it cannot be valued). Valued with ``prices``; a token with
        no fresh price is recorded all the same, valued at nothing: the withdrawal happened."""
        meta = self.chain.token_meta([token]).get(token)
        if meta is None:
            return None
        amount = from_base_units(units, meta.decimals)
        valuation: Valuation | None
        try:
            valuation = prices.rate(f"{self.chain.chain_id}:{token}")
            vs_value = value_at(valuation.rate, amount)
        except PriceUnavailable:
            valuation = None
            vs_value = Decimal(0)  # recorded all the same, valued at nothing
        return Transaction(
            type=TxType.WITHDRAW,
            tx_hash=tx_hash,
            log_index=log_index,
            chain_id=self.chain.chain_id,
            token=token,
            from_=self.chain.wallet_of(owner),
            amount=amount,
            vs_value=vs_value,
            timestamp=timestamp,
            owner=owner,
            to=to,
            valuation=valuation,
        )

    # -- loop -----------------------------------------------------------------------------
    def run(self, stop: threading.Event) -> None:
        """Pass after pass until ``stop`` is set; sleeps ``poll_interval`` once caught up
        (or after an error, which is logged: a node outage must not end the watcher).
        While storage is down the passes back off (``paycore.ops.outages``) and resume when
        it answers; the lease lapses meanwhile and the cursor keeps the place."""
        guard = LoopGuard.from_settings(
            f"chain {self.chain.chain_id} watcher",
            log,
            self.gateway.settings,
            pace=self.config.poll_interval,
        )
        node_failures = 0  # passes in a row the node failed: the outage's length
        try:
            while not stop.is_set():
                try:
                    report = self.step(stop)
                except StorageUnavailable as exc:
                    stop.wait(guard.failed(exc))
                    continue
                except Exception as exc:
                    pause = self._node_trouble(exc)
                    if pause is None:
                        log.exception("chain %d: watcher pass failed", self.chain.chain_id)
                    else:  # the node's trouble, already worded: said once, then backed off
                        node_failures += 1
                        self._node_failed(exc, node_failures)
                        backoff = min(
                            self.config.poll_interval * 2 ** (node_failures - 1), NODE_BACKOFF_CAP
                        )
                        stop.wait(max(0.0, max(pause, backoff) - self.config.poll_interval))
                    report = StepReport(held=True, error="exception")
                else:
                    guard.succeeded()
                    if node_failures:
                        log.info(
                            "chain %d: the node answers again after %d failed passes",
                            self.chain.chain_id,
                            node_failures,
                        )
                        node_failures = 0
                if report.caught_up or not report.held or report.error:
                    stop.wait(self.config.poll_interval)
        finally:
            try:
                self.release()
            except StorageUnavailable as exc:  # the lease lapses on its own
                log.warning("chain %d: could not release the lease: %s", self.chain.chain_id, exc)
            except Exception:  # storage gone at shutdown: the lease lapses on its own
                log.exception("chain %d: could not release the lease", self.chain.chain_id)


def run_all(watchers: Sequence[ChainWatcher[Any]], stop_event: threading.Event) -> None:
    """Run each watcher on its own thread until ``stop_event`` is set; blocks."""
    threads = [
        threading.Thread(
            target=w.run, args=(stop_event,), name=f"paycore-watch-{w.chain.chain_id}", daemon=True
        )
        for w in watchers
    ]
    for thread in threads:
        thread.start()
    while not stop_event.wait(0.5):
        pass
    for thread in threads:
        thread.join()
