"""Records of webhook delivery: the queue entry, one leased claim of it, and the attempt log.

They live apart from ``domain.records`` because they are the dispatcher's bookkeeping, not resources
of the interface; storage implementations and the dispatcher share them. Times are unix
milliseconds: retry schedules in tests run at sub-second steps, and the log reports latency
in milliseconds anyway.
"""

from __future__ import annotations

from enum import StrEnum

import attrs

from ..domain.records import Json

#: The id the owner's ``/webhook/set`` URL goes by among its endpoints (``endpointId``).
DEFAULT_ENDPOINT = "default"


@attrs.frozen
class WebhookEndpoint:
    """One of an owner's webhook endpoints besides the ``/webhook/set`` URL: its own URL,
    its own signing secret and the event types it is sent (``paycore.domain.changes``).
    A disabled endpoint is sent nothing; its pending deliveries fail at their next try."""

    id: str  # "ep_" and 24 hex digits
    owner: str
    url: str
    secret: str = attrs.field(repr=False)
    types: frozenset[str]
    enabled: bool
    created_at: int  # unix seconds

    def wants(self, type: str) -> bool:
        return self.enabled and type in self.types

    def to_wire(self) -> Json:
        return {
            "id": self.id,
            "ownerAddress": self.owner,
            "url": self.url,
            "secret": self.secret,
            "types": sorted(self.types),
            "enabled": self.enabled,
            "createdAt": self.created_at,
        }


class DeliveryStatus(StrEnum):
    PENDING = "pending"  # waiting for its first attempt or its next retry
    DELIVERED = "delivered"  # a 2xx answer was received
    FAILED = "failed"  # retries exhausted (or the webhook was cleared); ``redeliver`` revives it


@attrs.frozen
class DeliveryAttempt:
    """One POST (or one refusal to POST), as the delivery log shows it."""

    delivery_id: int
    attempted_at: int  # ms
    url: str
    status_code: int | None  # the HTTP status, when an answer came back
    error: str | None  # why it failed without (or despite) an answer; None on success
    latency_ms: int

    @property
    def ok(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300

    def to_wire(self) -> Json:
        return {
            "attemptedAt": self.attempted_at,
            "url": self.url,
            "statusCode": self.status_code,
            "error": self.error,
            "latencyMs": self.latency_ms,
        }


@attrs.frozen
class NewDelivery:
    """A delivery to queue (``StorageTx.enqueue_deliveries``): the arguments of one
    ``enqueue_delivery``, so a batch of invoice changes queues its deliveries at once."""

    event_id: int
    owner: str
    guid: str
    webhook_id: str
    body: str
    now: int  # ms: created and first due
    #: The endpoint it goes to (``WebhookEndpoint.id``); None: the owner's ``/webhook/set`` URL.
    endpoint_id: str | None = None


@attrs.frozen
class Delivery:
    """One event queued for one owner's webhook; ``webhook_id`` is the same on every retry
    and on a redelivery, so a receiver can deduplicate on it."""

    id: int
    webhook_id: str
    event_id: int
    owner: str
    guid: str
    body: str  # the exact JSON text that is signed and sent
    status: DeliveryStatus
    attempts: int  # attempts started, including one whose dispatcher died mid-flight
    created_at: int  # ms
    next_attempt_at: int | None  # ms; None once delivered or failed
    retry_from: int  # ms: when the current retry schedule began (enqueue or redeliver)
    log: tuple[DeliveryAttempt, ...] = ()  # oldest first; filled by ``list_deliveries``
    endpoint_id: str | None = None  # None: the owner's ``/webhook/set`` URL

    def to_wire(self) -> Json:
        return {
            "id": self.id,
            "webhookId": self.webhook_id,
            "endpointId": self.endpoint_id or DEFAULT_ENDPOINT,
            "guid": self.guid,
            "status": self.status.value,
            "attemptCount": self.attempts,
            "createdAt": self.created_at,
            "nextAttemptAt": self.next_attempt_at,
            "attempts": [a.to_wire() for a in self.log],
        }


@attrs.frozen
class ClaimedDelivery:
    """A delivery leased to one dispatcher until ``lease_until``, with the owner's current
    webhook target read in the same transaction (``url``/``secret`` are empty when the owner
    has cleared the webhook since the event was queued)."""

    id: int
    webhook_id: str
    owner: str
    guid: str
    body: str
    attempts: int  # including this one
    retry_from: int  # ms: the retry schedule's start, which its give-up horizon counts from
    lease_token: str
    lease_until: int  # ms
    url: str
    secret: str = attrs.field(repr=False)  # the signing key: never in a log or a traceback
    endpoint_id: str | None = None  # None: the owner's ``/webhook/set`` URL


@attrs.frozen
class Settlement:
    """What a finished attempt does to its delivery: delivered, retried at ``next_at``, or
    failed for good."""

    status: DeliveryStatus
    next_at: int | None = None  # ms, for a retry
