"""How fast and how much paycore asks of a Tron node: a client-side rate limit, and the number
of blocks one ``getblockbylimitnext`` request may ask for.

A hosted node (TronGrid) limits each API key to a number of requests per second and per day,
and answers a client over the limit with 429 (403 or 503 in its older documentation) and
then nothing for a penalty window ("the query server is suspended for 30s"). A request that
runs into the limit costs a retry, and into the penalty, half a minute of nothing: it is far
cheaper not to exceed the limit. :class:`RateLimiter` spaces requests to the configured rate,
pauses everybody for the penalty the node names, and halves its pace when the node refuses
anyway (a quota shared with other processes, a key on a smaller plan), coming back up in
small steps after a run of answers.

Blocks are big on mainnet: about 300 transactions, some 300 KB of JSON each, so the 100
blocks java-tron allows in one request are tens of MB that a 30 s timeout may not see
through. :class:`BlockWindow` sizes each request to the bytes the last answers took per
block, halves it on a failure (a timeout, an answer cut off or refused as too large), and
lets it grow back while answers stay small.

Pure logic with an injectable clock: the node client (``node``) and the range reader
(``reader``) drive it; tests drive it without waiting.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

#: The slowest pace a refusal can push the limiter down to (requests per second).
FLOOR_RATE = 0.2
#: Answers in a row, without a refusal, after which a reduced pace steps back up.
RECOVER_AFTER = 20
#: How much one recovery step raises a reduced pace.
RECOVER_STEP = 1.25
#: The penalty assumed when a refusal names none (TronGrid's documented window is 30 s; a
#: plain 429 usually clears sooner, and a second refusal doubles it).
DEFAULT_PENALTY = 2.0
#: The longest a single refusal pauses requests.
MAX_PENALTY = 120.0


class RateLimiter:
    """Spaces request starts at least ``1 / rate`` seconds apart (``rate`` None: no limit),
    and holds every request back while the node's penalty for a refusal lasts.

    :meth:`reserve` books the next start and says how long to wait for it; callers sleep
    outside the lock, so one thread waiting does not block another's booking. The spacing is
    strict (no burst): a per-second window on the node's side then never sees more than
    ``rate`` requests, whatever the phase of its clock.
    """

    def __init__(self, rate: float | None, *, clock: Callable[[], float] = time.monotonic) -> None:
        if rate is not None and rate <= 0:
            raise ValueError("rate must be positive")
        self.ceiling = rate
        self.rate = rate
        self._clock = clock
        self._lock = threading.Lock()
        self._next = 0.0
        self._paused_until = 0.0
        self._penalty = 0.0
        self._streak = 0
        self._recent: deque[float] = deque()
        self.refusals = 0

    def reserve(self, max_wait: float | None = None) -> float | None:
        """Book a request start; the seconds to wait before sending it. ``None`` when the
        wait would exceed ``max_wait`` (nothing is booked then)."""
        with self._lock:
            now = self._clock()
            start = max(now, self._paused_until)
            if self.rate is not None:
                start = max(start, self._next)
            wait = start - now
            if max_wait is not None and wait > max_wait:
                return None
            if self.rate is not None:
                self._next = start + 1.0 / self.rate
            self._recent.append(start)
            while self._recent and self._recent[0] < start - 1.0:
                self._recent.popleft()
            return wait

    def paused_for(self) -> float:
        """Seconds left of the node's penalty (0 when none)."""
        with self._lock:
            return max(0.0, self._paused_until - self._clock())

    def succeeded(self) -> None:
        """An answer came: after ``RECOVER_AFTER`` in a row a reduced pace steps back up."""
        with self._lock:
            self._penalty = 0.0
            self._streak += 1
            if self._streak < RECOVER_AFTER or self.rate == self.ceiling:
                return
            self._streak = 0
            assert self.rate is not None
            raised = self.rate * RECOVER_STEP
            if self.ceiling is not None:
                self.rate = min(self.ceiling, raised)
            else:  # no configured limit: once well past what was refused, none again
                self.rate = None if raised > 1000 else raised

    def refused(self, retry_after: float | None) -> float:
        """The node refused a request for rate: pause everyone for ``retry_after`` seconds
        (or a doubling default), and halve the pace from what was actually sent in the last
        second. Returns the pause."""
        with self._lock:
            now = self._clock()
            self.refusals += 1
            self._streak = 0
            if retry_after is None:
                self._penalty = min(MAX_PENALTY, max(DEFAULT_PENALTY, self._penalty * 2))
                pause = self._penalty
            else:
                pause = min(MAX_PENALTY, max(0.0, retry_after))
            self._paused_until = max(self._paused_until, now + pause)
            sent = sum(1 for t in self._recent if t > now - 1.0)
            current = self.rate if self.rate is not None else float(max(sent, 1))
            self.rate = max(FLOOR_RATE, min(current, max(sent, 1)) / 2)
            self._next = max(self._next, self._paused_until)
            return pause


#: java-tron's most blocks per ``getblockbylimitnext`` request.
MAX_BLOCKS_PER_REQUEST = 100
#: The blocks per request a reader starts with, before it has seen a block's size.
START_BLOCKS = 10
#: An answer for several blocks bigger than this many times the target is dropped mid-read
#: (a single block is always read whole: it cannot be asked for in smaller pieces).
HARD_CAP_FACTOR = 8


#: How much the byte budget lowered by a failure comes back after each answer.
RELAX = 1.1


class BlockWindow:
    """Blocks per ``getblockbylimitnext`` request, adapted to the answers' sizes.

    ``budget`` is the size in bytes an answer should come near: ``target`` at first, and
    after each answer the window becomes the blocks that fit it at the size just seen per
    block -- but at most twice the window before, so one small block does not invite a
    hundred big ones. A failed request (a timeout, an answer cut off or refused as too
    large) halves the window and lowers the budget to half the bytes that request would
    have brought, so the window does not climb straight back to the size that failed; each
    answer then gives back a tenth, up to ``target``. Quiet blocks still get big windows:
    the budget is in bytes, not blocks. ``ceiling`` is the operator's cap (``rpc_batch``)
    and java-tron's 100.
    """

    def __init__(self, ceiling: int = MAX_BLOCKS_PER_REQUEST, target: int = 4_000_000) -> None:
        self.ceiling = max(1, min(ceiling, MAX_BLOCKS_PER_REQUEST))
        self.target = max(1, target)
        self.budget = float(self.target)
        self.size = min(START_BLOCKS, self.ceiling)
        #: Bytes a block took in the last answer (None before the first).
        self.per_block: float | None = None

    def cap(self, blocks: int) -> int | None:
        """The most bytes an answer for ``blocks`` blocks may have before it is dropped."""
        return None if blocks <= 1 else self.target * HARD_CAP_FACTOR

    def fitted(self, blocks: int, size: int) -> None:
        """An answer of ``size`` bytes came for ``blocks`` blocks."""
        self.per_block = max(1.0, size / max(1, blocks))
        self.budget = min(float(self.target), self.budget * RELAX)
        fit = max(1, int(self.budget // self.per_block))
        self.size = max(1, min(self.ceiling, fit, max(self.size, blocks) * 2))

    def failed(self, blocks: int) -> None:
        """A request for ``blocks`` blocks failed (timed out, cut off, refused)."""
        if self.per_block is not None:
            expected = blocks * self.per_block
            self.budget = max(self.per_block, min(self.budget, expected) / 2)
        self.size = max(1, min(self.size, blocks) // 2)

    def capped(self, blocks: int) -> None:
        """The node answered fewer blocks than asked (its own cap): ask for no more."""
        self.size = max(1, min(self.size, blocks))
