"""Host signals: in-process handlers for invoice events, fed by the durable outbox.

A host that wants to fulfil an order when its invoice is paid registers a handler::

    @gateway.on("invoice.paid")
    def fulfil(event: InvoiceEvent) -> None: ...

(or ``paycore.on(...)`` for handlers of every gateway in the process). Handlers are not
called from the request or watcher that made the change: a consumer (``SignalConsumer``,
run by ``paycore worker`` or by a thread of the web process) reads the outbox after commit,
so a handler sees only committed changes.

Each handler has a queue of its own in storage (``StorageTx.read_outbox``: a position over
every owner's events), named ``signal:<handler name>``, opened at the newest event the
first time a consumer runs with it: a handler added to a running shop is not called for
last year's payments. Any number of consumers, in any number of processes, may run at once:
a pass over a handler's queue first takes the queue's lease in storage
(``StorageTx.claim_signal``), so one consumer at a time calls a handler; the others skip
that handler for the pass. The holder calls the handler for one event at a time and, once it
returned, moves the position past that event with ``move_signal``, which only the lease's
holder can do (fencing) and which renews the lease; a heartbeat renews it while a slow
handler runs. So each handler is called once per change while handlers return normally and
no process dies mid-handler. A handler that raises is called again with the same event at the
next pass (later events wait behind it; the other handlers go on). A consumer killed while
a handler ran leaves its lease to lapse (``signal_lease`` seconds after its last renewal);
the next holder then calls that one event's handler again, once.

``deliver_leased`` is the one function that reads the outbox for a handler and moves its
position.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import attrs

from ..domain.changes import ALL_TYPES
from ..domain.records import ALL_OWNERS, Json, OutboxEvent

if TYPE_CHECKING:
    from ..storage import Storage

log = logging.getLogger("paycore.signals")

#: Events read per handler per pass.
BATCH = 200
#: Seconds a consumer's lease on a handler's queue lasts unless renewed (``signal_lease``).
LEASE = 30.0


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

#: Every live gateway's registry, with the database URL of its gateway: a worker process
#: serves the handlers the host registered on its own gateway objects (``hosted_on``).
_gateways: weakref.WeakKeyDictionary[Signals, str] = weakref.WeakKeyDictionary()


def register_gateway(signals: Signals, database_url: str) -> None:
    """Called by ``Gateway``: ``signals`` belongs to a gateway on ``database_url``."""
    _gateways[signals] = database_url


def hosted_on(database_url: str) -> tuple[list[Signals], list[Signals]]:
    """The registries of this process's gateways on ``database_url`` and those on other
    databases (an in-memory store is nobody else's: it matches nothing)."""
    same: list[Signals] = []
    other: list[Signals] = []
    for registry, url in list(_gateways.items()):
        matches = url == database_url and not url.startswith("memory")
        (same if matches else other).append(registry)
    return same, other


def every_registry() -> list[Signals]:
    """``default_signals`` and every live gateway's registry (to count what an import
    registered)."""
    return [default_signals, *list(_gateways.keys())]


def holder_id() -> str:
    """A consumer's name in the lease rows: host, process and a random part, unique per
    consumer object (so a restarted process is a new holder)."""
    return f"{socket.gethostname()[:100]}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


def _now_ms() -> int:
    return int(time.time() * 1000)


@contextmanager
def _heartbeat(storage: Storage, consumer: str, holder: str, lease_ms: int) -> Iterator[None]:
    """Renew ``holder``'s lease on ``consumer`` every third of the lease while the block
    runs (a slow handler), so the lease only lapses when the process stops renewing it."""
    done = threading.Event()

    def renew() -> None:
        while not done.wait(lease_ms / 3000):
            try:
                with storage.transaction() as tx:
                    kept = tx.claim_signal(consumer, holder, _now_ms(), lease_ms)
            except Exception:  # storage down: the next move will tell
                log.warning("could not renew the lease of %s", consumer, exc_info=True)
                continue
            if not kept:
                log.warning("lost the lease of %s while a handler ran", consumer)
                return

    thread = threading.Thread(target=renew, name=f"paycore-lease-{consumer}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def deliver_leased(
    storage: Storage,
    consumer: str,
    handle: Callable[[OutboxEvent], bool],
    *,
    holder: str,
    lease_ms: int,
    wants: Callable[[OutboxEvent], bool] = lambda event: True,
    cap: int = BATCH,
    open_at: int | None = None,
    stop: threading.Event | None = None,
) -> int:
    """One pass over ``consumer``'s queue, under its lease: open the queue if new (at the
    newest event, or at ``open_at`` when that is older), take the lease for ``holder``
    (or return 0 while another holder has it), read up to ``cap`` events and, for each one
    ``wants``, call ``handle`` (outside any transaction) and move the position past it,
    only while ``holder`` still holds the lease. ``handle`` returns False to stop the pass
    at that event (it is read again next time). Events not wanted are passed over with the
    next move. The lease is released at the end; a queue with nothing after its position
    is left without taking it, so an idle pass writes nothing. Once ``stop`` is set the
    pass ends after the handler call in progress (a worker told to stop). Returns how many
    events were handled."""
    with storage.transaction() as tx:
        if open_at is not None and tx.read_outbox(consumer, 1) is None:
            tx.open_queue(consumer, ALL_OWNERS)
            opened = tx.read_outbox(consumer, 1)
            if opened is not None and open_at < opened.position:
                tx.move_queue(consumer, opened.position, open_at)
        else:
            tx.open_queue(consumer, ALL_OWNERS)
        peek = tx.read_outbox(consumer, 1)
    if peek is None or (not peek.events and peek.upto == peek.position):
        return 0  # nothing to do: no lease taken, nothing written
    with storage.transaction() as tx:
        if not tx.claim_signal(consumer, holder, _now_ms(), lease_ms):
            return 0
        read = tx.read_outbox(consumer, cap)
    handled = 0
    try:
        if read is None or (not read.events and read.upto == read.position):
            return 0
        position = read.position
        wanted = [event for event in read.events if wants(event)]
        if wanted:
            with _heartbeat(storage, consumer, holder, lease_ms):
                for event in wanted:
                    if stop is not None and stop.is_set():
                        return handled
                    if not handle(event):
                        return handled
                    handled += 1
                    if not _move(storage, consumer, holder, position, event.id, lease_ms):
                        return handled
                    position = event.id
        if position != read.upto:
            _move(storage, consumer, holder, position, read.upto, lease_ms)
        return handled
    finally:
        with storage.transaction() as tx:
            tx.release_signal(consumer, holder)


def _move(storage: Storage, consumer: str, holder: str, start: int, to: int, lease_ms: int) -> bool:
    with storage.transaction() as tx:
        moved = tx.move_signal(consumer, holder, start, to, _now_ms(), lease_ms)
    if not moved:
        log.warning(
            "%s: lost the lease or the position (another consumer took over); this pass stops",
            consumer,
        )
    return moved


class SignalConsumer:
    """Runs the handlers of ``signals`` (and of ``paycore.on``) over ``storage``'s outbox.

    ``run_once`` is one pass for every handler; ``run`` loops until ``halt`` is set. The
    worker runs one; a web process can run one in a thread instead; several at once share
    the work through the queues' leases. ``lease`` is the lease's length in seconds;
    ``open_at`` (an event id) opens each new handler queue there instead of at the newest
    event (the test fixture: handlers registered during a test see what happened since it
    started)."""

    def __init__(
        self,
        storage: Storage,
        signals: Iterable[Signals],
        *,
        batch: int = BATCH,
        lease: float = LEASE,
        open_at: int | None = None,
    ) -> None:
        self._storage = storage
        self._signals = list(signals)
        self._batch = batch
        self._lease_ms = max(1, round(lease * 1000))
        self._open_at = open_at
        self.holder = holder_id()

    def subscriptions(self) -> list[Subscription]:
        found: dict[str, Subscription] = {}
        for registry in self._signals:
            for sub in registry.subscriptions():
                found.setdefault(sub.name, sub)
        return list(found.values())

    def run_once(self, halt: threading.Event | None = None) -> int:
        """One pass: each handler whose lease this consumer gets is called for the events
        after its position, until ``halt`` is set (the call in progress finishes). Returns
        how many handler calls succeeded."""
        total = 0
        for sub in self.subscriptions():
            if halt is not None and halt.is_set():
                break
            total += deliver_leased(
                self._storage,
                sub.consumer,
                _calling(sub),
                holder=self.holder,
                lease_ms=self._lease_ms,
                wants=sub.wants,
                cap=self._batch,
                open_at=self._open_at,
                stop=halt,
            )
        return total

    def run(self, halt: threading.Event, interval: float = 1.0) -> None:
        while not halt.is_set():
            try:
                busy = self.run_once(halt)
            except Exception:  # storage down: try again at the next pass
                log.exception("signal consumer pass failed")
                busy = 0
            if not busy:
                halt.wait(interval)


def _calling(sub: Subscription) -> Callable[[OutboxEvent], bool]:
    def handle(event: OutboxEvent) -> bool:
        try:
            sub.handler(InvoiceEvent.of(event))
        except Exception:
            log.exception(
                "signal handler %s failed on event %d (%s); retried at the next pass",
                sub.name,
                event.id,
                event.type,
            )
            return False
        return True

    return handle
