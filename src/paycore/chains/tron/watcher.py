"""The deposit watcher of one Tron chain (docs/architecture.md §Chains), shaped like the EVM one.

One pass (:meth:`TronWatcher.step`):

1. Claim (or renew) the chain's lease in storage; another live holder means another process
   scans this chain. The same row holds the cursor: the last block scanned and its blockID.
2. Read the head (``getnowblock``); only blocks at least ``confirmations`` deep are scanned.
3. Load the watched addresses from storage -- after reading the head, so an invoice created
   later cannot have been paid in a block this pass scans.
4. For each range of ``block_batch`` blocks up to the safe head, ``reader.RangeReader``
   reads the blocks: ``getblockbylimitnext`` for as many at once as fit ``response_bytes``
   (``pacing.BlockWindow``: at most 100, fewer after a timeout or a big answer), and for
   each block holding a contract call -- the only transactions that can log --
   ``gettransactioninfobyblocknum``, once per block. Each block is cut down to a digest
   at once (``scan.BlockDigest``). The first block's ``parentHash`` must be the
   cursor's blockID: if it is not, the chain was replaced below the cursor (a fork deeper
   than ``confirmations``): the deposits recorded in replaced blocks are taken back out of
   their invoices (``ChainWatcher._rewind``), and the cursor rewinds ``reorg_rewind``
   blocks, or below the lowest replaced deposit. Within the range each block must name
   the previous one as parent, and the infos must belong to the block read (same
   transaction ids). TRX deposits are ``TransferContract`` transactions in the blocks;
   TRC20 deposits are ``Transfer`` logs in the infos. A request that keeps failing
   (after retries, smaller pieces, the node's rate-limit penalties) ends the read short:
   the blocks read so far are attributed and the cursor moves past them, the unfinished
   ones are kept for the next pass, and nothing read is asked for again. Every request
   keeps to the chain's ``rate_limit``, and the lease is renewed while a range is read.
5. Matches are attributed in chain order through ``Gateway.ingest``, up to
   ``Settings.ingest_batch`` deposits per storage transaction, idempotent on (chain, txID,
   log index, token); ``Withdrawn`` events of genuine paycore wallets become withdraw
   transactions. The range's last batch moves the cursor to its last block, in the
   statement that proves the lease is still ours. A deposit with no fresh price holds the
   range (the batches before it stay committed, the cursor stays) until the refresher has
   stored one, since a deposit valued wrongly cannot be taken back. A watcher killed
   mid-range leaves the cursor where it was, and its successor's re-scan counts nothing
   twice.

Why the full-node API and not TronGrid's ``/v1/contracts/{address}/events``: it is served by
every java-tron node (one's own, TronGrid, other providers), and logs come per block, so the
block whose ID is checked is the block whose logs are attributed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs

from paycore.chains.watching import (
    ChainWatcher,
    FetchedRange,
    Forked,
    Inconsistent,
    StepReport,
    run_all,
)
from paycore.domain.records import Transaction
from paycore.domain.tokens import NATIVE

from . import scan
from .address import to_evm
from .chain import TronChain
from .node import NodeError, RateLimited
from .reader import NO_HISTORY, RangeReader, WatchStatus

if TYPE_CHECKING:
    from paycore.chains.host import ChainHost
    from paycore.chains.records import ChainCursor

log = logging.getLogger("paycore.watcher")

__all__ = ["StepReport", "TronWatcher", "run_watchers"]


#: A fetched and checked block range; its withdrawals are decoded ``Withdrawn`` events.
_Range = FetchedRange[scan.Withdrawal]

#: The node's answers disagree (the chain moved mid-read): retry the range later.
_Inconsistent = Inconsistent

#: The block after the cursor does not descend from the cursor's block.
_Forked = Forked


class TronWatcher(ChainWatcher[TronChain]):
    """Scans one Tron chain through the full-node HTTP API; the lease, cursor and loop are
    ``ChainWatcher``'s, the reading ``reader.RangeReader``'s."""

    _replaced = "fork"

    def __init__(self, gateway: ChainHost, chain: TronChain, *, holder: str | None = None) -> None:
        super().__init__(gateway, chain, holder=holder)
        self.reader = RangeReader(chain)
        #: Reads the blocks above the safe head for detection, afresh each pass; its state
        #: is not the chain's status (the scan's reader is).
        self.head_reader = RangeReader(chain, reports=False)
        #: The highest head the node answered, and its blockID.
        self._head_block: tuple[int, str] = (-1, "")
        self._leased_at = 0.0

    @property
    def status(self) -> WatchStatus:
        """Where this watcher stands with its node (also ``TronChain.watch_status``)."""
        return self.reader.status

    # -- one pass -------------------------------------------------------------------------
    def step(self, stop: threading.Event | None = None) -> StepReport:
        """One pass; a node refusing for rate (the head, a hash) ends it with the reason,
        shown in the status and said once, instead of a traceback each pass."""
        try:
            return super().step(stop)
        except RateLimited as exc:
            self.reader.rate_limited(exc)
            return StepReport(
                held=True, caught_up=False, error=f"rate limited by the node: {exc.detail}"
            )

    def _node_trouble(self, exc: Exception) -> float | None:
        """The node failing (refused, unreachable, timed out, an answer too large): one
        line and a back-off (``ChainWatcher.run``), never a traceback every pass."""
        if not isinstance(exc, NodeError):
            return None
        retry_after = getattr(exc, "retry_after", None)
        return float(retry_after) if retry_after else self.config.poll_interval

    def _ask(self, path: str, body: dict[str, Any] | None = None) -> Any:
        answer, _size = self.chain.node.fetch(path, body, max_wait=self.reader.max_wait)
        return answer

    def _head(self) -> int:
        block = self._ask("wallet/getnowblock")
        number = scan.number(block)
        if number >= self._head_block[0] and isinstance(block, dict) and "blockID" in block:
            self._head_block = (number, scan.block_id(block))
        return number

    def _block_hash(self, number: int) -> str:
        return scan.block_id(self._block(number))

    def _block_times(self, numbers: Sequence[int]) -> dict[int, int]:
        return {n: scan.timestamp(self._block(n)) for n in numbers}

    def _scan(
        self, last: int, last_hash: str | None, safe: int, stop: threading.Event | None
    ) -> StepReport:
        """Fetch and attribute range after range up to ``safe``; the first range's parent
        must be the cursor's block, or the cursor rewinds once this pass. A deposit with no
        fresh price holds the chain: the range is read again on a later pass."""
        report = StepReport(held=True, scanned_from=last + 1)
        if self.reader.history_blocked():  # said once already; the node is asked again later
            return attrs.evolve(report, caught_up=False, error=self.reader.status.detail)
        watched = scan.watch_keys(self._watched_addresses())
        decimals = self._token_decimals()
        tokens = {scan.key(t): t for t in decimals if t != NATIVE}
        # No parking on Tron: a deposit with no fresh price holds its range (waiting None).
        return self._ranges(
            report,
            last,
            last_hash,
            safe,
            stop,
            lambda start, end, parent: self._fetch(start, end, parent, watched, tokens, stop),
            decimals,
            None,
        )

    def _unconfirmed(
        self, start: int, end: int
    ) -> tuple[list[scan.Transfer], dict[str, int], dict[int, int]]:
        """The unconfirmed blocks read as a range is, by a reader of their own. Its carry
        keeps the blocks of the last pass, so a pass asks only for the blocks mined since
        (and their infos); what it returns is believed only when it is one chain, block
        after block, ending in the head block the node answered this pass: a fork that
        replaced a kept block breaks that, the carry is dropped, and the next pass reads
        the whole range afresh. A read stopped short is not taken either (the list stays as
        it was rather than lose the transfers of the blocks not read)."""
        watched = scan.watch_keys(self._watched_addresses())
        decimals = self._token_decimals()
        if not watched:
            return [], decimals, {}
        tokens = {scan.key(t): t for t in decimals if t != NATIVE}
        try:
            fetched = self._fetch(start, end, None, watched, tokens, reader=self.head_reader)
        except Inconsistent:
            self.head_reader.forget()
            raise
        head_number, head_id = self._head_block
        if fetched.last_block is not None or fetched.stopped is not None:
            self.head_reader.forget()
            raise _Inconsistent(fetched.stopped or "the unconfirmed blocks were read in part")
        if head_number == end and fetched.end_hash != head_id:
            self.head_reader.forget()
            raise _Inconsistent(f"block {end} changed while reading the unconfirmed blocks")
        return fetched.transfers, decimals, fetched.timestamps

    def _block(self, number: int) -> dict[str, Any]:
        block: dict[str, Any] = self._ask("wallet/getblockbynum", {"num": number})
        if not block or "blockID" not in block:
            raise _Inconsistent(f"block {number} is missing")
        return block

    # -- fetching -------------------------------------------------------------------------
    def _claim(self) -> ChainCursor | None:
        cursor = super()._claim()
        self._leased_at = time.monotonic()
        return cursor

    def _renew(self) -> bool:
        """Renew the lease mid-range once a quarter of it has passed (a mainnet range under
        a rate limit can take longer than the lease; the reader asks before each request,
        and a request takes at most half the lease); False when another watcher holds it."""
        if time.monotonic() - self._leased_at < self.config.watcher_lease / 4:
            return True
        return self._claim() is not None

    def _fetch(
        self,
        start: int,
        end: int,
        parent: str | None,
        watched: dict[str, str],
        tokens: dict[str, str],
        stop: threading.Event | None = None,
        *,
        reader: RangeReader | None = None,
    ) -> _Range:
        reader = reader or self.reader
        read = reader.read(
            start,
            end,
            parent,
            frozenset(tokens),
            renew=self._renew,
            stop=stop,
        )
        if read.stopped is not None and reader.status.state != NO_HISTORY:
            log.warning(
                "chain %d: read %d of blocks %d..%d: %s",
                self.chain.chain_id,
                len(read.blocks),
                start,
                end,
                read.stopped,
            )
        if not read.blocks:  # said above, or by the reader once (no history)
            raise _Inconsistent(read.stopped or "stopping", logged=True)
        transfers: list[scan.Transfer] = []
        withdrawals: list[scan.Withdrawal] = []
        for block in read.blocks:
            if self.config.scan_native:
                transfers += scan.match_trx(block, watched)
            transfers += scan.match_trc20(block, watched, tokens)
            withdrawals += block.withdrawals
        transfers.sort(key=lambda t: t.order)
        last = read.blocks[-1]
        return FetchedRange(
            last.block_id,
            transfers,
            {b.number: b.timestamp for b in read.blocks},
            withdrawals,
            last_block=last.number if last.number < end else None,
            stopped=read.stopped,
        )

    # -- recording ------------------------------------------------------------------------
    def _withdrawal_records(self, fetched: _Range) -> list[Transaction]:
        """``Withdrawn`` events of genuine paycore wallets, as withdraw transactions."""
        if not fetched.withdrawals:
            return []
        owners = self._owners_of({w.emitter for w in fetched.withdrawals})
        records: list[Transaction] = []
        for event in fetched.withdrawals:
            owner = owners.get(event.emitter)
            if owner is None:
                continue
            record = self._withdrawal(
                tx_hash=event.tx_hash,
                log_index=event.log_index,
                token=NATIVE if int(event.token, 16) == 0 else scan.base58(event.token),
                units=event.units,
                owner=owner,
                to=scan.base58(event.to),
                timestamp=fetched.timestamps[event.block_number],
                prices=self.gateway.prices,
            )
            if record is not None:
                records.append(record)
        return records

    def _owners_of(self, emitters: set[str]) -> dict[str, str | None]:
        """Which emitters (hex digits) are paycore wallets of this factory, and whose:
        ``owner()`` is asked on chain, then the wallet's CREATE2 address is recomputed from
        it, which no other contract can match. Answers are kept (an owner never changes)."""
        for emitter in sorted(emitters - self._wallet_owners.keys()):
            owner = None
            # A node in trouble raises (the pass is retried): only an answer that no
            # wallet is there -- no contract, or a failing owner() -- is kept as None.
            result = self.chain.call(scan.base58(emitter), "owner()")
            if not result.reverted and len(result.output) == 64:
                candidate = scan.base58(result.output)
                if scan.key(self.chain.wallet_of(candidate)) == emitter:
                    owner = self._owner_spelling(candidate)
            self._wallet_owners[emitter] = owner
        return {e: self._wallet_owners[e] for e in emitters}

    def _owner_spelling(self, owner: str) -> str:
        """The owner as its invoices name it: the same key may be a merchant's 0x address
        (an EVM wallet taking Tron payments) or its base58 form."""
        evm = to_evm(owner)
        _items, total = self.gateway.chain_ledger.invoices_of(evm, self.chain.chain_id, limit=1)
        return evm if total else owner


def run_watchers(gateway: ChainHost, chains: list[TronChain], stop_event: threading.Event) -> None:
    """Run each chain's watcher on its own thread until ``stop_event`` is set; blocks."""
    run_all([TronWatcher(gateway, chain) for chain in chains], stop_event)
