"""The memory store's webhook configuration, endpoints and deliveries
(``paycore.storage.protocols.webhooks``), mixed into its transaction class. A delivery's
lease is part of its row (``memory_rows._DeliveryRow``).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import attrs

from ..domain.records import WebhookConfig
from ..webhooks.records import (
    DEFAULT_ENDPOINT,
    ClaimedDelivery,
    Delivery,
    DeliveryAttempt,
    DeliveryStatus,
    NewDelivery,
    Settlement,
    WebhookEndpoint,
)
from .memory_rows import MemoryTxBase, _DeliveryRow, _page


class MemoryWebhooks(MemoryTxBase):
    """The webhook methods over the store's ``webhooks``, ``endpoints``, ``deliveries`` and
    ``attempts`` tables."""

    def get_webhook(self, owner: str) -> WebhookConfig | None:
        return self._t.webhooks.get(owner)

    def put_webhook(self, config: WebhookConfig) -> None:
        self._t.webhooks[config.owner] = config

    def delete_webhook(self, owner: str) -> bool:
        return self._t.webhooks.pop(owner, None) is not None

    def put_webhook_endpoint(self, endpoint: WebhookEndpoint) -> None:
        self._t.endpoints[(endpoint.owner, endpoint.id)] = endpoint

    def get_webhook_endpoint(self, owner: str, endpoint_id: str) -> WebhookEndpoint | None:
        return self._t.endpoints.get((owner, endpoint_id))

    def webhook_endpoints(self, owners: Sequence[str]) -> list[WebhookEndpoint]:
        wanted = set(owners)
        found = [e for (owner, _id), e in self._t.endpoints.items() if owner in wanted]
        return sorted(found, key=lambda e: (e.owner, e.id))

    def delete_webhook_endpoint(self, owner: str, endpoint_id: str) -> bool:
        return self._t.endpoints.pop((owner, endpoint_id), None) is not None

    def enqueue_delivery(
        self, event_id: int, owner: str, guid: str, webhook_id: str, body: str, now: int
    ) -> int | None:
        config = self._t.webhooks.get(owner)
        if config is None or not config.url:
            return None
        return self._queue_delivery(NewDelivery(event_id, owner, guid, webhook_id, body, now))

    def _queue_delivery(self, new: NewDelivery) -> int:
        now = new.now
        self._t.last_delivery_id += 1
        delivery = Delivery(
            id=self._t.last_delivery_id,
            webhook_id=new.webhook_id,
            event_id=new.event_id,
            owner=new.owner,
            guid=new.guid,
            body=new.body,
            status=DeliveryStatus.PENDING,
            attempts=0,
            created_at=now,
            next_attempt_at=now,
            retry_from=now,
            endpoint_id=new.endpoint_id,
        )
        self._t.deliveries[delivery.id] = _DeliveryRow(delivery)
        return delivery.id

    def enqueue_deliveries(self, deliveries: Sequence[NewDelivery]) -> int:
        queued = [
            self._queue_delivery(d)
            if d.endpoint_id is not None
            else self.enqueue_delivery(d.event_id, d.owner, d.guid, d.webhook_id, d.body, d.now)
            for d in deliveries
        ]
        return sum(1 for delivery_id in queued if delivery_id is not None)

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
        """The lock held for the whole transaction is what makes the claim exclusive."""
        skipped_owners = set(skip_owners)
        skipped_urls = set(skip_urls)
        earliest_pending: dict[tuple[str, str | None], int] = {}
        for row in self._t.deliveries.values():  # ascending id, so the first seen is lowest
            if row.delivery.status is DeliveryStatus.PENDING:
                key = (row.delivery.guid, row.delivery.endpoint_id)
                earliest_pending.setdefault(key, row.delivery.id)
        due = [
            row
            for row in self._t.deliveries.values()
            if row.delivery.status is DeliveryStatus.PENDING
            and earliest_pending[(row.delivery.guid, row.delivery.endpoint_id)] == row.delivery.id
            and (row.delivery.next_attempt_at or 0) <= now
            and (row.lease_until is None or row.lease_until <= now)
            and row.delivery.owner not in skipped_owners
            and not (skipped_urls and self._target_url(row.delivery) in skipped_urls)
        ]
        due.sort(key=lambda row: (row.delivery.next_attempt_at or 0, row.delivery.id))
        claimed: list[ClaimedDelivery] = []
        for row in due[:limit]:
            delivery = attrs.evolve(row.delivery, attempts=row.delivery.attempts + 1)
            self._t.deliveries[delivery.id] = _DeliveryRow(delivery, token, now + lease_ms)
            config = self._target(delivery)
            claimed.append(
                ClaimedDelivery(
                    id=delivery.id,
                    webhook_id=delivery.webhook_id,
                    owner=delivery.owner,
                    guid=delivery.guid,
                    body=delivery.body,
                    attempts=delivery.attempts,
                    retry_from=delivery.retry_from,
                    lease_token=token,
                    lease_until=now + lease_ms,
                    url=config.url if config else "",
                    secret=config.secret if config else "",
                    endpoint_id=delivery.endpoint_id,
                )
            )
        return claimed

    def _target_url(self, delivery: Delivery) -> str:
        target = self._target(delivery)
        return target.url if target is not None else ""

    def _target(self, delivery: Delivery) -> WebhookConfig | WebhookEndpoint | None:
        """Where ``delivery`` goes now: its endpoint while enabled, else the owner's URL."""
        if delivery.endpoint_id is None:
            return self._t.webhooks.get(delivery.owner)
        endpoint = self._t.endpoints.get((delivery.owner, delivery.endpoint_id))
        return endpoint if endpoint is not None and endpoint.enabled else None

    def finish_delivery(
        self, delivery_id: int, token: str, attempt: DeliveryAttempt, settlement: Settlement
    ) -> bool:
        self._t.attempts.append(attempt)
        row = self._t.deliveries.get(delivery_id)
        if row is None or row.lease_token != token:
            return False
        next_at = settlement.next_at if settlement.status is DeliveryStatus.PENDING else None
        delivery = attrs.evolve(row.delivery, status=settlement.status, next_attempt_at=next_at)
        self._t.deliveries[delivery_id] = _DeliveryRow(delivery)
        return True

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
        matches = [
            row.delivery
            for row in reversed(self._t.deliveries.values())
            if row.delivery.owner == owner
            and (status is None or row.delivery.status is status)
            and (guid is None or row.delivery.guid == guid)
            and (
                endpoint_id is None or (row.delivery.endpoint_id or DEFAULT_ENDPOINT) == endpoint_id
            )
        ]
        page = _page(matches, offset, limit)
        wanted = {d.id for d in page}
        logs: dict[int, list[DeliveryAttempt]] = {}
        for attempt in self._t.attempts:
            if attempt.delivery_id in wanted:
                logs.setdefault(attempt.delivery_id, []).append(attempt)
        return [attrs.evolve(d, log=tuple(logs.get(d.id, ()))) for d in page], len(matches)

    def redeliver(self, delivery_id: int, owner: str, now: int) -> Delivery | None:
        row = self._t.deliveries.get(delivery_id)
        if row is None or row.delivery.owner != owner:
            return None
        delivery = attrs.evolve(
            row.delivery,
            status=DeliveryStatus.PENDING,
            attempts=0,
            next_attempt_at=now,
            retry_from=now,
        )
        self._t.deliveries[delivery_id] = attrs.evolve(row, delivery=delivery)
        return delivery

    def redeliver_failed(self, owner: str, since: int, now: int) -> int:
        failed = [
            row.delivery.id
            for row in self._t.deliveries.values()
            if row.delivery.owner == owner
            and row.delivery.status is DeliveryStatus.FAILED
            and row.delivery.created_at >= since
        ]
        for delivery_id in failed:
            self.redeliver(delivery_id, owner, now)
        return len(failed)
