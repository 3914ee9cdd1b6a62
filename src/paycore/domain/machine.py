"""The invoice lifecycle as one transition table, with no I/O (modelled on h11's ``_state``).

docs/interface.md §Invoice lifecycle gives the status moves and what happens to deposits that arrive
after an invoice is settled. Every function here takes an invoice and returns a new one (the
records are frozen), so an illegal move raises ``IllegalTransition`` and changes nothing.

Rules in one place:
- A counted deposit (its token is in ``acceptedTokens``) adds a Payment and its vsValue to
  ``paidAmount``. Tip-jar invoices (value 0) are paid by the first counted deposit.
- ``paidAmount >= value * (1 - tolerance)`` means paid; anything counted below that is
  partialPaid.
- Deposits after paid (overpayment) or after expiry (late payment) are recorded; the status
  stays. A deposit whose block time is past the deadline on a still-open invoice first expires
  the invoice, then is recorded late.
- A counted deposit whose block a reorg replaced is taken back out (the design promises
  that none that vanished is counted): its payment and vsValue leave the record, and
  the status is what the remaining payments make it -- paid if those made by the deadline
  still reach the value, partialPaid if some did, init if none did (the ``REORG_*`` moves),
  then expired if the deadline has passed by now. An expired invoice stays expired.
- Each change of the record yields exactly one snapshot to emit as an event, named on the
  record's ``change`` (``paycore.domain.changes``): a deposit on a paid invoice is
  ``invoice.overpaid``, on an expired one ``invoice.late_payment``, never ``invoice.paid``.
"""

from __future__ import annotations

from decimal import Decimal, localcontext
from enum import StrEnum

import attrs

from ..errors import IllegalTransition
from .changes import EventType
from .money import MONEY_CONTEXT
from .records import Invoice, Payment, Status


class Move(StrEnum):
    PARTIAL = "counted deposit, total below value"
    FULL = "counted deposit, total reaches value"
    SETTLED_DEPOSIT = "deposit on a settled invoice"
    DEADLINE = "deadline passed unpaid"
    REORG_FULL = "deposit reorged away, those left by the deadline still reach value"
    REORG_PARTIAL = "deposit reorged away, those left by the deadline fall short"
    REORG_NONE = "deposit reorged away, none left by the deadline"


#: (status, move) -> next status. Anything absent is illegal (an init invoice has no
#: payment a reorg could take back).
TRANSITIONS: dict[Status, dict[Move, Status]] = {
    Status.INIT: {
        Move.PARTIAL: Status.PARTIAL_PAID,
        Move.FULL: Status.PAID,
        Move.DEADLINE: Status.EXPIRED,
    },
    Status.PARTIAL_PAID: {
        Move.PARTIAL: Status.PARTIAL_PAID,
        Move.FULL: Status.PAID,
        Move.DEADLINE: Status.EXPIRED,
        # Only if the tolerance was raised since: the payments left are recomputed as is.
        Move.REORG_FULL: Status.PAID,
        Move.REORG_PARTIAL: Status.PARTIAL_PAID,
        Move.REORG_NONE: Status.INIT,
    },
    Status.PAID: {
        Move.SETTLED_DEPOSIT: Status.PAID,
        Move.REORG_FULL: Status.PAID,
        Move.REORG_PARTIAL: Status.PARTIAL_PAID,
        Move.REORG_NONE: Status.INIT,
    },
    Status.EXPIRED: {
        Move.SETTLED_DEPOSIT: Status.EXPIRED,
        Move.REORG_FULL: Status.EXPIRED,
        Move.REORG_PARTIAL: Status.EXPIRED,
        Move.REORG_NONE: Status.EXPIRED,
    },
}

#: The statuses an invoice can still leave by payment or deadline: the ones with a deadline
#: move. Storage sweeps and watches these, intake attributes to them; defined here once.
OPEN: frozenset[Status] = frozenset(s for s, moves in TRANSITIONS.items() if Move.DEADLINE in moves)
#: Paid or expired: what a deposit can no longer change the status of, except by a reorg.
SETTLED: frozenset[Status] = frozenset(Status) - OPEN


def next_status(status: Status, move: Move) -> Status:
    try:
        return TRANSITIONS[status][move]
    except KeyError:
        raise IllegalTransition(f"{move.value} is not allowed in status {status.value}") from None


