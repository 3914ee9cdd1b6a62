"""Fair shares of webhook delivery: caps on the deliveries in flight per owner and per URL,
and a pace for redelivery.

Why: a dispatcher POSTs up to ``webhook_concurrency`` deliveries at once, and claims the
oldest due ones first. Without a cap, one merchant whose receiver is slow -- or answers
``200 OK`` and then drips a byte every few seconds -- would soon hold every slot, and every
other merchant's events would wait behind it. So a dispatcher keeps at most
``webhook_owner_concurrency`` deliveries of one owner, and ``webhook_url_concurrency`` to one
webhook URL (many throw-away owners may point at one receiver), in flight. The claim passes
over an owner or URL at its cap in the database query itself
(``StorageTx.claim_deliveries(skip_owners=, skip_urls=)``), so the deliveries behind them are
claimed instead and a capped owner's queue holds back no one; its own deliveries stay due,
unleased, and are claimed as soon as one of its POSTs ends. With the attempt's total deadline
(``webhook_timeout``, ``delivery``), a hostile receiver holds at most its cap of slots for at
most that long each. The caps count one dispatcher's POSTs: N worker processes let one owner
hold up to N times its cap, as they hold N times ``webhook_concurrency``.

Redelivery (``/webhook/redeliver``, ``/webhook/redeliver-failed``) goes through the same
claims and caps, and each owner may ask for it ``webhook_redeliver_limit`` times per
``webhook_redeliver_window`` seconds in one server process (:class:`RedeliveryPace`); more
calls are answered 429 with ``Retry-After``, before anything is written.
"""

from __future__ import annotations

import math
import threading
from collections import Counter, deque
from collections.abc import Callable

from ..config import Settings
from ..errors import PaycoreError
from ..storage.protocols.webhooks import WebhookDeliveries
from .records import ClaimedDelivery

#: Owners a redelivery pace remembers before it forgets those whose windows have ended.
PACE_MEMORY = 10_000


class Shares:
    """Counts of deliveries by owner and by URL, and what a claim must pass over: the owners
    and URLs at their caps. An empty URL (a cleared webhook: the attempt fails at once) is
    not counted against any URL."""

    def __init__(self, owner_cap: int, url_cap: int) -> None:
        self.owner_cap = owner_cap
        self.url_cap = url_cap
        self.owners: Counter[str] = Counter()
        self.urls: Counter[str] = Counter()

    def copy(self) -> Shares:
        twin = Shares(self.owner_cap, self.url_cap)
        twin.owners, twin.urls = self.owners.copy(), self.urls.copy()
        return twin

    def add(self, delivery: ClaimedDelivery) -> None:
        self.owners[delivery.owner] += 1
        if delivery.url:
            self.urls[delivery.url] += 1

    def remove(self, delivery: ClaimedDelivery) -> None:
        self.owners[delivery.owner] -= 1
        if self.owners[delivery.owner] <= 0:
            del self.owners[delivery.owner]
        if delivery.url:
            self.urls[delivery.url] -= 1
            if self.urls[delivery.url] <= 0:
                del self.urls[delivery.url]

    def full_owners(self) -> set[str]:
        return {owner for owner, n in self.owners.items() if n >= self.owner_cap}

    def full_urls(self) -> set[str]:
        return {url for url, n in self.urls.items() if n >= self.url_cap}

    def batch(self, wanted: int) -> int:
        """How many to claim in one go so that none can go over a cap: no more than the
        smallest room left of an owner or URL that has some in flight and is not full (a
        fresh one has its whole cap), so even a batch all of one owner and URL fits."""
        rooms = [self.owner_cap - n for n in self.owners.values() if n < self.owner_cap]
        rooms += [self.url_cap - n for n in self.urls.values() if n < self.url_cap]
        return min(wanted, self.owner_cap, self.url_cap, *rooms)


