"""How paycore's processes behave while storage is down: few log lines, growing waits.

During a database outage every request and every worker round fails the same way. Logging
each one with its traceback buries the one useful line under thousands of copies (a 100-line
traceback per request), and loops that retry at their normal pace keep knocking on a
database that is trying to come back. So:

- :class:`OutageLog` writes one line per kind of failure per interval, without a traceback,
  and says how many it held back since its last line; when the kind recovers, one line says
  so.
- :class:`Backoff` spaces a loop's retries after consecutive failures: doubling from the
  loop's own pace up to a ceiling, each wait shortened by a random part so that a fleet of
  workers does not retry in step when the database returns.
- :class:`LoopGuard` puts the two together for the worker's loops (webhook dispatcher,
  expiry sweeper, chain watchers, price refresher).

The storage plugin tells an outage from a bug by raising ``StorageUnavailable``; anything
else still gets its traceback from the loop that met it.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..errors import StorageUnavailable

if TYPE_CHECKING:
    from ..config import Settings


class OutageLog:
    """At most one WARNING line per ``kind`` every ``interval`` seconds. Thread-safe."""

    def __init__(
        self,
        logger: logging.Logger,
        interval: float,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.logger = logger
        self.interval = interval
        self.clock = clock
        self._last: dict[str, float] = {}  # kind -> when its last line was written
        self._held: dict[str, int] = {}  # kind -> failures not logged since that line
        self._lock = threading.Lock()

    def failure(self, kind: str, message: str, *args: object) -> bool:
        """Log ``message % args`` unless ``kind`` was logged less than ``interval`` ago;
        ``True`` when a line was written."""
        now = self.clock()
        with self._lock:
            last = self._last.get(kind)
            if last is not None and now - last < self.interval:
                self._held[kind] = self._held.get(kind, 0) + 1
                return False
            self._last[kind] = now
            held = self._held.pop(kind, 0)
        if held:
            message += f" [{held} more since the last line]"
        self.logger.warning(message, *args)
        return True

    def recovered(self, kind: str, message: str, *args: object) -> None:
        """One INFO line if ``kind`` was failing; nothing otherwise."""
        with self._lock:
            was_failing = self._last.pop(kind, None) is not None
            self._held.pop(kind, None)
        if was_failing:
            self.logger.info(message, *args)

    def failing(self) -> list[str]:
        with self._lock:
            return sorted(self._last)


class Backoff:
    """Waits after consecutive failures: ``first`` * 2**n capped at ``ceiling``, each
    scaled by a random factor in [1 - jitter, 1], so it never exceeds the ceiling."""

    def __init__(
        self,
        first: float,
        ceiling: float,
        *,
        jitter: float = 0.5,
        rng: Callable[[], float] = random.random,
    ) -> None:
        self.first = first
        self.ceiling = max(ceiling, first)
        self.jitter = jitter
        self.rng = rng
        self.failures = 0

    def next(self) -> float:
        """The wait after one more failure, in seconds."""
        base = min(self.ceiling, self.first * 2.0 ** min(self.failures, 32))
        self.failures += 1
        return base * (1 - self.jitter * self.rng())

    def reset(self) -> None:
        self.failures = 0


class LoopGuard:
    """One worker loop's answer to storage outages: a rate-limited line and a backoff.

    ``failed`` is called with the ``StorageUnavailable`` a round raised and returns how
    long to wait before the next round; ``succeeded`` after a round that reached storage,
    which ends the backoff and logs the recovery once.
    """

    def __init__(
        self,
        name: str,
        logger: logging.Logger,
        *,
        pace: float,
        ceiling: float,
        log_interval: float,
        rng: Callable[[], float] = random.random,
    ) -> None:
        self.name = name
        self.backoff = Backoff(pace, ceiling, rng=rng)
        self.log = OutageLog(logger, log_interval)

    @classmethod
    def from_settings(
        cls, name: str, logger: logging.Logger, settings: Settings, *, pace: float
    ) -> LoopGuard:
        """A guard whose waits double from ``pace`` (the loop's own) to
        ``worker_backoff_max``, logging at most once per ``outage_log_interval``."""
        return cls(
            name,
            logger,
            pace=pace,
            ceiling=settings.worker_backoff_max,
            log_interval=settings.outage_log_interval,
        )

    def failed(self, exc: StorageUnavailable) -> float:
        delay = self.backoff.next()
        self.log.failure(
            exc.kind,
            "%s: storage unavailable (%s: %s); retrying in %.1f s",
            self.name,
            exc.kind,
            exc.detail,
            delay,
        )
        return delay

    def succeeded(self) -> None:
        if self.backoff.failures:
            failures = self.backoff.failures
            self.backoff.reset()
            for kind in self.log.failing():
                self.log.recovered(
                    kind, "%s: storage is back after %d failed rounds", self.name, failures
                )
