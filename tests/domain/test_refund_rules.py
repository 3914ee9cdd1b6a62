"""The refund rules (``paycore.domain.refunds``) without a node or a database: which invoices
may be refunded, what a request comes to in base units, and which withdrawal pays which
refund; and the records' wire forms."""

from __future__ import annotations

from decimal import Decimal

import attrs
import pytest

from paycore import NATIVE
from paycore.domain.records import (
    Invoice,
    Payment,
    RateSource,
    Refund,
    RefundStatus,
    Status,
    Transaction,
    TxType,
)
from paycore.domain.refunds import (
    NewRefund,
    check_refundable,
    check_room,
    match_withdrawals,
    new_refund,
    plan_refund,
    refund_token,
    room,
)
from paycore.errors import Conflict, InvalidInput, PriceUnavailable

CHAIN = 31337
USDC = "0x5FbDB2315678afecb367f032d93F642f64180aa3"
OWNER = "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359"
PAYER = "0x2222222222222222222222222222222222222222"
OTHER_PAYER = "0x3333333333333333333333333333333333333333"
WALLET = "0x4444444444444444444444444444444444444444"
GUID = "00000000-0000-4000-8000-000000000001"


def payment(n: int, amount: str, vs: str, token: str = USDC, payer: str = PAYER) -> Payment:
    return Payment(
        f"0x{n:064x}", 0, CHAIN, token, payer, Decimal(amount), Decimal(vs), 1_700_000_000 + n
    )


def invoice(*payments: Payment, status: Status = Status.PAID, refunds: tuple = ()) -> Invoice:
    return Invoice(
        guid=GUID,
        created_at=1_700_000_000,
        deadline=1_700_003_600,
        status=status,
        value=Decimal(10),
        token=f"{CHAIN}:{USDC}",
        chain_id=CHAIN,
        description="d",
        address="0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
        owner=OWNER,
        accepted_tokens=(f"{CHAIN}:{USDC}", f"{CHAIN}:{NATIVE}"),
        paid_amount=sum((p.vs_value for p in payments), Decimal(0)),
        payments=payments,
        refunds=refunds,
    )


def no_price() -> Decimal:
    raise PriceUnavailable("no usd price")


def plan(inv: Invoice, decimals: int = 6, price: Decimal | None = None, **fields: object):  # type: ignore[no-untyped-def]
    request = NewRefund(guid=inv.guid, **fields)  # type: ignore[arg-type]
    token = refund_token(inv, request.token)
    return plan_refund(inv, request, token, decimals, (lambda: price) if price else no_price)


def held(inv: Invoice, units: int, status: RefundStatus = RefundStatus.PENDING) -> Refund:
    p = plan(inv, amount=Decimal(units) / 10**6)
    return attrs.evolve(new_refund(inv, p, 1_700_000_500), status=status)


# -- which invoices -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "payments", "refundable"),
    [
        (Status.INIT, (), False),
        (Status.PARTIAL_PAID, (payment(1, "4", "4"),), False),
        (Status.PAID, (payment(1, "10", "10"),), True),
        (Status.EXPIRED, (), False),
        (Status.EXPIRED, (payment(1, "4", "4"),), True),
    ],
)
def test_only_paid_invoices_and_expired_ones_with_payments(
    status: Status, payments: tuple[Payment, ...], refundable: bool
) -> None:
    inv = invoice(*payments, status=status)
    if refundable:
        check_refundable(inv)
        return
    with pytest.raises(Conflict) as refused:
        check_refundable(inv)
    assert refused.value.status == 409
    assert refused.value.text.startswith(f"Conflict: invoice {GUID} is ")


def test_the_token_is_the_one_paid_in_or_must_be_named() -> None:
    one = invoice(payment(1, "10", "10"))
    assert refund_token(one, None) == USDC
    assert refund_token(one, f"{CHAIN}:{USDC.lower()}") == USDC
    two = invoice(payment(1, "5", "5"), payment(2, "0.0025", "5", token=NATIVE))
    with pytest.raises(InvalidInput, match="token: required: the invoice was paid in more"):
        refund_token(two, None)
    assert refund_token(two, f"{CHAIN}:{NATIVE}") == NATIVE
    with pytest.raises(InvalidInput, match="token: the invoice has no payment in 31337:0x0"):
        refund_token(one, f"{CHAIN}:{NATIVE}")
    with pytest.raises(InvalidInput, match="token: is on chain 1, the invoice on 31337"):
        refund_token(one, f"1:{USDC}")


# -- what a request comes to ----------------------------------------------------------------


def test_by_default_everything_left_goes_back_to_the_payer_at_the_payments_rate() -> None:
    inv = invoice(payment(1, "4", "4"), payment(2, "6", "6"))
    whole = plan(inv)
    assert (whole.to, whole.token, whole.units, whole.amount) == (PAYER, USDC, 10**7, 10)
    assert (whole.vs_value, whole.rate, whole.rate_source) == (10, 1, RateSource.PAYMENT)


