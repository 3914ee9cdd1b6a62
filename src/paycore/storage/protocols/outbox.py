"""The events' part of the storage contract: the outbox, the per-consumer queues over it, and
the leases of the host-signal queues.

An event is written in the same transaction as the change it tells of. What storage owes:

- Event ids strictly increase and are never handed out again once committed, even after
  their event has been pruned; for one invoice, id order is the order its events were added.
- ``drain_queue`` returns the queued events and marks them consumed atomically: two
  concurrent drains never return the same event, and no event is skipped however late the
  transaction that added it commits (where transactions overlap, an event is held back
  while a lower id may still commit).
- ``move_queue`` is a compare-and-set on a queue's position.
- ``claim_signal`` gives a host-signal queue's lease to one holder at a time, and
  ``move_signal`` moves that queue's position only while that holder still has it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ...domain.changes import UPDATED
from ...domain.records import Json, NewEvent, OutboxEvent, OutboxRead


class Outbox(Protocol):
    """``StorageTx``'s outbox and queue methods: append events, open and drain per-consumer
    queues, read the outbox from a position kept by the caller."""

    def add_event(
        self, owner: str, guid: str, payload: Json, created_at: int, type: str = UPDATED
    ) -> int:
        """Append to the outbox; returns the event id (strictly increasing: once committed,
        an id is never handed out again, even after its event has been pruned). ``type``
        names the change (``paycore.domain.changes``) and comes back on ``OutboxEvent``."""

    def add_events(self, events: Sequence[NewEvent]) -> list[int]:
        """``add_event`` for each, in order, in one round trip where the database allows;
        returns their ids (strictly increasing, in the order given)."""

    def open_queue(self, consumer: str, owner: str) -> None:
        """Create ``consumer``'s queue of ``owner``'s events if missing. A new queue starts
        after the newest existing event; an existing one is left as it is. Where write
        transactions overlap (PostgreSQL) it starts at the horizon instead (``drain_queue``):
        no event committed after it opened is missed, and events committed just before it
        while an older writer was still open may be handed out as well."""

    def drain_queue(self, consumer: str, cap: int) -> list[OutboxEvent]:
        """Return the queued events (oldest first, at most the newest ``cap``) and mark them
        consumed, atomically: two concurrent drains never return the same event, and no
        event is skipped, however late the transaction that added it commits.

        Order: event id order, the same for every queue, which for one invoice is the
        order its events were added in. Where transactions overlap (PostgreSQL), an
        event may be held back while a transaction that took a lower event id is still
        open, and is handed out once it has ended; the draining transaction's own events
        count as settled. Costs the events returned, not the backlog."""

    def close_queue(self, consumer: str) -> None:
        """Remove ``consumer``'s queue (the events stay in the outbox); a no-op if missing."""

    def read_outbox(self, consumer: str, cap: int) -> OutboxRead | None:
        """Every owner's events after ``consumer``'s position (a queue opened with owner
        ``ALL_OWNERS``), oldest first, at most ``cap``, without moving it: the host-signal
        consumer (``paycore.events.signals``) runs its handlers first, then moves it with
        ``move_queue``. ``upto`` is where the position may go once these are handled: the
        last one's id when ``cap`` cut the read short, else the horizon of ``drain_queue``
        (nothing can still appear at or below it). None for an unknown consumer."""

    def outbox_since(self, after: int | None, cap: int, owner: str | None = None) -> OutboxRead:
        """Events after id ``after`` (``owner``'s only, or every owner's when None), oldest
        first, at most ``cap``, up to the horizon of ``drain_queue``, with no stored
        position: the WebSocket feed of a web process keeps its position in memory
        (``paycore.realtime.outbox_feed``) and a resuming socket passes its last event id.
        ``upto`` is where a reader may go on from (as ``read_outbox``). ``after=None``
        reads nothing and answers the horizon as ``position`` and ``upto``: where a new
        reader starts so that it misses nothing committed from then on."""

    def move_queue(self, consumer: str, start: int, to: int) -> bool:
        """Set ``consumer``'s position to ``to`` if it is still ``start``; False if another
        consumer moved it meanwhile (or it is gone)."""


class SignalLeases(Protocol):
    """``StorageTx``'s host-signal leases: one lease per host-signal queue (``signal:<handler
    name>``, opened with ``open_queue`` for ``ALL_OWNERS``), so that one consumer at a time
    runs a handler, however many processes run consumers (``paycore.events.signals``). Times
    are unix milliseconds."""

    def claim_signal(self, consumer: str, holder: str, now: int, lease_ms: int) -> bool:
        """Take or renew ``consumer``'s lease for ``holder`` -- when nobody holds it, it has
        lapsed (``lease_until <= now``), or it is ``holder``'s already -- until ``now +
        lease_ms``. ``False`` while another holder's lease is live. Atomic against
        concurrent claims: one winner."""

    def move_signal(
        self, consumer: str, holder: str, start: int, to: int, now: int, lease_ms: int
    ) -> bool:
        """``move_queue(consumer, start, to)`` and renew the lease to ``now + lease_ms``,
        only while ``holder`` still holds ``consumer``'s lease (a lapsed lease nobody took
        over is still its own). ``False``, changing nothing, once another holder claimed it
        or the position is no longer ``start``."""

    def release_signal(self, consumer: str, holder: str) -> None:
        """Give up ``holder``'s lease (the position stays), so another consumer need not
        wait for it to lapse. A no-op when ``holder`` does not hold it."""
