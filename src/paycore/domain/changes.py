"""The names of invoice events: what a change did, not only where it left the invoice.

A host that fulfils an order on "paid" must not fulfil it again when an overpayment or a
late payment arrives, although each of those sends another Invoice record with status
``paid`` (or ``expired``). So every outbox event carries one of these names, chosen where
the change is made: by the state machine (``paycore.domain.machine``) for payments,
deadlines and reorgs, by the gateway for refunds. Webhooks carry it as ``type``; host
signals (``paycore.events.signals``) are keyed by it; the poll and WebSocket payload stays
the plain Invoice record of docs/interface.md.
"""

from __future__ import annotations

from enum import StrEnum


class EventType(StrEnum):
    CREATED = "invoice.created"
    PARTIALLY_PAID = "invoice.partially_paid"
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
    #: Anything else (and events stored before types existed).
    UPDATED = "invoice.updated"


ALL_TYPES: frozenset[str] = frozenset(t.value for t in EventType)
#: The type of an event stored without one.
UPDATED: str = EventType.UPDATED.value
