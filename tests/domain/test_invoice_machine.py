"""The state machine: table-driven moves, and properties over random deposit sequences."""

from __future__ import annotations

import itertools
from decimal import Decimal

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paycore.domain.changes import EventType
from paycore.domain.machine import (
    SETTLED,
    TRANSITIONS,
    Move,
    add_payment,
    attribute,
    expire,
    is_due,
    next_status,
    payment_key,
    remove_payment,
)
from paycore.domain.records import Invoice, Payment, Status
from paycore.errors import IllegalTransition

TOKEN = "1:0x0000000000000000000000000000000000000000"
CREATED, DEADLINE = 1_000, 2_000


def make_invoice(value: str = "100", status: Status = Status.INIT) -> Invoice:
    return Invoice(
        guid="00000000-0000-4000-8000-000000000001",
        created_at=CREATED,
        deadline=DEADLINE,
        status=status,
        value=Decimal(value),
        token=TOKEN,
        chain_id=1,
        description="t",
        address="0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
        owner="0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
        accepted_tokens=(TOKEN,),
    )


def pay(vs: str, ts: int = 1_500, n: int = 0) -> Payment:
    return Payment(
        f"0x{n:064x}", n, 1, TOKEN.split(":")[1], "0x" + "11" * 20, Decimal(vs), Decimal(vs), ts
    )


def test_table_matches_spec_section_3() -> None:
    assert next_status(Status.INIT, Move.PARTIAL) is Status.PARTIAL_PAID
    assert next_status(Status.INIT, Move.FULL) is Status.PAID
    assert next_status(Status.PARTIAL_PAID, Move.FULL) is Status.PAID
    assert next_status(Status.INIT, Move.DEADLINE) is Status.EXPIRED
    assert next_status(Status.PARTIAL_PAID, Move.DEADLINE) is Status.EXPIRED


@pytest.mark.parametrize(
    ("status", "move"),
    [(s, m) for s in Status for m in Move if m not in TRANSITIONS[s]],
)
def test_illegal_moves_raise_and_change_nothing(status: Status, move: Move) -> None:
    invoice = make_invoice(status=status)
    before = attrs.asdict(invoice)
    with pytest.raises(IllegalTransition):
        next_status(status, move)
    if move is Move.DEADLINE:
        with pytest.raises(IllegalTransition):
            expire(invoice)
    assert attrs.asdict(invoice) == before


def test_partial_then_paid_then_overpaid() -> None:
    inv = make_invoice("100")
    [inv] = attribute(inv, pay("40", n=1))
    assert (inv.status, inv.paid_amount) == (Status.PARTIAL_PAID, Decimal("40"))
    [inv] = attribute(inv, pay("60", n=2))
    assert (inv.status, inv.paid_amount) == (Status.PAID, Decimal("100"))
    [inv] = attribute(inv, pay("5", n=3))
    assert (inv.status, inv.paid_amount, len(inv.payments)) == (Status.PAID, Decimal("105"), 3)


def test_tip_jar_is_paid_by_first_deposit_even_tiny() -> None:
    [inv] = attribute(make_invoice("0"), pay("0.01"))
    assert inv.status is Status.PAID


def test_tolerance_accepts_small_shortfall_only() -> None:
    [inv] = attribute(make_invoice("100"), pay("99.5"), tolerance=Decimal("0.01"))
    assert inv.status is Status.PAID
    [inv] = attribute(make_invoice("100"), pay("98.9"), tolerance=Decimal("0.01"))
    assert inv.status is Status.PARTIAL_PAID


