"""Reading a block range from a Tron node at mainnet scale: bounded requests, adaptive sizes,
retries of the failed part only, and a node that cannot serve what the watcher needs.

Requests per block. Each block costs one ``gettransactioninfobyblocknum`` (all of a block's
transaction infos at once, never one per transaction; none for a block without a contract
call) and a share of one ``getblockbylimitnext``, whose size ``pacing.BlockWindow`` keeps
near ``response_bytes``: on mainnet about 1.1 requests a block.

Failures. A request that fails is asked again (a request for many blocks first in smaller
pieces), with a growing pause; a refusal for rate waits out the node's penalty. What was
read before the failure is kept: the blocks read whole are handed back for attribution (the
cursor moves past them), and blocks fetched but not yet finished stay as digests
(``scan.BlockDigest``) for the next pass, so nothing that succeeded is asked for twice. Only
when a request keeps failing does the pass stop, short, with the reason.

A node without history. A java-tron node with ``storage.transHistory.switch = "off"`` (or a
lite full node, for blocks it pruned) answers ``[]`` for the infos of any block, or has no
block at all below its head. No retry can help and every deposit would wait for ever, so
the reader says so once, at error level, shows it in the chain's :class:`WatchStatus`, and
asks again only every ``no_history_retry`` seconds until the node has it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs

from paycore.chains.watching import Forked

from . import scan
from .node import NodeError, RateLimited
from .pacing import BlockWindow

if TYPE_CHECKING:
    from .chain import TronChain

log = logging.getLogger("paycore.watcher")

OK = "ok"
NO_HISTORY = "no-history"
RATE_LIMITED = "rate-limited"
QUOTA = "quota-spent"
NODE_ERROR = "node-error"


@attrs.frozen
class WatchStatus:
    """Where a Tron chain's watcher stands with its node, for the operator
    (``TronChain.watch_status``, ``paycore.chains.tron.health``).

    ``state``: ``ok``; ``no-history`` (the node keeps no transaction infos: deposits wait
    until it is replaced); ``rate-limited`` (the node refuses for rate, the watcher waits out
    its penalties); ``quota-spent`` (the API key's daily quota); ``node-error`` (requests keep
    failing). ``blocks_per_request`` and ``requests_per_second`` are the current pace (None:
    no limit)."""

    state: str
    detail: str
    since: float
    blocks_per_request: int
    requests_per_second: float | None


@attrs.frozen
class Read:
    """Blocks read whole, in order from the range's start, and why the read stopped short
    (None: it reached the end, or the pass is stopping)."""

    blocks: list[scan.BlockDigest]
    stopped: str | None = None


class _Stop(Exception):
    """The rest of the range cannot be read this pass; the message says why."""


class RangeReader:
    """Reads ranges of one chain for its watcher; keeps the pace and the unfinished blocks
    between passes."""

    #: Failed attempts of one request (asking for one block) before the pass stops short.
    attempts = 4
    #: Refusals for rate of one request before the pass stops short.
    rate_attempts = 6
    #: ``[]`` answers for the infos of a block with contract calls (or no block at all)
    #: before the node is taken to have no history.
    empty_attempts = 3
    #: The first pause between failed attempts, doubled each time (at most 10 s).
    backoff = 0.5
    #: Seconds between two tries of a node found without history.
    no_history_retry = 60.0
    #: Seconds unfinished digests are kept for a later pass.
    carry_for = 120.0

    def __init__(
        self, chain: TronChain, *, clock: Callable[[], float] = time.time, reports: bool = True
    ) -> None:
        self.chain = chain
        #: Whether this reader's state is the chain's ``watch_status`` (the scan's reader;
        #: not the one that reads the unconfirmed head for detection).
        self.reports = reports
        self.node = chain.node
        config = chain.config
        self.window = BlockWindow(config.rpc_batch, config.response_bytes)
        #: The longest one request waits for the rate limiter, and for its answer: the
        #: lease, renewed before each request, must outlive both.
        self.max_wait = max(1.0, min(60.0, config.watcher_lease / 2))
        self._clock = clock
        self._carry: dict[int, scan.BlockDigest] = {}
        self._carry_tokens: frozenset[str] = frozenset()
        self._carry_at = 0.0
        self._probed = 0.0
        self._stop: threading.Event | None = None
        self._renew: Callable[[], bool] | None = None
        self.status = self._status(OK, "")
        if reports:
            chain.watch_status = self.status

    @property
    def timeout(self) -> float:
        """Seconds one request may take: the node's timeout, at most half the lease."""
        return min(self.node.timeout, max(0.5, self.chain.config.watcher_lease / 2))

    # -- status ---------------------------------------------------------------------------
    def _status(self, state: str, detail: str) -> WatchStatus:
        return WatchStatus(state, detail, self._clock(), self.window.size, self.node.limiter.rate)

    def _set(self, state: str, detail: str) -> None:
        since = self.status.since if state == self.status.state else self._clock()
        self.status = attrs.evolve(self._status(state, detail), since=since)
        if self.reports:
            self.chain.watch_status = self.status

    def history_blocked(self) -> bool:
        """Whether the node was found without history less than ``no_history_retry`` ago:
        the pass then sends nothing."""
        return (
            self.status.state == NO_HISTORY and self._clock() - self._probed < self.no_history_retry
        )

    def _no_history(self, detail: str) -> _Stop:
        self._probed = self._clock()
        if self.status.state != NO_HISTORY:
            log.error(
                "chain %d: the node has no transaction history (%s); deposits cannot be "
                "seen until rpc_url points at a full node that keeps it (java-tron with "
                "storage.transHistory.switch on, not a lite full node); trying again every "
                "%.0fs",
                self.chain.chain_id,
                detail,
                self.no_history_retry,
            )
        self._set(NO_HISTORY, detail)
        return _Stop(f"the node has no transaction history: {detail}")

    def rate_limited(self, exc: RateLimited) -> None:
        """Show and (once per state) log a refusal for rate."""
        state = QUOTA if exc.quota else RATE_LIMITED
        if self.status.state != state:
            level = logging.ERROR if exc.quota else logging.WARNING
            log.log(
                level,
                "chain %d: the node refuses requests for rate (%s); paused %.0fs, now at "
                "%s requests/s",
                self.chain.chain_id,
                str(exc.detail)[:200],
                exc.retry_after or 0,
                _pace(self.node.limiter.rate),
            )
        self._set(state, str(exc.detail)[:200])

    # -- reading --------------------------------------------------------------------------
    def read(
        self,
        start: int,
        end: int,
        parent: str | None,
        tokens: frozenset[str],
        *,
        renew: Callable[[], bool] | None = None,
        stop: threading.Event | None = None,
    ) -> Read:
        """Blocks ``start``..``end`` as digests, each with its infos read, each descending
        from the one before and the first from ``parent`` (else :class:`Forked`).

        Stops short with a reason when a request keeps failing; ``renew`` (the lease) is
        called before every request, and a False stops the read too."""
        self._stop = stop
        self._renew = renew
        self._keep_carry(start, tokens)
        got: list[scan.BlockDigest] = []
        stopped: str | None = None
        n = start
        try:
            while n <= end:
                if stop is not None and stop.is_set():
                    break
                block = self._block(n, end, parent, not got)
                if got and block.parent != got[-1].block_id:
                    self._drop_carry(n)
                    stopped = f"block {n} changed while reading; reading it again"
                    break
                if block.needs_infos:
                    self._infos(block, tokens)
                got.append(block)  # kept in the carry until a later read starts past it
                n += 1
        except _Stop as exc:
            stopped = None if stop is not None and stop.is_set() else str(exc)
        finally:
            self._stop = self._renew = None
        if stopped is None and self.status.state != OK:
            if self.status.state == NO_HISTORY:
                log.info("chain %d: the node has transaction history again", self.chain.chain_id)
            self._set(OK, "")
        return Read(got, stopped)

    def forget(self) -> None:
        """Drop every digest kept from earlier reads: the next read asks the node for all
        (the unconfirmed head is read afresh each pass, or a reorg would not show)."""
        self._carry.clear()

    def _keep_carry(self, start: int, tokens: frozenset[str]) -> None:
        """Forget digests below the range (attributed), of another token set, or too old.
        Digests of the range itself stay until a read starts past them: a range whose
        attribution is held (no fresh price) or lost (the lease) is not fetched again."""
        stale = self._carry and self._clock() - self._carry_at > self.carry_for
        if tokens != self._carry_tokens or stale:
            self._carry.clear()
            self._carry_tokens = tokens
        for number in [k for k in self._carry if k < start]:
            del self._carry[number]

    def _drop_carry(self, from_block: int) -> None:
        for number in [k for k in self._carry if k >= from_block]:
            del self._carry[number]

    def _block(self, n: int, end: int, parent: str | None, first: bool) -> scan.BlockDigest:
        """Block ``n``'s digest, from the carry or the node. The first of a range must
        descend from ``parent`` (the cursor's block), else :class:`Forked`; a digest kept
        from an earlier pass that does not is read again before that is concluded."""
        block = self._carry.get(n)
        if block is not None and first and parent is not None and block.parent != parent:
            self._carry.clear()
            block = None
        if block is None:
            self._load(n, end)
            block = self._carry[n]
        if first and parent is not None and block.parent != parent:
            self._carry.clear()
            raise Forked()
        return block

    def _load(self, n: int, end: int) -> None:
        """Fetch blocks from ``n`` (as many as the window allows, up to ``end``) into the
        carry. A failure of a request for many blocks asks for fewer at once; of one block,
        pauses and asks again, ``attempts`` times."""
        failures = empties = 0
        while True:
            count = min(self.window.size, end - n + 1)
            body = {"startNum": n, "endNum": n + count}  # endNum is exclusive
            try:
                answer, size = self._ask("wallet/getblockbylimitnext", body, self.window.cap(count))
            except NodeError as exc:
                self.window.failed(count)
                if count > 1:  # too big, too slow, or cut off: smaller pieces
                    continue
                failures += 1
                self._retry(exc, failures, f"blocks from {n}")
                continue
            listed = answer.get("block") if isinstance(answer, dict) else None
            by_number = {scan.number(b): b for b in listed or [] if isinstance(b, dict)}
            found = []
            for number in range(n, n + count):
                if number not in by_number or "blockID" not in by_number[number]:
                    break
                found.append(by_number[number])
            if not found:
                empties += 1
                if empties >= self.empty_attempts:
                    raise self._no_history(f"it has no block {n}, below its head")
                self._pause(empties)
                continue
            self.window.fitted(len(found), size)
            if len(found) < count:
                self.window.capped(len(found))
            if not self._carry:
                self._carry_at = self._clock()
            for block in found:
                self._carry[scan.number(block)] = scan.digest(block)
            return

    def _infos(self, block: scan.BlockDigest, tokens: frozenset[str]) -> None:
        """Read the block's transaction infos into its digest (one request for all)."""
        failures = empties = 0
        while True:
            try:
                answer, _size = self._ask(
                    "wallet/gettransactioninfobyblocknum", {"num": block.number}, None
                )
            except NodeError as exc:
                failures += 1
                self._retry(exc, failures, f"transaction infos of block {block.number}")
                continue
            infos = answer if isinstance(answer, list) else []
            if not infos:
                empties += 1
                if empties >= self.empty_attempts:
                    raise self._no_history(
                        f"it answers no transaction infos for block {block.number}, "
                        f"which has {len(block.calls)} contract calls"
                    )
                self._pause(empties)
                continue
            try:
                scan.add_infos(block, infos, tokens)
            except scan.InfosMismatch as exc:
                self._drop_carry(block.number)
                raise _Stop(
                    f"transaction infos of block {block.number} do not fit it ({exc}); "
                    "reading it again"
                ) from exc
            return

    def _ask(self, path: str, body: dict[str, Any], cap: int | None) -> tuple[Any, int]:
        """One request, waiting out refusals for rate (``rate_attempts`` of them)."""
        refusals = 0
        while True:
            if self._renew is not None and not self._renew():
                raise _Stop("lease lost")
            try:
                return self.node.fetch(
                    path,
                    body,
                    max_wait=self.max_wait,
                    cap=cap,
                    stop=self._stop,
                    timeout=self.timeout,
                )
            except RateLimited as exc:
                self.rate_limited(exc)
                refusals += 1
                if not exc.sent or refusals >= self.rate_attempts:
                    raise _Stop(f"rate limited by the node: {exc.detail}") from exc

    def _retry(self, exc: NodeError, failures: int, what: str) -> None:
        """After the ``failures``-th failed attempt at ``what``: pause before the next, or
        give up the rest of the range once ``attempts`` have failed."""
        if failures >= self.attempts:
            self._set(NODE_ERROR, str(exc.detail)[:200])
            raise _Stop(f"{what}: {exc.detail}") from exc
        self._pause(failures)

    def _pause(self, failures: int) -> None:
        delay = min(10.0, self.backoff * 2 ** (failures - 1))
        if self._stop is not None:
            if self._stop.wait(delay):
                raise _Stop("stopping")
        else:
            time.sleep(delay)


def _pace(rate: float | None) -> str:
    return "no limit of" if rate is None else f"{rate:.2f}"