def is_due(invoice: Invoice, now: int) -> bool:
    """Past its deadline and not settled: the next read or sweep expires it."""
    return due(invoice.status, invoice.deadline, now)


def due(status: Status, deadline: int, now: int) -> bool:
    """:func:`is_due` from the two fields it reads, for a read that has not decoded the
    rest of the invoice (``paycore.storage.invoice_read``)."""
    return status not in SETTLED and now > deadline


def expire(invoice: Invoice) -> Invoice:
    return attrs.evolve(
        invoice, status=next_status(invoice.status, Move.DEADLINE), change=EventType.EXPIRED
    )


def _payment_event(before: Status, move: Move) -> EventType:
    """The event a counted deposit makes: paid again or late is not paid (a host must
    not fulfil twice), so a deposit on a settled invoice is named for the status it met."""
    if move is Move.SETTLED_DEPOSIT:
        return EventType.OVERPAID if before is Status.PAID else EventType.LATE_PAYMENT
    if move is Move.FULL:
        return EventType.PAID
    # partialPaid -> partialPaid is money in, but no status change (docs/interface.md §Events).
    return EventType.FURTHER_PAYMENT if before is Status.PARTIAL_PAID else EventType.PARTIALLY_PAID


def _reaches_value(invoice: Invoice, paid: Decimal, tolerance: Decimal) -> bool:
    # A tip jar's value is 0, so any payment reaches it (Settings keeps the tolerance a
    # finite fraction below 1).
    with localcontext(MONEY_CONTEXT):
        return paid >= invoice.value * (1 - tolerance)


def add_payment(invoice: Invoice, payment: Payment, tolerance: Decimal = Decimal(0)) -> Invoice:
    """Record one counted payment; the move is chosen by the status and the new total."""
    with localcontext(MONEY_CONTEXT):
        paid = invoice.paid_amount + payment.vs_value
    if invoice.status in SETTLED:
        move = Move.SETTLED_DEPOSIT
    elif _reaches_value(invoice, paid, tolerance):
        move = Move.FULL
    else:
        move = Move.PARTIAL
    return attrs.evolve(
        invoice,
        status=next_status(invoice.status, move),
        paid_amount=paid,
        payments=(*invoice.payments, payment),
        change=_payment_event(invoice.status, move),
    )


def attribute(invoice: Invoice, payment: Payment, tolerance: Decimal = Decimal(0)) -> list[Invoice]:
    """Apply a counted payment, expiring first if it was made after the deadline.

    Returns the successive records, one per change; the last is the invoice's new state.
    """
    changes: list[Invoice] = []
    if is_due(invoice, payment.timestamp):
        invoice = expire(invoice)
        changes.append(invoice)
    changes.append(add_payment(invoice, payment, tolerance))
    return changes


def payment_key(payment: Payment) -> tuple[int, str, int, str]:
    """What names one transfer (the transaction row's unique key)."""
    return (payment.chain_id, payment.tx_hash, payment.log_index, payment.token)


def remove_payment(
    invoice: Invoice,
    key: tuple[int, str, int, str],
    now: int,
    tolerance: Decimal = Decimal(0),
) -> list[Invoice]:
    """Take back the payment ``key`` (``payment_key``) after a reorg replaced its block.

    Returns the successive records, one per change (the reorg move, then expiry when the
    invoice is open again past its deadline at ``now``); empty when the invoice has no
    such payment. ``paidAmount`` is the exact sum of the payments left."""
    left = tuple(p for p in invoice.payments if payment_key(p) != key)
    if len(left) == len(invoice.payments):
        return []
    on_time = [p for p in left if p.timestamp <= invoice.deadline]
    with localcontext(MONEY_CONTEXT):
        paid = sum((p.vs_value for p in left), Decimal(0))
        paid_on_time = sum((p.vs_value for p in on_time), Decimal(0))
    if on_time and _reaches_value(invoice, paid_on_time, tolerance):
        move = Move.REORG_FULL
    elif on_time:
        move = Move.REORG_PARTIAL
    else:
        move = Move.REORG_NONE
    changed = attrs.evolve(
        invoice,
        status=next_status(invoice.status, move),
        paid_amount=paid,
        payments=left,
        change=EventType.PAYMENT_REVERSED,
    )
    if is_due(changed, now):
        return [changed, expire(changed)]
    return [changed]