def test_each_counted_payment_is_named_for_what_it_did() -> None:
    """The event name a host fulfils on: ``invoice.paid`` once, for the payment that
    completed the invoice; money before it, after it or too late is named otherwise."""
    [first] = attribute(make_invoice("100"), pay("40", n=1))
    assert first.change is EventType.PARTIALLY_PAID
    [second] = attribute(first, pay("30", n=2))
    assert second.change is EventType.FURTHER_PAYMENT
    [paid] = attribute(second, pay("30", n=3))
    assert paid.change is EventType.PAID
    [again] = attribute(paid, pay("1", n=4))
    assert again.change is EventType.OVERPAID
    [at_once] = attribute(make_invoice("100"), pay("100"))
    assert at_once.change is EventType.PAID
    expired, late = attribute(make_invoice("100"), pay("100", ts=DEADLINE + 1))
    assert (expired.change, late.change) == (EventType.EXPIRED, EventType.LATE_PAYMENT)


def test_without_a_tolerance_only_the_whole_value_pays() -> None:
    """``add_payment``'s default tolerance is none: a cent short is partly paid."""
    assert add_payment(make_invoice("100"), pay("99.99")).status is Status.PARTIAL_PAID
    assert add_payment(make_invoice("100"), pay("100")).status is Status.PAID


def test_late_payment_expires_first_then_records() -> None:
    expired_snapshot, recorded = attribute(make_invoice("100"), pay("100", ts=DEADLINE + 1))
    assert expired_snapshot.status is Status.EXPIRED and expired_snapshot.payments == ()
    assert recorded.status is Status.EXPIRED and recorded.paid_amount == Decimal("100")


def test_payment_at_the_deadline_still_counts() -> None:
    [inv] = attribute(make_invoice("100"), pay("100", ts=DEADLINE))
    assert inv.status is Status.PAID


def test_lazy_expiry_needs_deadline_passed_and_unsettled() -> None:
    assert not is_due(make_invoice(), DEADLINE)
    assert is_due(make_invoice(), DEADLINE + 1)
    assert is_due(make_invoice(status=Status.PARTIAL_PAID), DEADLINE + 1)
    assert not is_due(make_invoice(status=Status.PAID), DEADLINE + 10)
    assert expire(make_invoice(status=Status.PARTIAL_PAID)).status is Status.EXPIRED


amounts = st.decimals(min_value=Decimal("0.01"), max_value=Decimal("80"), places=2)
deposits = st.lists(
    st.tuples(amounts, st.integers(min_value=CREATED, max_value=DEADLINE + 500)),
    min_size=0,
    max_size=12,
)


def run(invoice: Invoice, seq: list[tuple[Decimal, int]]) -> tuple[Invoice, list[Invoice]]:
    events: list[Invoice] = []
    for n, (vs, ts) in enumerate(seq):
        changes = attribute(invoice, pay(str(vs), ts=ts, n=n))
        events.extend(changes)
        invoice = changes[-1]
    return invoice, events


@settings(max_examples=300, deadline=None)
@given(value=st.sampled_from(["0", "50", "100", "250"]), seq=deposits)
def test_properties_over_random_deposit_sequences(
    value: str, seq: list[tuple[Decimal, int]]
) -> None:
    final, events = run(make_invoice(value), seq)
    # paidAmount is exactly the sum of the counted payments' vsValues.
    assert final.paid_amount == sum((p.vs_value for p in final.payments), Decimal(0))
    assert len(final.payments) == len(seq)
    # status never leaves paid or expired once there.
    statuses = [Status.INIT] + [e.status for e in events]
    for before, after in itertools.pairwise(statuses):
        if before in SETTLED:
            assert after is before
    # one event per change: each event differs from the previous record by its status or by
    # exactly one new payment, never both, never neither.
    previous = make_invoice(value)
    for event in events:
        status_changed = event.status is not previous.status
        payment_added = len(event.payments) - len(previous.payments)
        assert (status_changed and payment_added == 0) or payment_added == 1
        assert status_changed or payment_added == 1
        previous = event
    status_changes = sum(1 for a, b in itertools.pairwise(statuses) if a is not b)
    payments_without_status_change = sum(
        1
        for a, b in itertools.pairwise([make_invoice(value), *events])
        if len(b.payments) > len(a.payments) and a.status is b.status
    )
    assert len(events) == status_changes + payments_without_status_change


