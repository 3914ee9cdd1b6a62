"""Refunds: which invoices may be refunded, how much is left, what a request comes to, and
which withdrawal paid which refund (docs/interface.md, POST /refund).

Pure, like the state machine: the gateway reads the invoice and its refunds, asks the chain
backend for the token's decimals and builds the transaction; everything decided in between
is here, tested without a database, a node or a framework.

The rules, in one place:

- A refund goes back in a token the invoice was paid in, from the owner's wallet, to the
  payer (the one address the payments in that token came from) unless the merchant names
  another.
- Only a ``paid`` invoice, or an ``expired`` one that holds payments (a late payment, or
  partial payments it never completed), can be refunded: an open invoice may still be paid,
  and one without payments has nothing to give back.
- What is left to refund in a token is what was paid in it minus every refund in it that
  is pending or confirmed: a pending refund holds its amount until it is confirmed or
  cancelled, so two refunds built before either is sent cannot both take the same money.
- An amount is stated in the token, or in the invoice's vsCurrency (``vsAmount``) and
  converted at the rate of the payments (their total vsValue over their total amount, the
  default) or of the price table now; the token amount is then rounded down to a whole
  base unit, never up. Stating neither refunds everything left in the token. The rate used
  is recorded with the refund, and so is the refund's worth in vsCurrency: ``vsAmount`` as
  stated, or the token amount at that rate.
- A refund's status moves by the table of ``paycore.domain.refund_machine``: pending, then
  confirmed or cancelled, both final.
- The watcher confirms a refund when the owner's wallet pays it: a ``Withdrawn`` event of
  the same chain, owner, token, recipient and amount. Two pending refunds that agree on all
  of those look the same on chain; the older is confirmed first.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from decimal import ROUND_FLOOR, ROUND_HALF_EVEN, Decimal, localcontext

import attrs

from ..errors import Conflict, InvalidInput, PriceUnavailable
from . import refund_machine
from .fields import Address, Amount, Token
from .money import MONEY_CONTEXT, from_base_units, normalize, to_base_units, to_text, value_at
from .records import (
    Invoice,
    RateSource,
    Refund,
    Status,
    Transaction,
    TxType,
)
from .tokens import TokenId, normalize_address

#: Places a recorded rate keeps (vsCurrency per token): a payments' rate such as 10/3 does
#: not terminate, and the column keeps 30.
RATE_PLACES = 18
_RATE_QUANTUM = Decimal(1).scaleb(-RATE_PLACES)


@attrs.frozen
class NewRefund:
    """What a merchant asks for (POST /refund), each value already of its type
    (``paycore.api.wire`` reads it from the wire); :func:`plan_refund` applies the rules."""

    guid: str = attrs.field(metadata={"doc": "the invoice to refund"})
    amount: Amount | None = attrs.field(
        default=None,
        metadata={"doc": "token units to refund; leave out with vsAmount, or for all that is left"},
    )
    vs_amount: Amount | None = attrs.field(
        default=None,
        metadata={"doc": "the refund in the invoice's vsCurrency, converted at rateSource"},
    )
    token: Token | None = attrs.field(
        default=None,
        metadata={"doc": "a token the invoice was paid in; required if it was paid in several"},
    )
    to: Address | None = attrs.field(
        default=None,
        metadata={"doc": "the recipient; by default the payer of the payments in the token"},
    )
    rate_source: str | None = attrs.field(
        default=None,
        metadata={
            "doc": "the rate between token and vsCurrency: payment (default) or now",
            "schema": {"enum": [s.value for s in RateSource]},
        },
    )


@attrs.frozen
class CreateRefund(NewRefund):
    """POST /refund: the refund's fields, plus who claims to make it (soft mode)."""

    owner: Address | None = attrs.field(
        default=None, metadata={"doc": "merchant address; must match the session key's owner"}
    )


@attrs.frozen
class RefundPlan:
    """What a refund request comes to: who gets how much of which token, at which rate."""

    token: str  # the token's address, as in Payment.token
    to: str
    units: int  # base units: what the wallet's withdraw call sends
    amount: Decimal  # the same in token units
    vs_value: Decimal
    rate: Decimal
    rate_source: RateSource


@attrs.frozen
class BuiltRefund:
    """``Gateway.refund_invoice``'s answer: the refund as recorded (pending), the unsigned
    withdrawal that pays it (the /initWithdraw form of the chain), and the invoice as its
    event announced it."""

    refund: Refund
    transaction: dict[str, object]
    invoice: Invoice


