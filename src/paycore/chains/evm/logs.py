"""``eth_getLogs`` over a block range, in pieces the provider accepts (docs/chains.md).

A range of ``block_batch`` blocks is read in pieces of at most ``span`` blocks, several
pieces (each filter of each piece a call) per HTTP batch. A piece the provider refuses as
too large (``limits.too_large``) is split -- at the end the provider suggests, at the span
it names, or in halves -- and read again; nothing is skipped, so a refusal costs a request,
never a deposit. The span learned stays for later ranges. It grows back (doubling after
``GROW_AFTER`` requests in a row went through) because a result cap depends on how busy the
blocks are, but never to a size that was refused for its block count, a limit that does not
move. A single block with more logs than the provider returns cannot be split: that is an
:class:`RpcError` the watcher reports at every pass, and the cursor stays before it.

Which node answered. Behind a load balancer, a node that lags answers ``eth_getLogs`` for
blocks it does not have yet with nothing at all, which would pass for a range without
deposits. So every batch of logs also asks for the header of the range's last block and
compares its hash with the one the watcher fetched: a node that has that block (with that
hash) has the whole chain below it, and its logs are complete. A load balancer sends one
HTTP request to one node, so the header and the logs come from the same one -- as long as
the provider takes batches (``rpc_batch`` of 2 or more): one that takes a single call per
request cannot be held to this, and is trusted as it answers.
"""

from __future__ import annotations

import logging
import re
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

from paycore.chains.watching import Inconsistent, asked_again

from . import limits
from .rpc import Call, Rpc, RpcError

log = logging.getLogger("paycore.watcher")

#: ``eth_getLogs`` calls answered in a row without a refusal before the span doubles again.
GROW_AFTER = 16
#: A refusal that names results or a response size (a cap on what comes back, which depends
#: on the blocks) rather than the number of blocks.
_RESULT_WORDS = re.compile(r"result|logs|response|size", re.IGNORECASE)

RawLog = Mapping[str, Any]


class LogReader:
    """Reads the logs of several filters over a block range; remembers the span the
    provider accepts. Thread-safe (one per chain, shared by its callers)."""

    def __init__(self, rpc: Rpc, span: int, *, name: str = "rpc") -> None:
        self.rpc = rpc
        #: The most blocks per request ever asked (``block_batch``).
        self.ceiling = max(1, span)
        #: Blocks per request now.
        self.span = self.ceiling
        #: The smallest piece refused for its block count: spans stay below it.
        self.refused_blocks: int | None = None
        self.name = name
        self._streak = 0
        self._lock = threading.Lock()

    def read(
        self, start: int, end: int, filters: Sequence[Mapping[str, Any]], end_hash: str
    ) -> list[list[RawLog]]:
        """The logs of each filter in blocks ``start..end`` (one list per filter), read
        from nodes that have block ``end`` with hash ``end_hash``; raises
        :class:`Inconsistent` when the answering node does not."""
        found: list[list[RawLog]] = [[] for _ in filters]
        # One task per piece and filter; each HTTP request carries some, and the header.
        pending = deque(
            (piece, f) for piece in self._pieces(start, end) for f in range(len(filters))
        )
        header_call: Call = ("eth_getBlockByNumber", [hex(end), False])
        while pending:
            room = max(1, self.rpc.batch_size - 1)
            tasks = [pending.popleft() for _ in range(min(room, len(pending)))]
            calls: list[Call] = [
                ("eth_getLogs", [{**filters[f], "fromBlock": hex(a), "toBlock": hex(b)}])
                for (a, b), f in tasks
            ]

            outcomes = asked_again(partial(self._ask, [*calls, header_call], end_hash))
            redo: list[tuple[tuple[int, int], int]] = []
            for ((a, b), f), outcome in zip(tasks, outcomes, strict=False):
                if not isinstance(outcome, RpcError):
                    found[f].extend(outcome or ())
                    self._went_through()
                elif outcome.too_large:
                    redo += [(piece, f) for piece in self._split(a, b, outcome)]
                else:
                    raise outcome
            pending.extendleft(reversed(redo))
        return found

    def _ask(self, calls: list[Call], end_hash: str) -> list[Any]:
        """One HTTP batch whose last call is the range's last header, checked."""
        outcomes = self.rpc.batch_outcomes(calls)
        header = outcomes[-1]
        if isinstance(header, RpcError) or not header or header.get("hash") != end_hash:
            number = int(calls[-1][1][0], 16)
            raise Inconsistent(f"the node that answered logs lacks block {number} as seen")
        return outcomes

    def _pieces(self, start: int, end: int) -> list[tuple[int, int]]:
        span = self.span
        return [(a, min(a + span - 1, end)) for a in range(start, end + 1, span)]

    def _went_through(self) -> None:
        with self._lock:
            self._streak += 1
            if self._streak < GROW_AFTER or self.span >= self.ceiling:
                return
            grown = min(self.ceiling, self.span * 2)
            if self.refused_blocks is not None:
                grown = min(grown, self.refused_blocks - 1)
            self._streak = 0
            self.span = max(self.span, grown)

    def _split(self, start: int, end: int, refusal: RpcError) -> list[tuple[int, int]]:
        """``start..end`` cut into pieces the provider should accept, and the span learned."""
        size = end - start + 1
        if size == 1:
            raise RpcError(
                "eth_getLogs",
                f"block {start} alone has more logs than the provider returns "
                f"({refusal.text}); use a provider without a result cap for this chain",
            )
        detail = refusal.detail
        suggested = limits.suggested_end(detail, start, end)
        named = limits.suggested_span(detail)
        if suggested is not None:
            smaller = suggested - start + 1
        elif named is not None and named < size:
            smaller = named
        else:
            smaller = size // 2
        smaller = max(1, min(smaller, size - 1))
        by_blocks = refusal.http_status != 413 and not _RESULT_WORDS.search(limits.message(detail))
        with self._lock:
            self._streak = 0
            if by_blocks:  # a limit that does not move: never ask that many again
                limit = size if named is None else min(size, named + 1)
                self.refused_blocks = min(self.refused_blocks or limit, limit)
            if smaller < self.span:
                log.info(
                    "%s: eth_getLogs over %d blocks refused (%s); reading %d at a time",
                    self.name,
                    size,
                    refusal.text[:160],
                    smaller,
                )
                self.span = smaller
        return [(a, min(a + smaller - 1, end)) for a in range(start, end + 1, smaller)]
