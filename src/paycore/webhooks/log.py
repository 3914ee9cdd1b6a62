"""The webhook delivery log and redelivery, for a merchant dashboard or an operator script.

``list_deliveries(gateway, owner)`` pages through an owner's deliveries, newest first, each
with every attempt (time, URL, HTTP status or error text, latency in ms), optionally of one
state or one invoice; ``redeliver(gateway, owner, delivery_id)`` queues one again, and
``redeliver_failed(gateway, owner, since)`` every failed one created since a time. Over HTTP
they are GET /webhook/deliveries, POST /webhook/redeliver and POST
/webhook/redeliver-failed (docs/interface.md). A redelivery keeps its
``webhook-id``, as Standard Webhooks asks of a resend, so a receiver that already processed
it can recognise it; it starts a fresh retry schedule and is due at once. Like any pending
delivery it goes before later events of the same invoice.

They are kept as functions for callers that know them, over anything that holds the
webhook service (a ``Gateway`` does); the work is done by ``Gateway.webhooks``
(``paycore.webhooks.service``), which holds the storage.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from ..errors import InvalidInput, NotFound
from .records import Delivery, DeliveryStatus

if TYPE_CHECKING:  # the service imports this module
    from .service import Webhooks

DELIVERY_PAGE_MAX = 50


class DeliveryNotFound(NotFound):
    def __init__(self, delivery_id: int) -> None:
        self.delivery_id = delivery_id
        super().__init__(f"delivery {delivery_id} not found")


class HoldsWebhooks(Protocol):
    """What the functions below are handed: anything that holds the webhook service."""

    @property
    def webhooks(self) -> Webhooks: ...


def list_deliveries(
    gateway: HoldsWebhooks,
    owner: str,
    *,
    status: DeliveryStatus | str | None = None,
    guid: str | None = None,
    offset: int | None = None,
    limit: int | None = None,
) -> tuple[list[Delivery], int, int, int]:
    """(items newest first, total, offset, limit); ``limit`` is clamped to 50."""
    return gateway.webhooks.deliveries(owner, status=status, guid=guid, offset=offset, limit=limit)


def redeliver(gateway: HoldsWebhooks, owner: str, delivery_id: int) -> Delivery:
    """Queue ``owner``'s delivery again, due now; another owner's id is "not found"."""
    return gateway.webhooks.redeliver(owner, delivery_id)


def redeliver_failed(gateway: HoldsWebhooks, owner: str, since: int) -> int:
    """Queue every failed delivery of ``owner`` created at or after ``since`` (unix
    seconds) again; returns how many."""
    return gateway.webhooks.redeliver_failed(owner, since)


def parse_status(status: DeliveryStatus | str | None) -> DeliveryStatus | None:
    if status is None or isinstance(status, DeliveryStatus):
        return status
    try:
        return DeliveryStatus(status)
    except ValueError:
        names = ", ".join(s.value for s in DeliveryStatus)
        raise InvalidInput("status", f"must be one of {names}") from None