@settings(max_examples=200, deadline=None)
@given(
    value=st.sampled_from(["0", "50", "100", "250"]),
    seq=st.lists(amounts, min_size=1, max_size=6),
    data=st.data(),
)
def test_final_status_is_order_independent_before_deadline(
    value: str, seq: list[Decimal], data: st.DataObject
) -> None:
    timed = [(vs, CREATED + 10) for vs in seq]
    shuffled = data.draw(st.permutations(timed))
    a, _ = run(make_invoice(value), timed)
    b, _ = run(make_invoice(value), list(shuffled))
    assert (a.status, a.paid_amount) == (b.status, b.paid_amount)


# -- deep reorgs: a counted payment taken back -----------------------------------------------


def test_a_reorg_takes_the_payment_back_through_the_table() -> None:
    [inv] = attribute(make_invoice("100"), pay("40", n=1))
    [inv] = attribute(inv, pay("60", n=2))
    assert inv.status is Status.PAID
    [back] = remove_payment(inv, payment_key(pay("60", n=2)), now=1_600)
    assert (back.status, back.paid_amount) == (Status.PARTIAL_PAID, Decimal("40"))
    assert [p.log_index for p in back.payments] == [1]
    [empty] = remove_payment(back, payment_key(pay("40", n=1)), now=1_600)
    assert (empty.status, empty.paid_amount, empty.payments) == (Status.INIT, Decimal(0), ())
    assert remove_payment(empty, payment_key(pay("40", n=1)), now=1_600) == []  # not there


def test_an_overpaid_invoice_stays_paid_when_the_rest_still_reaches_value() -> None:
    inv, _ = run(make_invoice("100"), [(Decimal(70), 1_100), (Decimal(50), 1_200)])
    [back] = remove_payment(inv, payment_key(pay("70", ts=1_100, n=0)), now=1_300)
    assert (back.status, back.paid_amount) == (Status.PARTIAL_PAID, Decimal(50))
    inv, _ = run(make_invoice("100"), [(Decimal(70), 1_100), (Decimal(60), 1_200)])
    [back] = remove_payment(inv, payment_key(pay("70", ts=1_100, n=0)), now=1_300)
    assert (back.status, back.paid_amount) == (Status.PARTIAL_PAID, Decimal(60))
    inv, _ = run(make_invoice("100"), [(Decimal(100), 1_100), (Decimal(100), 1_200)])
    [back] = remove_payment(inv, payment_key(pay("100", ts=1_100, n=0)), now=1_300)
    assert (back.status, back.paid_amount) == (Status.PAID, Decimal(100))


def test_after_a_reorg_the_payments_left_must_reach_the_whole_value_to_stay_paid() -> None:
    """The payments left are summed from nothing: 99.99 left of a 100 invoice is not paid,
    however little is missing (a sum started at 1 would have called it paid)."""
    inv, _ = run(make_invoice("100"), [(Decimal("99.99"), 1_100), (Decimal("0.01"), 1_200)])
    assert inv.status is Status.PAID
    [back] = remove_payment(inv, payment_key(pay("0.01", ts=1_200, n=1)), now=1_300)
    assert (back.status, back.paid_amount) == (Status.PARTIAL_PAID, Decimal("99.99"))


def test_past_the_deadline_an_unpaid_invoice_expires_after_the_reorg() -> None:
    [inv] = attribute(make_invoice("100"), pay("100", n=1))
    moved, expired = remove_payment(inv, payment_key(pay("100", n=1)), now=DEADLINE + 1)
    assert (moved.status, expired.status, expired.paid_amount) == (
        Status.INIT,
        Status.EXPIRED,
        Decimal(0),
    )
    # A late payment left cannot make it paid: only payments made by the deadline count.
    inv, _ = run(make_invoice("100"), [(Decimal(100), 1_500), (Decimal(100), DEADLINE + 5)])
    assert inv.status is Status.PAID
    changes = remove_payment(inv, payment_key(pay("100", ts=1_500, n=0)), now=DEADLINE + 10)
    assert [c.status for c in changes] == [Status.INIT, Status.EXPIRED]
    assert changes[-1].paid_amount == Decimal(100)  # the late one is still recorded


