"""The refund's transition table: every legal move, and every illegal one refused with
nothing changed (``paycore.domain.refund_machine``)."""

from __future__ import annotations

import copy
import itertools
from decimal import Decimal

import pytest

from paycore.domain import refund_machine
from paycore.domain.records import (
    Invoice,
    RateSource,
    Refund,
    RefundStatus,
    Status,
    Transaction,
    TxType,
)
from paycore.domain.refund_machine import FINAL, INITIAL, RefundMove, allows, next_status
from paycore.domain.refunds import RefundPlan, match_withdrawals, new_refund
from paycore.errors import IllegalTransition

#: The lifecycle as docs/interface.md tells it, written out rather than read from the table.
LEGAL = {
    (RefundStatus.PENDING, RefundMove.PAID_OUT): RefundStatus.CONFIRMED,
    (RefundStatus.PENDING, RefundMove.CANCEL): RefundStatus.CANCELLED,
}
OWNER = "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359"
PAYER = "0x" + "11" * 20
TOKEN = "0x" + "22" * 20


def invoice() -> Invoice:
    return Invoice(
        guid="00000000-0000-4000-8000-000000000001",
        created_at=1_000,
        deadline=2_000,
        status=Status.PAID,
        value=Decimal(3),
        token=f"1:{TOKEN}",
        chain_id=1,
        description="t",
        address="0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
        owner=OWNER,
        accepted_tokens=(f"1:{TOKEN}",),
    )


def refund(status: RefundStatus = RefundStatus.PENDING) -> Refund:
    return Refund(
        id="r-1",
        guid="00000000-0000-4000-8000-000000000001",
        owner=OWNER,
        chain_id=1,
        token=TOKEN,
        to=PAYER,
        amount=Decimal("1.5"),
        vs_value=Decimal("3"),
        rate=Decimal(2),
        rate_source=RateSource.PAYMENT,
        status=status,
        created_at=1_000,
    )


def move(record: Refund, step: RefundMove) -> Refund:
    if step is RefundMove.PAID_OUT:
        return refund_machine.confirm(record, "0x" + "ab" * 32, 7, 2_000)
    return refund_machine.cancel(record, 2_000)


@pytest.mark.parametrize(("status", "step"), list(LEGAL))
def test_every_legal_move(status: RefundStatus, step: RefundMove) -> None:
    assert allows(status, step)
    assert next_status(status, step) is LEGAL[status, step]
    before = refund(status)
    after = move(before, step)
    assert after.status is LEGAL[status, step]
    assert after.settled_at == 2_000
    assert before.status is status and before.settled_at is None  # a new record
    if step is RefundMove.PAID_OUT:
        assert (after.tx_hash, after.log_index) == ("0x" + "ab" * 32, 7)
    else:
        assert (after.tx_hash, after.log_index) == (None, None)


ILLEGAL = [p for p in itertools.product(RefundStatus, RefundMove) if p not in LEGAL]


@pytest.mark.parametrize(("status", "step"), ILLEGAL)
def test_every_illegal_move_raises_and_changes_nothing(
    status: RefundStatus, step: RefundMove
) -> None:
    assert not allows(status, step)
    with pytest.raises(IllegalTransition, match=f"not allowed in status {status.value}"):
        next_status(status, step)
    before = refund(status)
    kept = copy.deepcopy(before)
    with pytest.raises(IllegalTransition):
        move(before, step)
    assert before == kept


def test_the_table_is_the_lifecycle() -> None:
    assert {
        (s, m): t for s, moves in refund_machine.TRANSITIONS.items() for m, t in moves.items()
    } == LEGAL
    assert set(refund_machine.TRANSITIONS) == set(RefundStatus)
    assert INITIAL is RefundStatus.PENDING
    assert {RefundStatus.CONFIRMED, RefundStatus.CANCELLED} == FINAL
    assert len(ILLEGAL) == len(RefundStatus) * len(RefundMove) - 2


def test_a_new_refund_starts_pending() -> None:
    plan = RefundPlan(TOKEN, PAYER, 15, Decimal("1.5"), Decimal(3), Decimal(2), RateSource.NOW)
    assert new_refund(invoice(), plan, 1_234).status is INITIAL


def test_a_withdrawal_confirms_a_pending_refund_through_the_table() -> None:
    paid = Transaction(
        chain_id=1,
        tx_hash="0x" + "cd" * 32,
        log_index=3,
        type=TxType.WITHDRAW,
        owner=OWNER,
        token=TOKEN,
        from_=OWNER,
        to=PAYER,
        amount=Decimal("1.5"),
        vs_value=Decimal(0),
        timestamp=5_000,
    )
    records, confirmed = match_withdrawals([refund()], [paid])
    assert [r.type for r in records] == [TxType.REFUND]
    [done] = confirmed
    assert done is not None
    assert (done.status, done.tx_hash, done.log_index, done.settled_at) == (
        RefundStatus.CONFIRMED,
        "0x" + "cd" * 32,
        3,
        5_000,
    )
    # A refund that is not pending any more cannot be confirmed again: a bug, refused.
    with pytest.raises(IllegalTransition):
        match_withdrawals([done], [paid])
