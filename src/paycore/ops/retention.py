"""Retention: ``Gateway.retention`` deletes what nothing can use any more, so that the outbox,
the webhook delivery log, the remembered salt signatures, the proof-of-work challenges and
the idempotency keys' answers do not grow for ever (docs/operations.md §Retention).

Each kind is pruned in batches of ``retention_batch`` rows, every batch its own short
transaction, so a round never holds a lock for long and a busy web process waits for at
most one batch. What is still needed is never touched: an event a poll queue can still hand
out, a pending delivery, a signature or challenge before its expiry plus
``retention_expired_grace``. That grace covers the clocks of the processes disagreeing: a
web process whose clock is behind the worker's still accepts a salt for up to that long
after the worker thinks it stale, and must still find its signature remembered.

The worker runs a round every ``worker_prune_interval`` (``paycore.runtime.worker``); ``paycore
prune`` runs one from the command line. Rounds are idempotent, so several workers pruning at
once only share the work.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Protocol

import attrs

from ..config import Settings
from ..storage import PruneBatch, Storage
from ..storage.idempotency import IdempotencyKeys
from ..storage.protocols.pruning import Pruning
from .idempotency import KEY_TTL


@attrs.frozen
class PruneReport:
    """Rows one round deleted, per kind."""

    events: int = 0
    deliveries: int = 0
    signatures: int = 0
    challenges: int = 0
    idempotency_keys: int = 0

    @property
    def total(self) -> int:
        return (
            self.events
            + self.deliveries
            + self.signatures
            + self.challenges
            + self.idempotency_keys
        )


class PruneTx(Pruning, IdempotencyKeys, Protocol):
    """What a batch-until-short round touches: the pruning deletes and the idempotency keys'."""


class Retention:
    """``Gateway.retention``: prune rounds over the gateway's storage, with its settings and
    clock (a test's clock moves what counts as old)."""

    def __init__(self, storage: Storage, settings: Settings, clock: Callable[[], float]) -> None:
        self._storage = storage
        self._settings = settings
        self._clock = clock

    def prune(self, halt: threading.Event | None = None) -> PruneReport:
        """One round over every kind, each until nothing more is due; ``halt`` (the worker
        stopping) ends the round after the batch in flight."""
        settings = self._settings
        now = self._clock()
        stop = halt or threading.Event()
        batch = settings.retention_batch
        events = deliveries = 0
        if settings.retention_events:
            created_before = int(now) - settings.retention_events
            cap = settings.event_retention

            def events_batch(tx: Pruning, after: int) -> PruneBatch:
                return tx.prune_events(created_before, cap, after, batch)

            events = self._resumable(events_batch, stop)
        if settings.retention_deliveries:
            settled_before = round(now * 1000) - settings.retention_deliveries * 1000

            def deliveries_batch(tx: Pruning, after: int) -> PruneBatch:
                return tx.prune_deliveries(settled_before, after, batch)

            deliveries = self._resumable(deliveries_batch, stop)
        expired_before = int(now) - settings.retention_expired_grace
        signatures = self._until_short(lambda tx: tx.prune_signatures(expired_before, batch), stop)
        challenges = self._until_short(lambda tx: tx.prune_challenges(expired_before, batch), stop)
        # A key is replayed for KEY_TTL; past that it is as good as absent, so it can go.
        keys_before = int(now) - KEY_TTL
        keys = self._until_short(lambda tx: tx.prune_idempotency_keys(keys_before, batch), stop)
        return PruneReport(events, deliveries, signatures, challenges, keys)

    def _resumable(self, step: Callable[[Pruning, int], PruneBatch], stop: threading.Event) -> int:
        deleted, after = 0, 0
        while not stop.is_set():
            with self._storage.transaction() as tx:
                done = step(tx, after)
            deleted += done.deleted
            if done.resume_after is None:
                break
            after = done.resume_after
        return deleted

    def _until_short(self, step: Callable[[PruneTx], int], stop: threading.Event) -> int:
        deleted = 0
        while not stop.is_set():
            with self._storage.transaction() as tx:
                count = step(tx)
            deleted += count
            if count < self._settings.retention_batch:
                break
        return deleted
