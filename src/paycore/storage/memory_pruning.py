"""The memory store's retention (``paycore.storage.protocols.pruning``), mixed into its
transaction class.
"""

from __future__ import annotations

from ..domain.records import OutboxEvent
from ..webhooks.records import DeliveryStatus
from .contract import PruneBatch
from .memory_rows import MemoryTxBase


class MemoryPruning(MemoryTxBase):
    """The prune batches over the store's events, deliveries, signatures and challenges."""

    def prune_events(
        self, created_before: int, queue_cap: int, after: int, limit: int
    ) -> PruneBatch:
        events = self._t.events
        batch = [e for e in events if e.id > after][:limit]
        old = []
        for event in batch:
            if event.created_at >= created_before:
                break
            old.append(event)
        young_met = len(old) < len(batch)
        cursors: dict[str, int] = {}  # owner -> the lowest cursor of its queues
        for queue in self._t.queues.values():
            cursors[queue.owner] = min(queue.cursor, cursors.get(queue.owner, queue.cursor))
        floors: dict[str, int] = {}  # owner -> id of its queue_cap-th newest event

        def still_queued(event: OutboxEvent) -> bool:
            cursor = cursors.get(event.owner)
            if cursor is None or event.id <= cursor:
                return False
            if event.owner not in floors:
                ids = [e.id for e in events if e.owner == event.owner]
                floors[event.owner] = ids[-queue_cap] if len(ids) >= queue_cap else 0
            return event.id >= floors[event.owner]

        doomed = {e.id for e in old if not still_queued(e)}
        if doomed:
            self._t.events = [e for e in events if e.id not in doomed]
        done = young_met or len(batch) < limit
        return PruneBatch(len(doomed), None if done else batch[-1].id)

    def prune_deliveries(self, settled_before: int, after: int, limit: int) -> PruneBatch:
        rows = [row for row in self._t.deliveries.values() if row.delivery.id > after][:limit]
        last_attempt: dict[int, int] = {}
        for attempt in self._t.attempts:
            at = last_attempt.get(attempt.delivery_id, attempt.attempted_at)
            last_attempt[attempt.delivery_id] = max(at, attempt.attempted_at)
        doomed: set[int] = set()
        young_met = False
        for row in rows:
            delivery = row.delivery
            if delivery.created_at >= settled_before:
                young_met = True
                break
            if (
                delivery.status is not DeliveryStatus.PENDING
                and delivery.retry_from < settled_before
                and last_attempt.get(delivery.id, 0) < settled_before
            ):
                doomed.add(delivery.id)
        for delivery_id in doomed:
            del self._t.deliveries[delivery_id]
        if doomed:
            self._t.attempts = [a for a in self._t.attempts if a.delivery_id not in doomed]
        done = young_met or len(rows) < limit
        return PruneBatch(len(doomed), None if done else rows[-1].delivery.id)

    def prune_signatures(self, expired_before: int, limit: int) -> int:
        signatures = self._t.signatures
        doomed = [d for d, expires in signatures.items() if expires < expired_before][:limit]
        for digest in doomed:
            del signatures[digest]
        return len(doomed)

    def prune_challenges(self, expired_before: int, limit: int) -> int:
        challenges = self._t.challenges
        doomed = [k for k, c in challenges.items() if c.expires_at < expired_before][:limit]
        for key in doomed:
            del challenges[key]
        return len(doomed)