def test_a_fiat_amount_at_a_rate_that_does_not_terminate_never_rounds_up() -> None:
    # 3 tokens paid 10 USD: a rate of 3.333..., kept to 18 places on the record.
    inv = invoice(payment(1, "3", "10"))
    half = plan(inv, vs_amount=Decimal(5))
    assert (half.units, half.amount, half.vs_value) == (1_500_000, Decimal("1.5"), 5)
    assert half.rate == Decimal("3.333333333333333333")
    third = plan(inv, vs_amount=Decimal(1))
    assert third.units == 300_000  # exactly 0.3: the rate is not rounded before dividing
    odd = plan(inv, vs_amount=Decimal("0.00001"))
    assert odd.units == 3  # 0.000003 tokens: 3 units, never 4
    everything = plan(inv, vs_amount=Decimal(10))
    assert (everything.units, everything.vs_value) == (3_000_000, 10)
    tokens = plan(inv, amount=Decimal(1))
    assert tokens.vs_value == Decimal("3.33333333")  # valued to vsValue's 8 places


def test_the_rate_of_now_is_the_price_table_in_force() -> None:
    inv = invoice(payment(1, "0.01", "20", token=NATIVE))
    now = plan(inv, decimals=18, price=Decimal(2500), vs_amount=Decimal(5), rate_source="now")
    assert (now.amount, now.rate, now.rate_source) == (Decimal("0.002"), 2500, RateSource.NOW)
    assert now.vs_value == 5
    by_tokens = plan(
        inv, decimals=18, price=Decimal(2500), amount=Decimal("0.004"), rate_source="now"
    )
    assert by_tokens.vs_value == 10
    with pytest.raises(InvalidInput, match="rateSource: no fresh usd price of 31337:0x0"):
        plan(inv, decimals=18, vs_amount=Decimal(5), rate_source="now")
    with pytest.raises(InvalidInput, match="rateSource: must be payment or now"):
        plan(inv, decimals=18, rate_source="Now")


def test_pending_and_confirmed_refunds_hold_what_they_take_cancelled_ones_do_not() -> None:
    paid = invoice(payment(1, "10", "10"))
    pending, confirmed, cancelled = (
        held(paid, 3_000_000),
        held(paid, 2_000_000, RefundStatus.CONFIRMED),
        held(paid, 4_000_000, RefundStatus.CANCELLED),
    )
    inv = attrs.evolve(paid, refunds=(pending, confirmed, cancelled))
    assert room(inv, inv.refunds, USDC, 6) == 5_000_000
    assert plan(inv).units == 5_000_000
    with pytest.raises(InvalidInput) as over:
        plan(inv, amount=Decimal("5.000001"))
    assert over.value.text == (
        f"invalid request: amount: more than the 5 left to refund in {CHAIN}:{USDC}"
    )
    with pytest.raises(InvalidInput, match="vsAmount: more than the 5 left"):
        plan(inv, vs_amount=Decimal(6))
    gone = attrs.evolve(inv, refunds=(*inv.refunds, held(inv, 5_000_000)))
    with pytest.raises(InvalidInput, match="amount: nothing is left to refund in 31337:0x5F"):
        plan(gone)


def test_amount_refusals() -> None:
    inv = invoice(payment(1, "10", "10"))
    cases = [
        ({"amount": Decimal(0)}, "amount: must be greater than 0"),
        ({"vs_amount": Decimal(0)}, "vsAmount: must be greater than 0"),
        ({"amount": Decimal(1), "vs_amount": Decimal(1)}, "amount: give amount"),
        ({"amount": Decimal("0.0000001")}, "amount: has more than 6 decimal places"),
        ({"vs_amount": Decimal("0.0000001")}, "vsAmount: is less than one base unit"),
        ({"to": "0x12"}, "to: "),
    ]
    for fields, reason in cases:
        with pytest.raises(InvalidInput, match=reason):
            plan(inv, **fields)
    free = invoice(payment(1, "10", "0"))
    with pytest.raises(InvalidInput, match="vsAmount: the rate of 31337:0x5F.* is 0"):
        plan(free, vs_amount=Decimal(1))
    assert plan(free, amount=Decimal(1)).vs_value == 0


def test_the_recipient_is_the_payer_or_must_be_named() -> None:
    two = invoice(payment(1, "5", "5"), payment(2, "5", "5", payer=OTHER_PAYER))
    with pytest.raises(InvalidInput, match="to: required: the payments in 31337:0x5F"):
        plan(two)
    named = plan(two, to=OTHER_PAYER.lower())
    assert named.to == OTHER_PAYER
    with pytest.raises(InvalidInput, match="to: "):  # a mixed-case address, checksum wrong
        plan(two, to="0xFB6916095ca1df60bB79Ce92cE3Ea74c37c5d359")