def check_refundable(invoice: Invoice) -> None:
    """Conflict (409) unless the invoice is paid, or expired with payments."""
    if invoice.status is Status.PAID or (invoice.status is Status.EXPIRED and invoice.payments):
        return
    state = "expired without payments" if invoice.status is Status.EXPIRED else invoice.status
    raise Conflict(
        f"Conflict: invoice {invoice.guid} is {state}: only a paid invoice, or an expired one "
        "with payments, can be refunded"
    )


def refund_token(invoice: Invoice, raw: str | None) -> str:
    """The token (address) a refund goes back in: the one asked for, which must be one the
    invoice was paid in, or the only one it was paid in."""
    paid = list(dict.fromkeys(p.token for p in invoice.payments))
    if raw is None:
        if len(paid) != 1:
            raise InvalidInput("token", "required: the invoice was paid in more than one token")
        return paid[0]
    asked = TokenId.parse(raw, "token")
    if asked.chain_id != invoice.chain_id:
        raise InvalidInput(
            "token", f"is on chain {asked.chain_id}, the invoice on {invoice.chain_id}"
        )
    if asked.address not in paid:
        raise InvalidInput("token", f"the invoice has no payment in {asked}")
    return asked.address


def paid_in(invoice: Invoice, token: str) -> tuple[Decimal, Decimal]:
    """(amount, vsValue) of the invoice's payments in ``token``, summed exactly."""
    with localcontext(MONEY_CONTEXT):
        amount = sum((p.amount for p in invoice.payments if p.token == token), Decimal(0))
        value = sum((p.vs_value for p in invoice.payments if p.token == token), Decimal(0))
    return amount, value


def held(refunds: Sequence[Refund], token: str) -> Decimal:
    """What the pending and confirmed refunds in ``token`` take, in token units."""
    with localcontext(MONEY_CONTEXT):
        return sum((r.amount for r in refunds if r.token == token and r.holds_funds), Decimal(0))


def room(invoice: Invoice, refunds: Sequence[Refund], token: str, decimals: int) -> int:
    """Base units of ``token`` still refundable: paid minus held, rounded down."""
    paid, _value = paid_in(invoice, token)
    with localcontext(MONEY_CONTEXT):
        left = (paid - held(refunds, token)).scaleb(decimals)
        return max(0, int(left.to_integral_value(rounding=ROUND_FLOOR)))


def recipient(invoice: Invoice, token: str, raw: str | None) -> str:
    """Where the refund goes: ``raw`` normalised for the chain, or the one payer of the
    payments in ``token``."""
    if raw is not None:
        return normalize_address(invoice.chain_id, raw, "to")
    payers = list(dict.fromkeys(p.from_ for p in invoice.payments if p.token == token))
    if len(payers) != 1:
        token_id = f"{invoice.chain_id}:{token}"
        raise InvalidInput(
            "to", f"required: the payments in {token_id} came from several addresses"
        )
    return payers[0]


def _rate_source(raw: str | None) -> RateSource:
    if raw is None:
        return RateSource.PAYMENT
    try:
        return RateSource(raw)
    except ValueError:
        raise InvalidInput("rateSource", "must be payment or now") from None


def _floor_units(tokens: Decimal, decimals: int) -> int:
    with localcontext(MONEY_CONTEXT):
        return int(tokens.scaleb(decimals).to_integral_value(rounding=ROUND_FLOOR))


