"""Exact Decimal <-> column value conversion.

Storage must hand back exactly what it was given. Building a Decimal from text or taking
the driver's Decimal is exact in any context, and ``paycore.domain.money.normalize`` passes
its own 80-digit context to each operation, wide enough for any value a NUMERIC(60, 30)
column holds (48 digits); so no context is entered here (entering one cost three times the
conversion, on every stored amount read).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from paycore.domain.money import normalize, plain_text


def exact(value: Any) -> Decimal:
    """A stored number (Decimal from the driver, or text) as a canonical Decimal: no trailing
    zeros from NUMERIC's fixed scale, no exponent, never rounded."""
    return normalize(value if isinstance(value, Decimal) else Decimal(value))


def exact_text(value: Decimal) -> str:
    """Plain positional text: never rounded, never an exponent."""
    return plain_text(value)
