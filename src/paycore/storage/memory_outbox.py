"""The memory store's outbox, queues and host-signal leases
(``paycore.storage.protocols.outbox``), mixed into its transaction class. Transactions run
one at a time, so id order is commit order and the horizon is the last id.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Sequence

import attrs

from ..domain.changes import UPDATED
from ..domain.records import Json, NewEvent, OutboxEvent, OutboxRead
from .memory_rows import MemoryTxBase, _Queue

log = logging.getLogger("paycore.events")


def _detached_event(event: OutboxEvent) -> OutboxEvent:
    return attrs.evolve(event, payload=copy.deepcopy(event.payload))


class MemoryOutbox(MemoryTxBase):
    """The event methods over the store's ``events``, ``queues`` and ``signal_leases``
    tables."""

    def add_event(
        self, owner: str, guid: str, payload: Json, created_at: int, type: str = UPDATED
    ) -> int:
        self._t.last_event_id += 1
        event = OutboxEvent(self._t.last_event_id, owner, guid, payload, created_at, type)
        self._t.events.append(_detached_event(event))
        return event.id

    def add_events(self, events: Sequence[NewEvent]) -> list[int]:
        return [self.add_event(e.owner, e.guid, e.payload, e.created_at, e.type) for e in events]

    def open_queue(self, consumer: str, owner: str) -> None:
        if consumer not in self._t.queues:
            self._t.queues[consumer] = _Queue(owner, self._t.last_event_id)

    def drain_queue(self, consumer: str, cap: int) -> list[OutboxEvent]:
        """An unknown consumer has nothing queued, so it drains to ``[]``."""
        if cap < 1:
            raise ValueError("cap must be at least 1")
        queue = self._t.queues.get(consumer)
        if queue is None:
            return []
        pending = [e for e in self._t.events if e.owner == queue.owner and e.id > queue.cursor]
        if not pending:
            return []
        if len(pending) > cap:
            log.warning(
                "event queue %s over its cap of %d: dropped %d oldest events",
                consumer,
                cap,
                len(pending) - cap,
            )
            pending = pending[-cap:]
        self._t.queues[consumer] = attrs.evolve(queue, cursor=pending[-1].id)
        return [_detached_event(e) for e in pending]

    def close_queue(self, consumer: str) -> None:
        self._t.queues.pop(consumer, None)

    def read_outbox(self, consumer: str, cap: int) -> OutboxRead | None:
        if cap < 1:
            raise ValueError("cap must be at least 1")
        queue = self._t.queues.get(consumer)
        if queue is None:
            return None
        after = [e for e in self._t.events if e.id > queue.cursor][:cap]
        upto = after[-1].id if len(after) == cap else self._t.last_event_id
        return OutboxRead(queue.cursor, [_detached_event(e) for e in after], upto)

    def outbox_since(self, after: int | None, cap: int, owner: str | None = None) -> OutboxRead:
        if cap < 1:
            raise ValueError("cap must be at least 1")
        if after is None:
            return OutboxRead(self._t.last_event_id, [], self._t.last_event_id)
        found = [e for e in self._t.events if e.id > after and (owner is None or e.owner == owner)][
            :cap
        ]
        upto = found[-1].id if len(found) == cap else max(after, self._t.last_event_id)
        return OutboxRead(after, [_detached_event(e) for e in found], upto)

    def move_queue(self, consumer: str, start: int, to: int) -> bool:
        queue = self._t.queues.get(consumer)
        if queue is None or queue.cursor != start:
            return False
        self._t.queues[consumer] = attrs.evolve(queue, cursor=to)
        return True

    def claim_signal(self, consumer: str, holder: str, now: int, lease_ms: int) -> bool:
        held, until = self._t.signal_leases.get(consumer, (None, 0))
        if held not in (None, holder) and until > now:
            return False
        self._t.signal_leases[consumer] = (holder, now + lease_ms)
        return True

    def move_signal(
        self, consumer: str, holder: str, start: int, to: int, now: int, lease_ms: int
    ) -> bool:
        held, _until = self._t.signal_leases.get(consumer, (None, 0))
        if held != holder:
            return False
        self._t.signal_leases[consumer] = (holder, now + lease_ms)
        return self.move_queue(consumer, start, to)

    def release_signal(self, consumer: str, holder: str) -> None:
        held, _until = self._t.signal_leases.get(consumer, (None, 0))
        if held == holder:
            self._t.signal_leases[consumer] = (None, 0)
