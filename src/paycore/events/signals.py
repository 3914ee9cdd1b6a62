"""Host signals: in-process handlers for invoice events, fed by the durable outbox.

A host that wants to fulfil an order when its invoice is paid registers a handler::

    @gateway.on("invoice.paid")
    def fulfil(event: InvoiceEvent) -> None: ...

(or ``paycore.on(...)`` for handlers of every gateway in the process). Handlers are not
called from the request or watcher that made the change: a consumer (``SignalConsumer``,
run by ``paycore worker`` or by a thread of the web process) reads the outbox after commit,
so a handler sees only committed changes, and every change exactly once while the handler
returns normally.

Each handler has a queue of its own in storage (``StorageTx.read_outbox``: a position over
every owner's events), named ``signal:<handler name>``, opened at the newest event the
first time the consumer runs with it: a handler added to a running shop is not called for
last year's payments. Its position moves past an event only after the handler returned, so
the handler is called again for an event it raised on, at the next pass, and for one whose
handling a crash interrupted: delivery is at least once, so a handler should be idempotent
(look the order up by guid and skip it when done). A handler that raises stops only its
own queue (later events wait behind the failing one, in order); the others go on.

``deliver_outbox`` is the one function that reads the outbox and moves a position, kept
small so that other outbox readers (the WebSocket feed) can share it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

import attrs

from ..domain.changes import ALL_TYPES
from ..domain.records import ALL_OWNERS, Json, OutboxEvent

if TYPE_CHECKING:
    from ..storage import Storage

log = logging.getLogger("paycore.signals")

#: Events read per handler per pass.
BATCH = 200


@attrs.frozen
class InvoiceEvent:
    """One committed invoice change as a handler receives it: ``type`` names what happened
    (``paycore.domain.changes``), ``invoice`` is the Invoice record of docs/interface.md
    as it stood right after the change, ``id`` the outbox event's id (unique, increasing)."""

    id: int
    type: str
    owner: str
    guid: str
    invoice: Json
    created_at: int

    @classmethod
    def of(cls, event: OutboxEvent) -> InvoiceEvent:
        return cls(event.id, event.type, event.owner, event.guid, event.payload, event.created_at)


Handler = Callable[[InvoiceEvent], object]


@attrs.frozen
class Subscription:
    name: str
    types: frozenset[str] | None  # None: every type
    handler: Handler

    @property
    def consumer(self) -> str:
        return f"signal:{self.name}"

    def wants(self, event: OutboxEvent) -> bool:
        return self.types is None or event.type in self.types


class Signals:
    """A registry of handlers by event type. ``on`` registers; a ``SignalConsumer`` calls."""

    def __init__(self) -> None:
        self._subs: dict[str, Subscription] = {}
        self._lock = threading.Lock()

    def on(self, *types: str, name: str | None = None) -> Callable[[Handler], Handler]:
        """Decorator: call the handler for events of ``types`` (every type when none is
        given). ``name`` (default: the handler's module and qualified name) keys its stored
        position, so keep it stable across deploys; registering a name again replaces it."""
        unknown = sorted(set(types) - ALL_TYPES)
        if unknown:
            raise ValueError(f"unknown event type {unknown[0]!r}; known: {sorted(ALL_TYPES)}")

        def register(handler: Handler) -> Handler:
            self.subscribe(handler, *types, name=name)
            return handler

        return register

    def subscribe(self, handler: Handler, *types: str, name: str | None = None) -> Subscription:
        """``on`` without the decorator: returns the subscription."""
        key = name or f"{handler.__module__}.{handler.__qualname__}"
        sub = Subscription(key, frozenset(types) or None, handler)
        with self._lock:
            self._subs[key] = sub
        return sub

    def unsubscribe(self, name: str) -> None:
        with self._lock:
            self._subs.pop(name, None)

    def subscriptions(self) -> list[Subscription]:
        with self._lock:
            return list(self._subs.values())


#: Handlers registered with ``paycore.on``: every gateway's consumer calls them too.
default_signals = Signals()
on = default_signals.on


def deliver_outbox(
    storage: Storage,
    consumer: str,
    handle: Callable[[list[OutboxEvent]], int],
    cap: int = BATCH,
) -> int:
    """Read every owner's events after ``consumer``'s position (opening it at the newest
    event if new), pass them to ``handle``, and move the position past the first
    ``handle``'s return value of them (all of them: ``len``; past the horizon when it
    handled all). Returns how many were handled. ``handle`` runs outside any transaction,
    so a slow handler holds no lock; two consumers running one queue at once may both
    handle an event (at least once), and only one moves the position."""
    with storage.transaction() as tx:
        tx.open_queue(consumer, ALL_OWNERS)
        read = tx.read_outbox(consumer, cap)
    if read is None or (not read.events and read.upto == read.position):
        return 0
    done = handle(read.events) if read.events else 0
    if done == len(read.events):
        to = read.upto
    elif done == 0:
        return 0
    else:
        to = read.events[done - 1].id
    with storage.transaction() as tx:
        tx.move_queue(consumer, read.position, to)
    return done


class SignalConsumer:
    """Runs the handlers of ``signals`` (and of ``paycore.on``) over ``storage``'s outbox.

    ``run_once`` is one pass for every handler; ``run`` loops until ``halt`` is set. The
    worker runs one; a web process can run one in a thread instead."""

    def __init__(
        self,
        storage: Storage,
        signals: Iterable[Signals],
        *,
        batch: int = BATCH,
    ) -> None:
        self._storage = storage
        self._signals = list(signals)
        self._batch = batch

    def subscriptions(self) -> list[Subscription]:
        found: dict[str, Subscription] = {}
        for registry in self._signals:
            for sub in registry.subscriptions():
                found.setdefault(sub.name, sub)
        return list(found.values())

    def run_once(self) -> int:
        """One pass: each handler gets the events after its position. Returns how many
        handler calls succeeded."""
        total = 0
        for sub in self.subscriptions():
            total += deliver_outbox(self._storage, sub.consumer, _calling(sub), self._batch)
        return total

    def run(self, halt: threading.Event, interval: float = 1.0) -> None:
        while not halt.is_set():
            try:
                busy = self.run_once()
            except Exception:  # storage down: try again at the next pass
                log.exception("signal consumer pass failed")
                busy = 0
            if not busy:
                halt.wait(interval)


def _calling(sub: Subscription) -> Callable[[list[OutboxEvent]], int]:
    def handle(events: list[OutboxEvent]) -> int:
        for i, event in enumerate(events):
            if not sub.wants(event):
                continue
            try:
                sub.handler(InvoiceEvent.of(event))
            except Exception:
                log.exception(
                    "signal handler %s failed on event %d (%s); retried at the next pass",
                    sub.name,
                    event.id,
                    event.type,
                )
                return i
        return len(events)

    return handle