def plan_refund(
    invoice: Invoice,
    request: NewRefund,
    token: str,
    decimals: int,
    price_now: Callable[[], Decimal],
) -> RefundPlan:
    """What ``request`` comes to on ``invoice`` (its ``refunds`` attached), refunding
    ``token`` (:func:`refund_token`), which has ``decimals``. ``price_now`` gives the token's
    price in the invoice's vsCurrency from the table in force (raising ``PriceUnavailable``);
    it is asked only for ``rateSource`` now. Raises InvalidInput for the first field that
    cannot be honoured, amounts beyond what is left included."""
    token_id = f"{invoice.chain_id}:{token}"
    source = _rate_source(request.rate_source)
    to = recipient(invoice, token, request.to)
    if request.amount is not None and request.vs_amount is not None:
        raise InvalidInput("amount", "give amount (token units) or vsAmount, not both")
    paid, paid_value = paid_in(invoice, token)
    with localcontext(MONEY_CONTEXT):
        if source is RateSource.NOW:
            try:
                price = price_now()
            except PriceUnavailable:
                raise InvalidInput(
                    "rateSource", f"no fresh {invoice.vs_currency} price of {token_id} now"
                ) from None
            rate = normalize(price)
        elif paid:
            price = paid_value / paid
            rate = normalize(price.quantize(_RATE_QUANTUM, rounding=ROUND_HALF_EVEN))
        else:
            price = rate = Decimal(0)
        left = room(invoice, invoice.refunds, token, decimals)
        field = "amount"
        if request.amount is not None:
            if request.amount == 0:
                raise InvalidInput("amount", "must be greater than 0")
            units = to_base_units(request.amount, decimals, "amount")
        elif request.vs_amount is not None:
            field = "vsAmount"
            if request.vs_amount == 0:
                raise InvalidInput("vsAmount", "must be greater than 0")
            if price == 0:
                raise InvalidInput(
                    "vsAmount", f"the rate of {token_id} is 0: state the amount in the token"
                )
            if source is RateSource.PAYMENT:  # exact: no rounded rate in between
                tokens = request.vs_amount * paid / paid_value
            else:
                tokens = request.vs_amount / price
            units = _floor_units(tokens, decimals)
            if units == 0:
                raise InvalidInput("vsAmount", "is less than one base unit of the token")
        else:
            units = left
        if left == 0:
            raise InvalidInput(field, f"nothing is left to refund in {token_id}")
        if units > left:
            have = to_text(from_base_units(left, decimals))
            raise InvalidInput(field, f"more than the {have} left to refund in {token_id}")
        amount = from_base_units(units, decimals)
        if request.vs_amount is not None:
            vs_value = normalize(request.vs_amount)
        else:
            vs_value = value_at(price, amount)
    return RefundPlan(token, to, units, amount, vs_value, rate, source)


def check_room(invoice: Invoice, plan: RefundPlan, decimals: int) -> None:
    """Re-checked with the invoice locked, just before the refund is recorded: the refunds
    made since the plan (``invoice.refunds``) may have taken what it counted on."""
    check_refundable(invoice)
    left = room(invoice, invoice.refunds, plan.token, decimals)
    if plan.units > left:
        have = to_text(from_base_units(left, decimals))
        raise Conflict(
            f"Conflict: only {have} is left to refund in {invoice.chain_id}:{plan.token} "
            "since another refund was made: ask again"
        )


def new_refund(invoice: Invoice, plan: RefundPlan, now: int) -> Refund:
    """The pending refund ``plan`` records for ``invoice``."""
    return Refund(
        id=str(uuid.uuid4()),
        guid=invoice.guid,
        owner=invoice.owner,
        chain_id=invoice.chain_id,
        token=plan.token,
        to=plan.to,
        amount=plan.amount,
        vs_value=plan.vs_value,
        rate=plan.rate,
        rate_source=plan.rate_source,
        status=refund_machine.INITIAL,
        created_at=now,
    )


def match_withdrawals(
    pending: Sequence[Refund], withdrawals: Sequence[Transaction]
) -> tuple[list[Transaction], list[Refund | None]]:
    """Which of ``withdrawals`` (the watcher's, in chain order) pay which ``pending`` refund.

    A withdrawal pays a refund when chain, owner, token, recipient and amount agree; the
    oldest such refund is taken first, and each at most once. Returns the withdrawals to
    record -- those that pay a refund as ``refund`` transactions naming its invoice and
    valued at the refund's vsValue -- and, beside each, the refund it confirms or None."""
    left = list(pending)
    records: list[Transaction] = []
    confirmed: list[Refund | None] = []
    for record in withdrawals:
        match = next(
            (
                r
                for r in left
                if record.type is TxType.WITHDRAW
                and r.chain_id == record.chain_id
                and r.owner == record.owner
                and r.token == record.token
                and r.to == record.to
                and r.amount == record.amount
            ),
            None,
        )
        if match is None:
            records.append(record)
            confirmed.append(None)
            continue
        left.remove(match)
        records.append(
            attrs.evolve(record, type=TxType.REFUND, guid=match.guid, vs_value=match.vs_value)
        )
        confirmed.append(
            refund_machine.confirm(match, record.tx_hash, record.log_index, record.timestamp)
        )
    return records, confirmed


__all__ = [
    "BuiltRefund",
    "CreateRefund",
    "NewRefund",
    "RefundPlan",
    "check_refundable",
    "check_room",
    "match_withdrawals",
    "new_refund",
    "plan_refund",
    "recipient",
    "refund_token",
    "room",
]
