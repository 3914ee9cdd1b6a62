"""Per-client rate limits: an in-process token bucket per key (a client IP, an owner).

Why in process: the calls it guards (proof-of-work challenges, session-key registrations)
are unauthenticated writes, cheap for a stranger to send and each leaving a row or a queue
behind; a limit that needed storage would itself be a write per request. Each process keeps
its own buckets, so with ``--workers N`` a client gets up to N times the rate -- still a
bound, and the one a reverse proxy in front can tighten (docs/decisions.md, "Per-IP limits
on unauthenticated writes").

A bucket holds ``burst`` tokens and gains ``rate`` per second; a request takes one. Memory is
bounded: at most ``max_keys`` buckets are kept, the least recently used dropped first (a
dropped bucket comes back full, which only ever errs towards letting a client through).
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from ..errors import TooManyRequests

if TYPE_CHECKING:
    from ..config import Settings

#: Buckets one limiter keeps at most (a few hundred bytes each).
MAX_KEYS = 100_000


class RateLimiter:
    """``take(key)``: ``None`` when the request may go ahead, else the whole seconds after
    which one token will be there again (what ``Retry-After`` says). Thread-safe."""

    def __init__(
        self,
        rate: float,
        burst: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        max_keys: int = MAX_KEYS,
    ) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError("a rate limiter needs rate > 0 and burst >= 1")
        self.rate = rate
        self.burst = burst
        self._clock = clock
        self._max_keys = max_keys
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()
        self._lock = threading.Lock()

    def take(self, key: str) -> int | None:
        now = self._clock()
        with self._lock:
            tokens, at = self._buckets.pop(key, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - at) * self.rate)
            allowed = tokens >= 1.0
            if allowed:
                tokens -= 1.0
            self._buckets[key] = (tokens, now)  # most recently used last
            while len(self._buckets) > self._max_keys:
                self._buckets.popitem(last=False)
        if allowed:
            return None
        return max(1, math.ceil((1.0 - tokens) / self.rate))


def per_minute(count: int, *, clock: Callable[[], float] = time.monotonic) -> RateLimiter | None:
    """``count`` requests a minute per key, all of them at once at most; ``None`` for 0
    (no limit)."""
    if count <= 0:
        return None
    return RateLimiter(count / 60.0, count, clock=clock)


class ClientLimits:
    """``Gateway.client_limits``: one limiter per kind of guarded call, keyed by client IP.

    ``check(kind, client)`` raises TooManyRequests (429, ``Retry-After``) for a client over
    its limit; a kind with no limiter (its setting is 0) is never refused."""

    def __init__(self, limiters: Mapping[str, RateLimiter | None], what: Mapping[str, str]):
        self._limiters = dict(limiters)
        self._what = dict(what)

    def check(self, kind: str, client: str) -> None:
        limiter = self._limiters.get(kind)
        if limiter is None:
            return
        wait = limiter.take(client)
        if wait is not None:
            raise TooManyRequests(f"{self._what.get(kind, kind)} from this address", wait)


#: What each kind of guarded call is called in a 429's text.
KINDS = {"challenge": "proof-of-work challenges", "registration": "session key registrations"}


def client_limits(settings: Settings, clock: Callable[[], float] = time.monotonic) -> ClientLimits:
    """The limiters ``settings`` asks for (``ip_challenge_limit``, ``ip_registration_limit``),
    on ``clock`` (the gateway's: seconds)."""
    return ClientLimits(
        {
            "challenge": per_minute(settings.ip_challenge_limit, clock=clock),
            "registration": per_minute(settings.ip_registration_limit, clock=clock),
        },
        KINDS,
    )
