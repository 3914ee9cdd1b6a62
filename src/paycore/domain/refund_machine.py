"""A refund's lifecycle as one transition table, with no I/O, like the invoice's
(``paycore.domain.machine``, modelled on h11's ``_state``).

A refund is recorded ``pending`` beside the unsigned withdrawal that pays it
(``Gateway.refund_invoice``). From there exactly two moves lead out, and nothing leads back:

- ``PAID_OUT``: the watcher saw the owner's wallet pay it (a ``Withdrawn`` event of the same
  chain, owner, token, recipient and amount, ``paycore.domain.refunds.match_withdrawals``):
  ``confirmed``, naming that event and its block's time.
- ``CANCEL``: the merchant withdrew it before it was sent (``Gateway.cancel_refund``):
  ``cancelled`` at that time; what it held becomes refundable again.

Confirmed and cancelled are final. Every function takes a refund and returns a new one (the
records are frozen), so an illegal move raises ``IllegalTransition`` and changes nothing.
Whether a caller's request may make a move (a merchant cancelling a refund that is already
confirmed is a 409, not a bug) is asked with :func:`allows` before moving.
"""

from __future__ import annotations

from enum import StrEnum

import attrs

from ..errors import IllegalTransition
from .records import Refund, RefundStatus


class RefundMove(StrEnum):
    PAID_OUT = "the owner's wallet paid it out"
    CANCEL = "the merchant withdrew it before it was sent"


#: The status every refund is recorded in.
INITIAL = RefundStatus.PENDING

#: (status, move) -> next status. Anything absent is illegal.
TRANSITIONS: dict[RefundStatus, dict[RefundMove, RefundStatus]] = {
    RefundStatus.PENDING: {
        RefundMove.PAID_OUT: RefundStatus.CONFIRMED,
        RefundMove.CANCEL: RefundStatus.CANCELLED,
    },
    RefundStatus.CONFIRMED: {},
    RefundStatus.CANCELLED: {},
}

#: The statuses no move leaves.
FINAL: frozenset[RefundStatus] = frozenset(s for s, moves in TRANSITIONS.items() if not moves)


def allows(status: RefundStatus, move: RefundMove) -> bool:
    """Whether ``move`` leads out of ``status``."""
    return move in TRANSITIONS[status]


def next_status(status: RefundStatus, move: RefundMove) -> RefundStatus:
    try:
        return TRANSITIONS[status][move]
    except KeyError:
        raise IllegalTransition(
            f"refund: {move.value} is not allowed in status {status.value}"
        ) from None


def confirm(refund: Refund, tx_hash: str, log_index: int, at: int) -> Refund:
    """``refund`` paid out by the wallet's ``Withdrawn`` event (``tx_hash``, ``log_index``)
    in a block of time ``at``."""
    return attrs.evolve(
        refund,
        status=next_status(refund.status, RefundMove.PAID_OUT),
        tx_hash=tx_hash,
        log_index=log_index,
        settled_at=at,
    )


def cancel(refund: Refund, at: int) -> Refund:
    """``refund`` withdrawn by the merchant at time ``at``."""
    return attrs.evolve(refund, status=next_status(refund.status, RefundMove.CANCEL), settled_at=at)


__all__ = [
    "FINAL",
    "INITIAL",
    "TRANSITIONS",
    "RefundMove",
    "allows",
    "cancel",
    "confirm",
    "next_status",
]
