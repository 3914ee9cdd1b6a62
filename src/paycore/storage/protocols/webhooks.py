"""The webhooks' part of the storage contract: an owner's webhook configuration, its extra
endpoints, and the deliveries queued for them.

A delivery is one outbox event queued for the owner's webhook. ``enqueue_delivery`` runs
inside the invoice change's own transaction, so the change, its event and its delivery commit
together or not at all. Dispatchers then take work with ``claim_deliveries`` (a lease, in its
own short transaction), POST without any transaction open, and report with
``finish_delivery``. A dispatcher that dies holding a lease simply lets it lapse: the delivery
is claimed again, with the same webhook id (at-least-once). What storage owes for it:

- ``enqueue_delivery`` decides "queue it only if the owner has a URL" from what this
  transaction reads; delivery ids strictly increase.
- ``claim_deliveries`` hands a due delivery to one claimant at a time (no delivery is ever
  under two live leases), and only the earliest pending delivery of an invoice per endpoint,
  so an invoice's events arrive in order.
- ``finish_delivery`` settles only while the caller's lease token still holds the delivery.
- ``redeliver_failed`` re-queues all of an owner's failed deliveries or none.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Protocol

from ...domain.records import WebhookConfig
from ...webhooks.records import (
    ClaimedDelivery,
    Delivery,
    DeliveryAttempt,
    DeliveryStatus,
    NewDelivery,
    Settlement,
    WebhookEndpoint,
)


class WebhookConfigs(Protocol):
    """``StorageTx``'s ``/webhook/set`` configuration: one URL and secret per owner."""

    def get_webhook(self, owner: str) -> WebhookConfig | None:
        """``owner``'s webhook URL and signing secret, or ``None`` if never set."""

    def put_webhook(self, config: WebhookConfig) -> None:
        """Insert, or replace the configuration of the same owner."""

    def delete_webhook(self, owner: str) -> bool:
        """Remove ``owner``'s webhook; ``False`` if there was none."""


class WebhookEndpoints(Protocol):
    """``StorageTx``'s webhook endpoints (revision 0017): an owner's endpoints besides the
    ``/webhook/set`` URL, each with its own URL, secret and event types
    (``paycore.webhooks.endpoints``)."""

    def put_webhook_endpoint(self, endpoint: WebhookEndpoint) -> None:
        """Insert, or replace every field of the endpoint with the same id and owner."""

    def get_webhook_endpoint(self, owner: str, endpoint_id: str) -> WebhookEndpoint | None:
        """``owner``'s endpoint ``endpoint_id``, or ``None`` (another owner's is ``None``)."""

    def webhook_endpoints(self, owners: Sequence[str]) -> list[WebhookEndpoint]:
        """Every endpoint of ``owners``, enabled or not, by owner then creation (id) order."""

    def delete_webhook_endpoint(self, owner: str, endpoint_id: str) -> bool:
        """Remove ``owner``'s endpoint; ``False`` if there was none. Its deliveries stay in
        the log; pending ones fail at their next try (no URL to deliver to)."""


class WebhookDeliveries(Protocol):
    """``StorageTx``'s webhook deliveries: queue, lease, settle, list and redeliver."""

    def enqueue_delivery(
        self, event_id: int, owner: str, guid: str, webhook_id: str, body: str, now: int
    ) -> int | None:
        """Queue ``body`` (event ``event_id``) for ``owner``'s webhook, due at ``now`` (ms),
        if and only if ``owner`` has a non-empty webhook URL as read in this transaction.
        Returns the delivery id (strictly increasing), or ``None`` when nothing was queued."""

    def enqueue_deliveries(self, deliveries: Sequence[NewDelivery]) -> int:
        """``enqueue_delivery`` for each (the same rule: only for an owner with a non-empty
        webhook URL as read in this transaction), ids increasing in the order given;
        returns how many were queued. A delivery with an ``endpoint_id`` is queued for that
        endpoint as it is (its caller read the endpoint in this transaction)."""

    def claim_deliveries(
        self,
        now: int,
        lease_ms: int,
        token: str,
        limit: int,
        *,
        skip_owners: Collection[str] = (),
        skip_urls: Collection[str] = (),
    ) -> list[ClaimedDelivery]:
        """Lease up to ``limit`` deliveries that are pending, due (``next_attempt_at <= now``),
        not under a live lease, and the lowest-id pending delivery of their invoice -- so a
        later event of an invoice waits while an earlier one awaits its retry. Each claimed
        delivery gets ``lease_until = now + lease_ms``, lease ``token`` and one more attempt
        counted. Atomic against concurrent claims from any thread or process: no delivery is
        ever under two live leases (PostgreSQL: ``FOR UPDATE SKIP LOCKED``). Oldest due
        first. The owner's current webhook URL and secret come back with each claim: of its
        endpoint when it has one (empty when the endpoint is gone or disabled). "Of their
        invoice" is per endpoint: one endpoint's retries never hold up another's.
        Deliveries of an owner in ``skip_owners``, or whose target URL (the endpoint's, else
        the owner's webhook URL) is in ``skip_urls``, are passed over as if they were not due
        (the dispatcher's caps on deliveries in flight per owner and per URL,
        ``paycore.webhooks.fairness``): the ones after them are claimed instead, so a capped
        owner holds back no one else."""

    def finish_delivery(
        self, delivery_id: int, token: str, attempt: DeliveryAttempt, settlement: Settlement
    ) -> bool:
        """Append ``attempt`` to the log, and settle the delivery as ``settlement`` says and
        release the lease -- but only while ``token`` still holds it: a dispatcher whose lease
        lapsed and was re-claimed by another must not overwrite the newer claim's outcome.
        Returns whether the delivery was settled (the attempt is logged either way)."""

    def list_deliveries(
        self,
        owner: str,
        *,
        status: DeliveryStatus | None = None,
        guid: str | None = None,
        offset: int = 0,
        limit: int = 50,
        endpoint_id: str | None = None,
    ) -> tuple[list[Delivery], int]:
        """A page of ``owner``'s deliveries (of invoice ``guid`` only, when given; of one
        endpoint only when ``endpoint_id`` is given, ``DEFAULT_ENDPOINT`` naming the
        ``/webhook/set`` URL's), newest first, each with its attempt log (oldest attempt
        first), and the match count."""

    def redeliver(self, delivery_id: int, owner: str, now: int) -> Delivery | None:
        """Make ``owner``'s delivery pending again, due at ``now``, with its attempt count
        reset (a new retry schedule) and its webhook id unchanged; a live lease is left to
        finish. ``None`` if there is no such delivery of that owner."""

    def redeliver_failed(self, owner: str, since: int, now: int) -> int:
        """``redeliver`` every failed delivery of ``owner`` created at or after ``since``
        (ms), in one statement: all of them or none; returns how many. Pending and
        delivered ones are left as they are."""