def test_check_room_refuses_what_a_refund_made_meanwhile_took() -> None:
    inv = invoice(payment(1, "10", "10"))
    p = plan(inv, amount=Decimal(6))
    check_room(inv, p, 6)
    taken = attrs.evolve(inv, refunds=(held(inv, 5_000_000),))
    with pytest.raises(Conflict, match="Conflict: only 5 is left to refund in 31337:0x5F"):
        check_room(taken, p, 6)
    with pytest.raises(Conflict):
        check_room(attrs.evolve(inv, status=Status.PARTIAL_PAID), p, 6)


# -- which withdrawal pays which refund ---------------------------------------------------------


def withdrawal(n: int, amount: str, to: str = PAYER, **changes: object) -> Transaction:
    record = Transaction(
        type=TxType.WITHDRAW,
        tx_hash=f"0x{n:064x}",
        log_index=n,
        chain_id=CHAIN,
        token=USDC,
        from_=WALLET,
        amount=Decimal(amount),
        vs_value=Decimal("999"),
        timestamp=1_700_001_000 + n,
        owner=OWNER,
        to=to,
    )
    return attrs.evolve(record, **changes)


def test_a_withdrawal_pays_the_oldest_refund_it_matches_once() -> None:
    inv = invoice(payment(1, "10", "10"))
    older, newer = (attrs.evolve(held(inv, 2_000_000), id=f"r{n}") for n in (1, 2))
    other = attrs.evolve(held(inv, 3_000_000), id="r3")
    records, paid = match_withdrawals(
        [older, newer, other],
        [
            withdrawal(1, "2"),
            withdrawal(2, "3", to=OTHER_PAYER),  # another recipient
            withdrawal(3, "2.5"),  # another amount
            withdrawal(4, "2", token=NATIVE),  # another token
            withdrawal(5, "2", owner=PAYER),  # another owner's wallet
            withdrawal(6, "2", chain_id=1),  # another chain
            withdrawal(7, "2"),
            withdrawal(8, "2"),  # both twos are taken
            withdrawal(9, "3"),
        ],
    )
    assert [r.id if r else None for r in paid] == [
        "r1",
        None,
        None,
        None,
        None,
        None,
        "r2",
        None,
        "r3",
    ]
    first = paid[0]
    assert first is not None
    assert (first.status, first.tx_hash, first.log_index, first.settled_at) == (
        RefundStatus.CONFIRMED,
        f"0x{1:064x}",
        1,
        1_700_001_001,
    )
    assert records[0] == attrs.evolve(
        withdrawal(1, "2"), type=TxType.REFUND, guid=GUID, vs_value=Decimal(2)
    )
    assert records[1:6] == [
        withdrawal(2, "3", to=OTHER_PAYER),
        withdrawal(3, "2.5"),
        withdrawal(4, "2", token=NATIVE),
        withdrawal(5, "2", owner=PAYER),
        withdrawal(6, "2", chain_id=1),
    ]
    assert records[7].type is TxType.WITHDRAW


# -- wire forms ---------------------------------------------------------------------------------


def test_the_invoice_shows_its_refunds_and_counts_the_confirmed_ones() -> None:
    paid = invoice(payment(1, "10", "10"))
    assert (paid.to_wire()["refunds"], paid.to_wire()["refundedAmount"]) == ([], "0")
    confirmed = attrs.evolve(
        held(paid, 2_500_000, RefundStatus.CONFIRMED), tx_hash="0xab", log_index=3, settled_at=9
    )
    refunds = (confirmed, held(paid, 1_000_000), held(paid, 4_000_000, RefundStatus.CANCELLED))
    inv = attrs.evolve(paid, refunds=refunds)
    wire = inv.to_wire()
    assert wire["refundedAmount"] == "2.5" and inv.refunded_amount == Decimal("2.5")
    assert wire["refunds"][0] == {
        "id": confirmed.id,
        "guid": GUID,
        "status": "confirmed",
        "chainId": str(CHAIN),
        "token": USDC,
        "to": PAYER,
        "amount": "2.5",
        "vsValue": 2.5,
        "rate": "1",
        "rateSource": "payment",
        "createdAt": 1_700_000_500,
        "txHash": "0xab",
        "logIndex": 3,
        "settledAt": 9,
    }
    assert [r["status"] for r in wire["refunds"]] == ["confirmed", "pending", "cancelled"]
    assert Invoice.from_wire(wire) == inv


def test_a_refund_transaction_names_its_recipient_and_invoice() -> None:
    record = attrs.evolve(withdrawal(1, "2"), type=TxType.REFUND, guid=GUID, vs_value=Decimal(2))
    wire = record.to_wire()
    assert (wire["type"], wire["to"], wire["guid"], wire["vsValue"]) == ("refund", PAYER, GUID, 2)
    assert "guid" not in withdrawal(1, "2").to_wire()
