"""The per-process Hub: which sockets want which owner's events, and a bounded queue each.

The Hub is also the notifier (``paycore.notify.Notifier``) that the gateway calls after every
committed change: it hands the change to this process's sockets at once and, when a fan-out
is configured, publishes it for the other processes, whose fan-out listeners hand it to their
own Hub through :meth:`Hub.deliver`. The outbox stays the source of truth; a push is the fast
path, so a change that misses a socket (a Redis outage, a full queue) is still read by
polling or by the next GET.

Thread-safety: ``invoice_changed`` runs on whatever thread committed the change (a request's
worker thread, the sweeper, the Redis listener), while each socket drains its subscription
on its own thread or event loop. Every structure here is guarded by a lock held only for
list operations, never while calling out, so a slow socket cannot stall a committer.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from ..domain.records import Json
from ..notify.contract import BaseNotifier
from .frames import encode_event

if TYPE_CHECKING:
    from ..config import Settings
    from ..gateway import Gateway

log = logging.getLogger("paycore.realtime")


class Fanout(Protocol):
    """Carries events between the Hubs of different processes (see ``redis_fanout``)."""

    def publish(self, owner: str, event: str) -> None:
        """Send one encoded event to every other process; must not raise."""

    def listen(self, deliver: Callable[[str, str], object]) -> None:
        """Make sure events from other processes reach ``deliver(owner, event)``.

        Idempotent, and cheap once listening; called when a socket subscribes, so a process
        that never serves a socket (``paycore worker``) never listens."""

    def close(self) -> None: ...


class Subscription:
    """One registered socket: the owner it follows and its queue of encoded events.

    ``wake`` is called (from any thread) whenever the queue goes from idle to having
    something, so the socket's driver can sleep without polling. The queue holds at most
    ``limit`` events: past that the subscription is marked ``overflowed``, its backlog is
    dropped at once, and the driver closes the socket, because a client that cannot keep
    up must not grow the server's memory, and it can catch up by reading.
    """

    def __init__(self, owner: str, limit: int, wake: Callable[[], None]) -> None:
        self.owner = owner
        self.limit = limit
        self._wake = wake
        self._lock = threading.Lock()
        self._events: deque[str] = deque()
        self.overflowed = False

    def offer(self, event: str) -> None:
        with self._lock:
            if self.overflowed:
                return
            if len(self._events) >= self.limit:
                self.overflowed = True
                self._events.clear()
            else:
                self._events.append(event)
        try:
            self._wake()
        except Exception:  # an event loop already gone: its socket is closing anyway
            log.debug("wake of a closing socket failed", exc_info=True)

    def take(self) -> list[str]:
        """Everything waiting, oldest first, leaving the queue empty."""
        with self._lock:
            if not self._events:
                return []
            events = list(self._events)
            self._events.clear()
            return events

    def __len__(self) -> int:
        with self._lock:
            return len(self._events)


class Hub(BaseNotifier):
    """Subscriptions by owner for one process, and the gateway's notifier for pushes."""

    name = "websocket-hub"

    def __init__(self, *, queue_size: int = 256, fanout: Fanout | None = None) -> None:
        self.queue_size = queue_size
        self.fanout = fanout
        self._lock = threading.Lock()
        self._by_owner: dict[str, set[Subscription]] = {}

    @classmethod
    def from_settings(cls, settings: Settings) -> Hub:
        """In-process only, or fanned out through ``settings.redis_url`` when set."""
        fanout: Fanout | None = None
        if settings.redis_url:
            from .redis_fanout import RedisFanout

            fanout = RedisFanout(settings.redis_url, settings.redis_channel)
        return cls(queue_size=settings.ws_queue_size, fanout=fanout)

    # -- sockets --------------------------------------------------------------------------
    def subscribe(self, owner: str, wake: Callable[[], None]) -> Subscription:
        """Follow ``owner``'s changes from now on. May block briefly the first time, while
        the fan-out starts listening, so that "registered" means "receiving"."""
        if self.fanout is not None:
            self.fanout.listen(self.deliver)
        subscription = Subscription(owner, self.queue_size, wake)
        with self._lock:
            self._by_owner.setdefault(owner.lower(), set()).add(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        key = subscription.owner.lower()
        with self._lock:
            found = self._by_owner.get(key)
            if found is not None:
                found.discard(subscription)
                if not found:
                    del self._by_owner[key]

    def subscribers(self, owner: str | None = None) -> int:
        """How many sockets follow ``owner`` (every owner when None): for tests and metrics."""
        with self._lock:
            if owner is not None:
                return len(self._by_owner.get(owner.lower(), ()))
            return sum(len(subs) for subs in self._by_owner.values())

    # -- changes --------------------------------------------------------------------------
    def invoice_changed(self, owner: str, payload: Json) -> None:
        """The Notifier entry point: one committed change, pushed here and published.

        With no fan-out and no socket for ``owner`` this costs one dict lookup, which is
        what every process that serves no sockets pays per change.
        """
        if self.fanout is None and not self.subscribers(owner):
            return
        event = encode_event(payload)
        self.deliver(owner, event)
        if self.fanout is not None:
            self.fanout.publish(owner, event)

    def deliver(self, owner: str, event: str) -> int:
        """Queue one encoded event on this process's sockets for ``owner``; how many."""
        with self._lock:
            targets = list(self._by_owner.get(owner.lower(), ()))
        for subscription in targets:
            subscription.offer(event)
        return len(targets)

    def close(self) -> None:
        """Stop listening to other processes (the sockets end on their own)."""
        if self.fanout is not None:
            self.fanout.close()


def hub_for(gateway: Gateway) -> Hub:
    """The gateway's Hub: the one the built-in plugin registered as a notifier, or one
    added now when that plugin is blocked or the notifiers list was replaced, so that an
    adapter mounting GET /ws always has pushes to serve."""
    for notifier in gateway.notifiers:
        if isinstance(notifier, Hub):
            return notifier
    hub = Hub.from_settings(gateway.settings)
    gateway.add_notifier(hub)
    return hub
