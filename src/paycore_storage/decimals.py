"""Exact Decimal <-> column value conversion.

``paycore.domain.money.normalize`` works in the caller's decimal context, whose default precision of
28 digits would round a 48-digit amount (30 integer places + 18 fractional). Storage must hand
back exactly what it was given, so it canonicalises inside a context wide enough for any
value a NUMERIC(60, 30) column can hold.
"""

from __future__ import annotations

from decimal import Context, Decimal, localcontext
from typing import Any

from paycore.domain.money import normalize, plain_text

_WIDE = Context(prec=80)


def exact(value: Any) -> Decimal:
    """A stored number (Decimal from the driver, or text) as a canonical Decimal: no trailing
    zeros from NUMERIC's fixed scale, no exponent, never rounded."""
    with localcontext(_WIDE):
        return normalize(value if isinstance(value, Decimal) else Decimal(value))


def exact_text(value: Decimal) -> str:
    """Plain positional text: never rounded, never an exponent."""
    return plain_text(value)
