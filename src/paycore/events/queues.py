"""``Gateway.events``: poll queues and legacy poll tokens over the gateway's storage.

A queue is a cursor over the owner's outbox, not a copy (docs/architecture.md §Events), so
opening one costs a row and draining it is one read; this object holds the storage so the
handlers that poll need not.
"""

from __future__ import annotations

import secrets

from ..config import Settings
from ..domain.changes import STATUS_CHANGES
from ..domain.records import OutboxEvent, OutboxRead, PollToken
from ..storage import OutboxSignal, SignalledStorage, Storage


def consumer_of_token(token: str) -> str:
    """The poll queue of a legacy poll token."""
    return f"token:{token}"


class EventQueues:
    def __init__(
        self, storage: Storage, settings: Settings, signals: SignalledStorage | None = None
    ) -> None:
        self._storage = storage
        self._settings = settings
        self._signals = signals

    # -- readers that keep their own position (the WebSocket feed, a resuming socket) -----
    @property
    def can_signal(self) -> bool:
        """Whether the store can say when another process committed events
        (``storage.OutboxSignal``): PostgreSQL and SQLite files can, ``memory://`` cannot."""
        return self._signals is not None

    def outbox_signal(self, name: str) -> OutboxSignal | None:
        """A new wake-up on its own connection (``name`` labels it for operators), or None."""
        return None if self._signals is None else self._signals.outbox_signal(name)

    def outbox_since(self, after: int | None, cap: int, owner: str | None = None) -> OutboxRead:
        """``StorageTx.outbox_since`` in a transaction of its own."""
        with self._storage.transaction() as tx:
            return tx.outbox_since(after, cap, owner)

    def open(self, consumer: str, owner: str) -> None:
        """Give ``consumer`` (a session key's or poll token's queue name) a queue of
        ``owner``'s events, starting after the newest one; an existing queue is kept."""
        with self._storage.transaction() as tx:
            tx.open_queue(consumer, owner)

    def close(self, consumer: str) -> None:
        """Drop ``consumer``'s queue (its key was deregistered); the events stay in the outbox."""
        with self._storage.transaction() as tx:
            tx.close_queue(consumer)

    def drain(self, consumer: str) -> list[OutboxEvent]:
        """Take the events queued for ``consumer``, oldest first, at most the newest
        ``event_retention``; each is returned once, whoever drains concurrently.

        Only status changes (``STATUS_CHANGES``) are returned: a poll payload is the plain
        Invoice record with no type (docs/interface.md §Events), so an overpayment's second ``paid``
        record would read as a second payment. The queue still moves past the other types,
        so its position, its cap and the outbox's pruning stay those of the whole outbox."""
        with self._storage.transaction() as tx:
            drained = tx.drain_queue(consumer, self._settings.event_retention)
        return [event for event in drained if event.type in STATUS_CHANGES]

    def register_token(self, owner: str, now: int) -> PollToken:
        """A new legacy poll token for ``owner`` with its queue, in one transaction."""
        token = PollToken(secrets.token_hex(24), owner, now)
        with self._storage.transaction() as tx:
            tx.put_poll_token(token)
            tx.open_queue(consumer_of_token(token.token), owner)
        return token

    def token(self, text: str) -> PollToken | None:
        """The stored poll token ``text``, or None."""
        with self._storage.transaction() as tx:
            return tx.get_poll_token(text)
