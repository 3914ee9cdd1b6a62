"""The retention part of the storage contract: deleting rows nothing can use any more.

Rows are deleted in batches of at most ``limit`` so that each batch is a short transaction of
its own (``paycore.ops.retention`` runs the rounds). None of them ever deletes a row still
needed: an event a queue can still hand out, a pending delivery, a signature or challenge
before its expiry. Pruning twice deletes nothing the second time.
"""

from __future__ import annotations

from typing import Protocol

import attrs


@attrs.frozen
class PruneBatch:
    """What one batch of ``prune_events`` / ``prune_deliveries`` did.

    ``resume_after`` is the id the next batch starts after, or ``None`` when this round has
    nothing more to look at: the batch reached rows too young to prune (ids follow creation
    time, so everything after them is younger still) or the end of the table.
    """

    deleted: int
    resume_after: int | None


class Pruning(Protocol):
    """``StorageTx``'s retention methods: outbox events, webhook deliveries, signatures and
    challenges past their use."""

    def prune_events(
        self, created_before: int, queue_cap: int, after: int, limit: int
    ) -> PruneBatch:
        """Delete outbox events created before ``created_before`` that no queue can hand out
        any more, looking at up to ``limit`` events with ids above ``after``, in id order.

        An event is still needed while some queue of its owner has not drained it (its
        cursor is below the event) and it is among the owner's newest ``queue_cap`` events
        (``drain_queue``'s cap: a queue never hands out an older one). The newest event may
        go as well: an event id is never handed out twice (``add_event``), so the next
        event still comes after every cursor. The batch stops at the first event created at
        or after ``created_before``."""

    def prune_deliveries(self, settled_before: int, after: int, limit: int) -> PruneBatch:
        """Delete webhook deliveries that are settled (delivered or failed), whose retry
        schedule began (``retry_from``) and whose every attempt was before
        ``settled_before`` (ms), with their attempt logs; pending ones are never touched.
        Looks at up to ``limit`` deliveries with ids above ``after``, in id order, and stops
        at the first one created at or after ``settled_before``."""

    def prune_signatures(self, expired_before: int, limit: int) -> int:
        """Forget up to ``limit`` remembered salt signatures whose ``expires_at`` is before
        ``expired_before``; returns how many. A live one refuses a replay: never pass a
        time ahead of the clock ``remember_signature`` is given."""

    def prune_challenges(self, expired_before: int, limit: int) -> int:
        """Delete up to ``limit`` proof-of-work challenges that expired before
        ``expired_before`` without being taken; returns how many."""