def test_an_expired_invoice_stays_expired() -> None:
    inv, _ = run(make_invoice("100"), [(Decimal(30), 1_500), (Decimal(10), DEADLINE + 5)])
    assert inv.status is Status.EXPIRED
    [back] = remove_payment(inv, payment_key(pay("30", ts=1_500, n=0)), now=DEADLINE + 10)
    assert (back.status, back.paid_amount) == (Status.EXPIRED, Decimal(10))


def test_the_reorg_moves_are_in_the_table() -> None:
    reorg = (Move.REORG_FULL, Move.REORG_PARTIAL, Move.REORG_NONE)
    assert not any(m in TRANSITIONS[Status.INIT] for m in reorg)  # nothing to take back
    assert [TRANSITIONS[Status.PAID][m] for m in reorg] == [
        Status.PAID,
        Status.PARTIAL_PAID,
        Status.INIT,
    ]
    assert {TRANSITIONS[Status.EXPIRED][m] for m in reorg} == {Status.EXPIRED}


@settings(max_examples=300, deadline=None)
@given(value=st.sampled_from(["0", "50", "100", "250"]), seq=deposits, data=st.data())
def test_taking_a_payment_back_is_replaying_without_it(
    value: str, seq: list[tuple[Decimal, int]], data: st.DataObject
) -> None:
    """Whatever the sequence (in chain order: block times only grow), removing one payment
    leaves the record that the other payments alone would have made (then expired, if due
    by now)."""
    if not seq:
        return
    seq = sorted(seq, key=lambda item: item[1])
    now = max([DEADLINE - 100, *(ts for _, ts in seq)]) + data.draw(st.integers(0, 400))
    full, _ = run(make_invoice(value), seq)
    if is_due(full, now):
        full = expire(full)
    gone = data.draw(st.integers(0, len(seq) - 1))
    changes = remove_payment(full, payment_key(full.payments[gone]), now)
    assert changes
    replayed = make_invoice(value)
    for n, (vs, ts) in enumerate(seq):
        if n != gone:
            replayed = attribute(replayed, pay(str(vs), ts=ts, n=n))[-1]
    if is_due(replayed, now):
        replayed = expire(replayed)
    result = changes[-1]
    assert (result.status, result.paid_amount, result.payments) == (
        replayed.status,
        replayed.paid_amount,
        replayed.payments,
    )


def test_open_statuses_are_those_with_a_deadline_move() -> None:
    """Storage sweeps and intake read OPEN from here; it must stay the complement of SETTLED."""
    from paycore.domain.machine import OPEN

    assert {Status.INIT, Status.PARTIAL_PAID} == OPEN
    assert set(Status) == OPEN | SETTLED and not OPEN & SETTLED


def test_a_payment_in_the_deadlines_own_second_still_counts_after_a_reorg() -> None:
    """ "By the deadline" includes its last second, after a reorg as at attribution: the
    payment left was made at ``deadline`` exactly, so the invoice stays paid."""
    inv, _ = run(make_invoice("100"), [(Decimal(30), 1_500), (Decimal(100), DEADLINE)])
    assert inv.status is Status.PAID
    [back] = remove_payment(inv, payment_key(pay("30", ts=1_500, n=0)), now=DEADLINE + 10)
    assert (back.status, back.paid_amount) == (Status.PAID, Decimal(100))
    # One second later is late: the same reorg leaves the invoice expired.
    inv, _ = run(make_invoice("100"), [(Decimal(30), 1_500), (Decimal(100), DEADLINE + 1)])
    changes = remove_payment(inv, payment_key(pay("30", ts=1_500, n=0)), now=DEADLINE + 10)
    assert changes[-1].status is Status.EXPIRED
