"""The webhook delivery log and redelivery, for a merchant dashboard or an operator script.

``list_deliveries(gateway, owner)`` pages through an owner's deliveries, newest first, each
with every attempt (time, URL, HTTP status or error text, latency in ms);
``redeliver(gateway, owner, delivery_id)`` queues one again. A redelivery keeps its
``webhook-id``, as Standard Webhooks asks of a resend, so a receiver that already processed
it can recognise it; it starts a fresh retry schedule and is due at once. Like any pending
delivery it goes before later events of the same invoice.

These are functions over a Gateway rather than Gateway methods so that webhook bookkeeping
stays in one module; the HTTP layer can expose them without the Gateway growing.
"""

from __future__ import annotations

from ..errors import InvalidInput, NotFound
from ..gateway import Gateway
from .records import Delivery, DeliveryStatus

DELIVERY_PAGE_MAX = 50


class DeliveryNotFound(NotFound):
    def __init__(self, delivery_id: int) -> None:
        self.delivery_id = delivery_id
        super().__init__(f"delivery {delivery_id} not found")


def list_deliveries(
    gateway: Gateway,
    owner: str,
    *,
    status: DeliveryStatus | str | None = None,
    offset: int | None = None,
    limit: int | None = None,
) -> tuple[list[Delivery], int, int, int]:
    """(items newest first, total, offset, limit); ``limit`` is clamped to 50."""
    off = 0 if offset is None else offset
    lim = DELIVERY_PAGE_MAX if limit is None else limit
    if off < 0:
        raise InvalidInput("offset", "must not be negative")
    if lim < 1:
        raise InvalidInput("limit", "must be at least 1")
    lim = min(lim, DELIVERY_PAGE_MAX)
    wanted = _status(status)
    with gateway.storage.transaction() as tx:
        items, total = tx.list_deliveries(owner, status=wanted, offset=off, limit=lim)
    return items, total, off, lim


def redeliver(gateway: Gateway, owner: str, delivery_id: int) -> Delivery:
    """Queue ``owner``'s delivery again, due now; another owner's id is "not found"."""
    with gateway.storage.transaction() as tx:
        delivery = tx.redeliver(delivery_id, owner, round(gateway.clock() * 1000))
    if delivery is None:
        raise DeliveryNotFound(delivery_id)
    return delivery


def _status(status: DeliveryStatus | str | None) -> DeliveryStatus | None:
    if status is None or isinstance(status, DeliveryStatus):
        return status
    try:
        return DeliveryStatus(status)
    except ValueError:
        names = ", ".join(s.value for s in DeliveryStatus)
        raise InvalidInput("status", f"must be one of {names}") from None
