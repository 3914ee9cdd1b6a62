"""The webhook configuration's and deliveries' statements
(``paycore.storage.protocols.webhooks``), mixed into ``SqlTx``; the endpoints' are
``endpoints.EndpointStatements``.

- ``enqueue_delivery``: one ``INSERT .. SELECT`` from the owner's webhook row, so "queue it
  only if a URL is set" is decided by the same statement that queues.
- ``claim_deliveries``: ``SELECT .. FOR UPDATE SKIP LOCKED`` of due, unleased rows, then an
  ``UPDATE`` that writes the lease, in one transaction: a concurrent claimant skips the rows
  being claimed, and once committed the lease itself keeps them out of its ``WHERE``.
  ``finish_delivery`` settles with ``UPDATE .. WHERE lease_token = :token``.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

import attrs
from sqlalchemy import BigInteger, ColumnElement, Text, and_, insert, literal, or_, select, update

from paycore.domain.records import WebhookConfig
from paycore.webhooks.records import (
    DEFAULT_ENDPOINT,
    ClaimedDelivery,
    Delivery,
    DeliveryAttempt,
    DeliveryStatus,
    NewDelivery,
    Settlement,
    WebhookEndpoint,
)

from .rows import attempt_from_row, attempt_row, claimed_from_row, delivery_from_row, plain_row
from .statements import _PENDING, SqlTxBase
from .tables import webhook_attempts, webhook_deliveries, webhook_endpoints, webhooks


class WebhookStatements(SqlTxBase):
    """The webhook configuration and delivery methods of ``StorageTx``, on the
    transaction's connection."""

    if TYPE_CHECKING:  # a claim reads the endpoints' URLs: endpoints.EndpointStatements

        def webhook_endpoints(self, owners: Sequence[str]) -> list[WebhookEndpoint]: ...

    def get_webhook(self, owner: str) -> WebhookConfig | None:
        row = self._one(select(webhooks).where(webhooks.c.owner == owner))
        return None if row is None else WebhookConfig(**row)

    def put_webhook(self, config: WebhookConfig) -> None:
        self._put(webhooks, plain_row(config))

    def delete_webhook(self, owner: str) -> bool:
        return self._delete(webhooks, webhooks.c.owner == owner)

    def enqueue_delivery(
        self, event_id: int, owner: str, guid: str, webhook_id: str, body: str, now: int
    ) -> int | None:
        d = webhook_deliveries
        values = {
            "webhook_id": literal(webhook_id, d.c.webhook_id.type),
            "event_id": literal(event_id, BigInteger()),
            "owner": webhooks.c.owner,
            "guid": literal(guid, d.c.guid.type),
            "body": literal(body, Text()),
            "status": literal(_PENDING, d.c.status.type),
            "attempts": literal(0, d.c.attempts.type),
            "created_at": literal(now, BigInteger()),
            "next_attempt_at": literal(now, BigInteger()),
            "retry_from": literal(now, BigInteger()),
        }
        source = select(*values.values()).where(webhooks.c.owner == owner, webhooks.c.url != "")
        stmt = insert(d).from_select(list(values), source).returning(d.c.id)
        delivery_id: int | None = self._c.execute(stmt).scalar_one_or_none()
        return delivery_id

    def enqueue_deliveries(self, deliveries: Sequence[NewDelivery]) -> int:
        if len(deliveries) < 2 and all(d.endpoint_id is None for d in deliveries):
            queued = [
                self.enqueue_delivery(d.event_id, d.owner, d.guid, d.webhook_id, d.body, d.now)
                for d in deliveries
            ]
            return sum(1 for delivery_id in queued if delivery_id is not None)
        owners = sorted({d.owner for d in deliveries if d.endpoint_id is None})
        with_url = (
            set(
                self._c.execute(
                    select(webhooks.c.owner).where(
                        webhooks.c.owner.in_(owners), webhooks.c.url != ""
                    )
                ).scalars()
            )
            if owners
            else set()
        )
        rows = [
            {
                "webhook_id": d.webhook_id,
                "event_id": d.event_id,
                "owner": d.owner,
                "guid": d.guid,
                "body": d.body,
                "status": _PENDING,
                "attempts": 0,
                "created_at": d.now,
                "next_attempt_at": d.now,
                "retry_from": d.now,
                "endpoint_id": d.endpoint_id,
            }
            for d in deliveries
            if d.endpoint_id is not None or d.owner in with_url
        ]
        if rows:  # one row at a time, in order: an invoice's deliveries keep their order
            self._c.execute(insert(webhook_deliveries), rows)
        return len(rows)

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
        d = webhook_deliveries
        skipped: list[ColumnElement[bool]] = []  # the capped owners and URLs, passed over
        if skip_owners:
            skipped.append(d.c.owner.not_in(sorted(skip_owners)))
        if skip_urls:
            # The target is the delivery's endpoint when it names one, else the owner's URL.
            urls = sorted(skip_urls)
            e = webhook_endpoints
            owner_at_url = select(webhooks.c.owner).where(webhooks.c.url.in_(urls))
            endpoint_at_url = select(e.c.id).where(e.c.owner == d.c.owner, e.c.url.in_(urls))
            skipped.append(
                or_(
                    and_(d.c.endpoint_id.is_(None), d.c.owner.not_in(owner_at_url)),
                    and_(d.c.endpoint_id.is_not(None), d.c.endpoint_id.not_in(endpoint_at_url)),
                )
            )
        earlier = d.alias("earlier")
        earlier_pending = (
            select(earlier.c.id)
            .where(
                earlier.c.guid == d.c.guid,
                earlier.c.status == _PENDING,
                earlier.c.id < d.c.id,
                earlier.c.endpoint_id.is_not_distinct_from(d.c.endpoint_id),
            )
            .exists()
        )
        due = (
            select(d.c.id)
            .where(
                d.c.status == _PENDING,
                d.c.next_attempt_at <= now,
                or_(d.c.lease_until.is_(None), d.c.lease_until <= now),
                ~earlier_pending,
                *skipped,
            )
            .order_by(d.c.next_attempt_at, d.c.id)
            .limit(limit)
            .with_for_update(skip_locked=True, of=d)
        )
        ids = list(self._c.execute(due).scalars())
        if not ids:
            return []
        leased = self._c.execute(
            update(d)
            .where(d.c.id.in_(ids))
            .values(attempts=d.c.attempts + 1, lease_token=token, lease_until=now + lease_ms)
            .returning(*d.c)
        )
        rows = sorted((r._mapping for r in leased), key=lambda r: ids.index(r["id"]))
        owners = {r["owner"] for r in rows}
        targets: dict[tuple[str, str | None], tuple[str, str]] = {
            (t["owner"], None): (t["url"], t["secret"])
            for t in self._all(select(webhooks).where(webhooks.c.owner.in_(owners)))
        }
        if any(r["endpoint_id"] is not None for r in rows):
            for endpoint in self.webhook_endpoints(sorted(owners)):
                if endpoint.enabled:
                    targets[(endpoint.owner, endpoint.id)] = (endpoint.url, endpoint.secret)
        return [
            claimed_from_row(r, *targets.get((r["owner"], r["endpoint_id"]), ("", "")))
            for r in rows
        ]

    def finish_delivery(
        self, delivery_id: int, token: str, attempt: DeliveryAttempt, settlement: Settlement
    ) -> bool:
        self._c.execute(webhook_attempts.insert().values(attempt_row(attempt)))
        d = webhook_deliveries
        pending = settlement.status is DeliveryStatus.PENDING
        result = self._c.execute(
            update(d)
            .where(d.c.id == delivery_id, d.c.lease_token == token)
            .values(
                status=settlement.status.value,
                next_attempt_at=settlement.next_at if pending else None,
                lease_token=None,
                lease_until=None,
            )
        )
        return result.rowcount == 1

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
        d = webhook_deliveries
        where = [d.c.owner == owner]
        if status is not None:
            where.append(d.c.status == status.value)
        if guid is not None:
            where.append(d.c.guid == guid)
        if endpoint_id == DEFAULT_ENDPOINT:
            where.append(d.c.endpoint_id.is_(None))
        elif endpoint_id is not None:
            where.append(d.c.endpoint_id == endpoint_id)
        page = [
            delivery_from_row(r)
            for r in self._all(
                select(d).where(*where).order_by(d.c.id.desc()).offset(offset).limit(limit)
            )
        ]
        logs: dict[int, list[DeliveryAttempt]] = {}
        if page:
            a = webhook_attempts
            query = select(a).where(a.c.delivery_id.in_([x.id for x in page])).order_by(a.c.id)
            for row in self._all(query):
                logs.setdefault(row["delivery_id"], []).append(attempt_from_row(row))
        items = [attrs.evolve(x, log=tuple(logs.get(x.id, ()))) for x in page]
        return items, self._count(d, *where)

    def redeliver(self, delivery_id: int, owner: str, now: int) -> Delivery | None:
        d = webhook_deliveries
        row = self._c.execute(
            update(d)
            .where(d.c.id == delivery_id, d.c.owner == owner)
            .values(status=_PENDING, attempts=0, next_attempt_at=now, retry_from=now)
            .returning(*d.c)
        ).first()
        return None if row is None else delivery_from_row(row._mapping)

    def redeliver_failed(self, owner: str, since: int, now: int) -> int:
        d = webhook_deliveries
        result = self._c.execute(
            update(d)
            .where(
                d.c.owner == owner,
                d.c.status == DeliveryStatus.FAILED.value,
                d.c.created_at >= since,
            )
            .values(status=_PENDING, attempts=0, next_attempt_at=now, retry_from=now)
        )
        return int(result.rowcount)
