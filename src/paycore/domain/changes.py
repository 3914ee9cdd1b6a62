"""The names of invoice events: what a change did, not only where it left the invoice.

A host that fulfils an order on "paid" must not fulfil it again when an overpayment or a
late payment arrives, although each of those sends another Invoice record with status
``paid`` (or ``expired``). So every outbox event carries one of these names, chosen where
the change is made: by the state machine (``paycore.domain.machine``) for payments,
deadlines and reorgs, by the gateway for refunds. Webhooks carry it as ``type``; host
signals (``paycore.events.signals``) are keyed by it; the poll and WebSocket payload stays
the plain Invoice record of docs/interface.md.

The interface's events are status changes only, and real clients act on any record with status
``paid`` or ``expired``; so every channel carries :data:`STATUS_CHANGES` unless its
subscriber names other types (a webhook endpoint's list, a socket's register frame, a
handler's ``on(...)`` types). The outbox keeps every type; the channels filter.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from ..errors import InvalidInput
from .subscription_machine import SubscriptionEvent


class EventType(StrEnum):
    CREATED = "invoice.created"
    PARTIALLY_PAID = "invoice.partially_paid"
    #: A counted deposit on a partially paid invoice that left it partially paid.
    FURTHER_PAYMENT = "invoice.further_payment"
    PAID = "invoice.paid"
    #: A counted deposit on an invoice that was already paid.
    OVERPAID = "invoice.overpaid"
    EXPIRED = "invoice.expired"
    #: A counted deposit on an invoice that had expired.
    LATE_PAYMENT = "invoice.late_payment"
    #: A reorg took a counted deposit back; the record's status says where that left it.
    PAYMENT_REVERSED = "invoice.payment_reversed"
    REFUND_PENDING = "invoice.refund_pending"
    REFUND_CANCELLED = "invoice.refund_cancelled"
    REFUNDED = "invoice.refunded"
    #: A batch payout's row was paid (its call succeeded) or not (it reverted): the payload
    #: is the payout record (docs/payouts.md), not an Invoice; delivered to those who ask.
    PAYOUT_CONFIRMED = "payout.confirmed"
    PAYOUT_FAILED = "payout.failed"
    #: Anything else (and events stored before types existed).
    UPDATED = "invoice.updated"


#: Every type a subscriber may name: the invoices' and the subscriptions' (``subscription.*``,
#: ``paycore.domain.subscription_machine``), which no channel carries unless named.
ALL_TYPES: frozenset[str] = frozenset(t.value for t in EventType) | frozenset(
    t.value for t in SubscriptionEvent
)
#: The type of an event stored without one.
UPDATED: str = EventType.UPDATED.value
#: What every channel carries by default: one event per status change (docs/interface.md
#: §Events: init -> partialPaid -> paid, or expired), and ``invoice.updated``, the type of
#: events stored before types existed, which went out on every channel then.
STATUS_CHANGES: frozenset[str] = frozenset(
    t.value
    for t in (EventType.PARTIALLY_PAID, EventType.PAID, EventType.EXPIRED, EventType.UPDATED)
)


def parse_types(value: object, field: str) -> frozenset[str]:
    """A subscriber's list of event types (a JSON array of known type names), checked:
    an empty list, an unknown name or a non-string is refused with ``InvalidInput``."""
    if not isinstance(value, list) or not value:
        raise InvalidInput(field, "must be a non-empty array of event types")
    if len(value) > len(ALL_TYPES):
        raise InvalidInput(field, f"at most {len(ALL_TYPES)} event types")
    for item in value:
        if not isinstance(item, str) or item not in ALL_TYPES:
            shown = item if isinstance(item, str) and len(item) <= 64 else "a non-type value"
            raise InvalidInput(field, f"unknown event type {shown!r}")
    return frozenset(value)


class EventPayload(dict[str, Any]):
    """An event's Invoice wire record as the gateway hands it to notifiers after commit: a
    plain dict (what the ``Notifier`` contract promises), which also says its event type,
    so the WebSocket hub can filter pushes by type without a second argument."""

    def __init__(self, record: dict[str, Any], type: str) -> None:
        super().__init__(record)
        self.type = type
