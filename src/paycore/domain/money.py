"""Decimal parsing for money. Floats never enter arithmetic; odd numerals never enter storage.

``Decimal("NaN")``, ``Decimal("1e400")`` and ``Decimal("-0")`` are all valid Python decimals
that a payment system must refuse, so every amount from outside comes through here.
"""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Context, Decimal, InvalidOperation, localcontext

from ..errors import InvalidInput

#: Largest magnitude accepted from a request: 10**30 is beyond any fiat amount or token supply
#: expressed in whole units, and keeps every value inside a NUMERIC(60, 30) column.
MAX_AMOUNT = Decimal(10) ** 30
#: Most fractional digits kept: ERC20 tokens use at most 18, fiat far fewer.
MAX_SCALE = 18
#: Arithmetic precision for money: 30 integer + 30 fractional digits and then some. Python's
#: default 28 digits would round (or refuse) amounts this module itself accepts.
MONEY_CONTEXT = Context(prec=80)
_ONE = Decimal(1)
#: Fractional digits of a vsValue. Eight keeps sub-cent payments visible in any fiat.
VS_PLACES = 8
_QUANTUM = Decimal(1).scaleb(-VS_PLACES)
_MAX_SCALE_QUANTUM = Decimal(1).scaleb(-MAX_SCALE)


def parse_amount(raw: object, field: str, *, allow_zero: bool = True) -> Decimal:
    """Parse a decimal string (or int, or a Decimal a caller built) into a finite,
    non-negative Decimal within the limits below.

    Floats are refused on purpose: ``0.1`` as a JSON number has already lost precision.
    """
    if isinstance(raw, bool) or raw is None:
        raise InvalidInput(field, "must be a decimal string")
    if isinstance(raw, int | Decimal):
        text = str(raw)
    elif isinstance(raw, str):
        text = raw.strip()
    else:
        raise InvalidInput(field, "must be a decimal string")
    if not text or len(text) > 80:
        raise InvalidInput(field, "must be a decimal string")
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise InvalidInput(field, f"not a decimal number: {text[:40]!r}") from None
    if not value.is_finite():
        raise InvalidInput(field, "must be a finite number")
    if value.is_signed() and value != 0:
        raise InvalidInput(field, "must not be negative")
    if value.copy_abs() >= MAX_AMOUNT:
        raise InvalidInput(field, "is too large")
    exponent = value.as_tuple().exponent
    assert isinstance(exponent, int)
    # The context passed to the one call that needs it, rather than entered for every
    # amount (as in ``normalize``).
    if -exponent > MAX_SCALE and value != value.quantize(_MAX_SCALE_QUANTUM, context=MONEY_CONTEXT):
        raise InvalidInput(field, f"has more than {MAX_SCALE} decimal places")
    if value == 0 and not allow_zero:
        raise InvalidInput(field, "must be greater than 0")
    return normalize(value)


def normalize(value: Decimal) -> Decimal:
    """Canonical form: no exponent notation, no trailing zeros, ``0`` for any zero."""
    if value == 0:
        return Decimal(0)
    # The context passed to each call rather than entered: the same arithmetic, without
    # the cost of a context switch on a path every deposit and wire record takes.
    value = value.normalize(MONEY_CONTEXT)
    exponent = value.as_tuple().exponent
    assert isinstance(exponent, int)
    if exponent > 0:
        value = value.quantize(_ONE, context=MONEY_CONTEXT)
    return value


def value_at(price: Decimal, amount: Decimal) -> Decimal:
    """``amount`` whole tokens at ``price``, rounded half-even to VS_PLACES, computed with
    enough precision that no digit of either operand is lost first. The result is in canonical
    form: the quantum's trailing zeros (``10.00000000``, or ``0E-8`` for a deposit worth less
    than the last place) would otherwise reach storage, and be kept by some backends only.
    Pure arithmetic, so the domain's refund rules use it too; ``paycore.prices.pricing``
    values deposits with it."""
    with localcontext(MONEY_CONTEXT):
        return normalize((amount * price).quantize(_QUANTUM, rounding=ROUND_HALF_EVEN))


def to_text(value: Decimal) -> str:
    """Wire form of a decimal: plain notation, never ``1E+3``."""
    return plain_text(normalize(value))


def plain_text(value: Decimal) -> str:
    """``value`` in positional notation, every digit kept, never rounded.

    ``str`` is that already unless it chose an exponent (a positive exponent, or more than
    six zeros after the point); ``format(.., "f")`` handles those. ``str`` first because
    Decimal's ``__format__`` parses its spec on every call and costs ten times as much, on a
    path every stored and sent amount takes."""
    text = str(value)
    return format(value, "f") if "E" in text else text


def from_base_units(units: int, decimals: int) -> Decimal:
    """Token base units (wei, SUN) to a whole-token Decimal, exactly."""
    return normalize(Decimal(units).scaleb(-decimals, MONEY_CONTEXT))


def to_base_units(amount: Decimal, decimals: int, field: str = "amount") -> int:
    """Whole-token Decimal to base units; refuses amounts finer than the token can carry."""
    with localcontext(MONEY_CONTEXT):
        scaled = amount.scaleb(decimals)
    if scaled != scaled.to_integral_value():
        raise InvalidInput(field, f"has more than {decimals} decimal places for this token")
    return int(scaled)
