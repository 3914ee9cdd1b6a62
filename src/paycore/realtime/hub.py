"""The per-process Hub: which sockets want which owner's events, and a bounded queue each.

Two ways a change reaches the Hub's sockets:

- From the outbox (``outbox_feed``), when the gateway's store can signal commits (PostgreSQL,
  a SQLite file): one reader thread per process hands every committed event, whichever
  process made it, to :meth:`Hub.deliver_event`, with its event id. The Hub, as the
  gateway's notifier, then pushes nothing itself: every frame has one source, so none is
  sent twice and every one carries its id (which lets a socket resume).
- Directly, for stores with no signal (``memory://``, one process): the gateway calls
  :meth:`Hub.invoice_changed` after each commit and the Hub queues the change at once; when
  a Redis fan-out is configured it also publishes it, and the other processes' listeners
  hand it to their Hub through :meth:`Hub.deliver`.

Either way the outbox stays the source of truth: a change that misses a socket (a full
queue, a Redis outage) is still read by polling or by the next GET.

Thread-safety: ``invoice_changed`` runs on whatever thread committed the change (a request's
worker thread, the sweeper, the Redis listener), while each socket drains its subscription
on its own thread or event loop. Every structure here is guarded by a lock held only for
list operations, never while calling out, so a slow socket cannot stall a committer.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Protocol

from ..domain.changes import STATUS_CHANGES, EventPayload
from ..domain.records import Json, OutboxEvent
from ..events.queues import EventQueues
from ..notify.contract import BaseNotifier
from .frames import encode_event
from .limits import SocketLimits
from .outbox_feed import OutboxFeed
from .stream_board import BoardSource, StreamBoard, Watch

if TYPE_CHECKING:
    from ..config import Settings
    from ..notify import Notifier
    from ..notify.contract import NotifierHost

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

    def __init__(
        self,
        owner: str,
        limit: int,
        wake: Callable[[], None],
        types: Iterable[str] | None = None,
    ) -> None:
        self.owner = owner
        self.limit = limit
        self._wake = wake
        #: Whether the socket listed its event types (its push frames then say each type).
        self.typed = types is not None
        #: The event types it is pushed: the status changes unless it listed others.
        self.types: frozenset[str] = STATUS_CHANGES if types is None else frozenset(types)
        self._lock = threading.Lock()
        # (event id, encoded event, type); the id is None for a change pushed directly (no
        # feed), the type None for one from another process's Hub (Redis: status changes).
        self._events: deque[tuple[int | None, str, str | None]] = deque()
        #: Events with an id at or below this were replayed already (``resume``): skipped.
        self.floor = 0
        self.overflowed = False

    def wants(self, type: str | None) -> bool:
        """Whether an event of ``type`` is pushed here (an untyped one counts as a status
        change: only status changes travel untyped, from another process's Hub)."""
        return type in self.types if type is not None else bool(self.types & STATUS_CHANGES)

    def offer(self, event: str, event_id: int | None = None, type: str | None = None) -> None:
        if not self.wants(type):
            return
        with self._lock:
            if self.overflowed or (event_id is not None and event_id <= self.floor):
                return
            if len(self._events) >= self.limit:
                self._overflow()
            else:
                self._events.append((event_id, event, type))
        self._call_wake()

    def resume(self, replayed: Sequence[tuple[int, str, str | None]], upto: int) -> None:
        """Put ``replayed`` (what a reconnecting socket missed, read from the outbox up to
        id ``upto``) before anything queued meanwhile, dropping what both hold: the feed
        may have queued an event the replay read too, and only one copy may go out."""
        with self._lock:
            if self.overflowed:
                return
            self.floor = max(self.floor, upto)
            later = [(i, e, t) for i, e, t in self._events if i is None or i > upto]
            self._events = deque([*replayed, *later])
            if len(self._events) > self.limit:
                self._overflow()
        self._call_wake()

    def _overflow(self) -> None:
        self.overflowed = True
        self._events.clear()

    def _call_wake(self) -> None:
        try:
            self._wake()
        except Exception:  # an event loop already gone: its socket is closing anyway
            log.debug("wake of a closing socket failed", exc_info=True)

    def take(self) -> list[str]:
        """Everything waiting, oldest first, leaving the queue empty."""
        return [event for _, event in self.take_with_ids()]

    def take_with_ids(self) -> list[tuple[int | None, str]]:
        """``take`` with each event's outbox id (None for a direct push)."""
        return [(i, event) for i, event, _type in self.take_typed()]

    def take_typed(self) -> list[tuple[int | None, str, str | None]]:
        """``take`` with each event's outbox id and type (None where not known)."""
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

    def __init__(
        self,
        *,
        queue_size: int = 256,
        fanout: Fanout | None = None,
        limits: SocketLimits | None = None,
    ) -> None:
        self.queue_size = queue_size
        self.fanout = fanout
        #: This process's socket caps per client address and per owner.
        self.limits = limits or SocketLimits()
        self._lock = threading.Lock()
        self._by_owner: dict[str, set[Subscription]] = {}
        #: The outbox reader once bound to a gateway whose store can signal commits
        #: (``outbox_feed``); None: changes are pushed directly as this process makes them.
        self.feed: OutboxFeed | None = None
        #: The bound gateway's outbox readers (replays read them); None while unbound.
        self.events: EventQueues | None = None
        #: Open invoice event streams by invoice (``stream_board``), made with the first
        #: stream; and how many streams hold a thread / a coroutine, against their caps.
        self.board: StreamBoard | None = None
        self._places = {True: 0, False: 0}

    def bind(self, gateway: NotifierHost) -> None:
        """Feed this Hub from the gateway's outbox when its store can say when it grew
        (PostgreSQL, a SQLite file): then every process's changes reach this process's
        sockets, with their event ids, and this process's own changes come the same way."""
        self.events = gateway.events
        if gateway.events.can_signal and self.feed is None:
            self.feed = OutboxFeed(
                gateway.events, self.deliver_event, name=f"paycore-ws-{os.getpid()}"
            )

    @classmethod
    def from_settings(cls, settings: Settings) -> Hub:
        """In-process only, or fanned out through ``settings.redis_url`` when set."""
        fanout: Fanout | None = None
        if settings.redis_url:
            from .redis_fanout import RedisFanout

            fanout = RedisFanout(settings.redis_url, settings.redis_channel)
        return cls(
            queue_size=settings.ws_queue_size,
            fanout=fanout,
            limits=SocketLimits.from_settings(settings),
        )

    # -- sockets --------------------------------------------------------------------------
    def subscribe(
        self, owner: str, wake: Callable[[], None], types: Iterable[str] | None = None
    ) -> Subscription:
        """Follow ``owner``'s changes of ``types`` (the status changes when None) from now
        on. May block briefly the first time, while the fan-out starts listening, so that
        "registered" means "receiving"."""
        if self.feed is not None:
            self.feed.listen()
        elif self.fanout is not None:
            self.fanout.listen(self.deliver)
        subscription = Subscription(owner, self.queue_size, wake, types)
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

    # -- invoice event streams (GET /invoice/{guid}/events) -------------------------------
    def stream_board(self, source: BoardSource) -> StreamBoard:
        """The process's board of open invoice streams, reading through ``source`` (the
        gateway: the first stream's, which is every stream's)."""
        with self._lock:
            if self.board is None:
                self.board = StreamBoard(source)
            return self.board

    def watch(self, guid: str, board: StreamBoard) -> Watch:
        """Be offered each version of invoice ``guid`` that ``board`` reads after a change
        from now on (starting the outbox feed, as a socket's subscription does)."""
        if self.feed is not None:
            self.feed.listen()
        return board.watch(guid)

    def unwatch(self, watch: Watch, threaded: bool | None) -> None:
        """Forget ``watch``; give back its stream's place (``threaded``: which kind) if
        it held one."""
        if self.board is not None:
            self.board.unwatch(watch)
        if threaded is not None:
            with self._lock:
                self._places[threaded] -= 1

    def take_stream_place(self, threaded: bool, cap: int) -> bool:
        """One more open stream of that kind, unless ``cap`` are open already."""
        with self._lock:
            if self._places[threaded] >= cap:
                return False
            self._places[threaded] += 1
            return True

    def streams(self, threaded: bool | None = None) -> int:
        """Open streams (of one kind, or all): for tests and metrics."""
        with self._lock:
            if threaded is None:
                return sum(self._places.values())
            return self._places[threaded]

    def _poke(self, guid: object) -> None:
        board = self.board
        if board is not None:
            board.changed(guid)

    # -- changes --------------------------------------------------------------------------
    def invoice_changed(self, owner: str, payload: Json) -> None:
        """The Notifier entry point: one committed change, pushed here and published.

        With no fan-out and no socket for ``owner`` this costs one dict lookup, which is
        what every process that serves no sockets pays per change. The gateway's payload
        says its event type (``EventPayload``): sockets get the types they follow, and only
        status changes are published to other processes, whose Hubs cannot tell types apart.
        """
        type = payload.type if isinstance(payload, EventPayload) else None
        published = self.fanout is not None and (type is None or type in STATUS_CHANGES)
        if self.feed is None:
            self._poke(payload.get("guid"))
        if self.feed is not None:
            # The feed pushes it, from the outbox, in every process (this one included).
            # Still published when Redis is configured, for web processes of an older
            # release listening there during a rolling upgrade.
            if published and self.fanout is not None:
                self.fanout.publish(owner, encode_event(payload))
            return
        if self.fanout is None and not self.subscribers(owner):
            return
        event = encode_event(payload)
        self._offer(owner, event, None, type)
        if published and self.fanout is not None:
            self.fanout.publish(owner, event)

    def deliver(self, owner: str, event: str) -> int:
        """Queue one encoded event (a status change another process published) on this
        process's sockets for ``owner``; how many."""
        return self._offer(owner, event, None, None)

    def deliver_event(self, event: OutboxEvent) -> int:
        """Queue one outbox event, with its id, on this process's sockets for its owner
        that follow its type; tell the invoice's open event streams."""
        self._poke(event.guid)
        with self._lock:
            targets = list(self._by_owner.get(event.owner.lower(), ()))
        wanting = [s for s in targets if s.wants(event.type)]
        if wanting:
            text = encode_event(event.payload)
            for subscription in wanting:
                subscription.offer(text, event.id, event.type)
        return len(wanting)

    def _offer(self, owner: str, event: str, event_id: int | None, type: str | None) -> int:
        with self._lock:
            targets = list(self._by_owner.get(owner.lower(), ()))
        wanting = [s for s in targets if s.wants(type)]
        for subscription in wanting:
            subscription.offer(event, event_id, type)
        return len(wanting)

    def close(self) -> None:
        """Stop listening to other processes (the sockets end on their own)."""
        if self.feed is not None:
            self.feed.close()
        if self.fanout is not None:
            self.fanout.close()
        if self.board is not None:
            self.board.close()


class HubHost(Protocol):
    """What :func:`hub_for` is handed: a gateway's settings and its notifiers, which the
    Hub is one of. The ``Gateway`` satisfies it."""

    @property
    def settings(self) -> Settings: ...

    @property
    def notifiers(self) -> tuple[Notifier, ...]: ...

    def add_notifier(self, notifier: Notifier, *, first: bool = False) -> None: ...


def hub_for(gateway: HubHost) -> Hub:
    """The gateway's Hub: the one the built-in plugin registered as a notifier, or one
    added now when that plugin is blocked or the notifiers list was replaced, so that an
    adapter mounting GET /ws always has pushes to serve."""
    for notifier in gateway.notifiers:
        if isinstance(notifier, Hub):
            return notifier
    hub = Hub.from_settings(gateway.settings)
    gateway.add_notifier(hub)
    return hub