class InFlight:
    """One dispatcher's POSTs under way, shared by its loop (which claims and starts them)
    and its pool threads (which end them). Thread-safe."""

    def __init__(self, owner_cap: int, url_cap: int) -> None:
        self._lock = threading.Lock()
        self._shares = Shares(owner_cap, url_cap)

    @classmethod
    def from_settings(cls, settings: Settings) -> InFlight:
        return cls(settings.webhook_owner_concurrency, settings.webhook_url_concurrency)

    def shares(self) -> Shares:
        """A copy of the counts, for a claim to plan with."""
        with self._lock:
            return self._shares.copy()

    def started(self, delivery: ClaimedDelivery) -> None:
        with self._lock:
            self._shares.add(delivery)

    def finished(self, delivery: ClaimedDelivery) -> None:
        with self._lock:
            self._shares.remove(delivery)


def claim_fairly(
    tx: WebhookDeliveries, in_flight: InFlight, now: int, lease_ms: int, token: str, limit: int
) -> list[ClaimedDelivery]:
    """Lease up to ``limit`` due deliveries in ``tx``, oldest first, leaving out every one
    that would take its owner or URL past its cap given what is ``in_flight``.

    Claims go in batches that cannot overshoot a cap (``Shares.batch``), each passing over
    the owners and URLs that are full by then; a batch that comes back short means nothing
    else is claimable. At most ``limit`` batches, usually one or two."""
    plan = in_flight.shares()
    claimed: list[ClaimedDelivery] = []
    while len(claimed) < limit:
        wanted = plan.batch(limit - len(claimed))
        batch = tx.claim_deliveries(
            now,
            lease_ms,
            token,
            wanted,
            skip_owners=plan.full_owners(),
            skip_urls=plan.full_urls(),
        )
        for delivery in batch:
            plan.add(delivery)
        claimed += batch
        if len(batch) < wanted:
            break
    return claimed


class TooManyRedeliveries(PaycoreError):
    """An owner asked for redelivery more often than the pace allows: 429 with
    ``Retry-After``."""

    status = 429

    def __init__(self, limit: int, window: int, retry_after: int) -> None:
        self.headers = {"retry-after": str(retry_after)}
        super().__init__(
            f"too many requests: at most {limit} redelivery calls per {window} s for an "
            f"owner, retry in {retry_after} s"
        )


class RedeliveryPace:
    """At most ``limit`` redelivery calls per owner in any ``window`` seconds (a sliding
    log of call times per owner). Thread-safe; memory is bounded by ``PACE_MEMORY`` owners
    whose windows are still open."""

    def __init__(self, limit: int, window: int, clock: Callable[[], float]) -> None:
        self.limit = limit
        self.window = window
        self._clock = clock
        self._lock = threading.Lock()
        self._calls: dict[str, deque[float]] = {}

    @classmethod
    def from_settings(cls, settings: Settings, clock: Callable[[], float]) -> RedeliveryPace:
        return cls(settings.webhook_redeliver_limit, settings.webhook_redeliver_window, clock)

    def take(self, owner: str) -> None:
        """Count one call of ``owner``; ``TooManyRedeliveries`` (counting nothing) when the
        window already holds ``limit`` of them."""
        now = self._clock()
        with self._lock:
            calls = self._calls.get(owner)
            if calls is None:
                if len(self._calls) >= PACE_MEMORY:
                    self._forget(now)
                calls = self._calls[owner] = deque()
            while calls and calls[0] <= now - self.window:
                calls.popleft()
            if len(calls) >= self.limit:
                wait = max(1, math.ceil(calls[0] + self.window - now))
                raise TooManyRedeliveries(self.limit, self.window, wait)
            calls.append(now)

    def _forget(self, now: float) -> None:
        """Drop the owners with no call in the window; if every one has, the oldest half."""
        idle = [
            o for o, calls in self._calls.items() if not calls or calls[-1] <= now - self.window
        ]
        for owner in idle:
            del self._calls[owner]
        if len(self._calls) >= PACE_MEMORY:
            by_age = sorted(self._calls, key=lambda o: self._calls[o][-1])
            for owner in by_age[: len(by_age) // 2]:
                del self._calls[owner]
