"""The chain-neutral rules of building a batch, shared by every chain's payout backend:
the total per token, the refusal of a batch the owner cannot cover, the split into calls
and each call's ``batch`` tag. A backend only reads the chain and builds transactions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..domain.money import from_base_units, to_text
from ..domain.tokens import NATIVE
from ..errors import InvalidInput
from .rows import PayoutRow

#: Rows in one call at most, whatever the chain's limits: keeps one transaction small.
MAX_ROWS_PER_CALL = 400


def totals(rows: Sequence[PayoutRow]) -> dict[str, int]:
    """Base units each token pays over all ``rows``, tokens in their first row's order."""
    out: dict[str, int] = {}
    for row in rows:
        out[row.token] = out.get(row.token, 0) + row.value
    return out


def refuse_short(owner: str, token: str, needed: int, held: int, decimals: int) -> None:
    """400 when ``owner`` holds less of ``token`` than the batch pays: checked before
    anything is built, so the merchant is never asked to sign a call that must fail."""
    if held < needed:
        raise InvalidInput(
            "rows",
            f"the rows pay {to_text(from_base_units(needed, decimals))} of {token} "
            f"and {owner} holds {to_text(from_base_units(held, decimals))}",
        )


def token_decimals(native_decimals: int, metas: Mapping[str, object], token: str) -> int:
    """Decimals of ``token`` for a message: the coin's, a known token's, else 0."""
    if token == NATIVE:
        return native_decimals
    meta = metas.get(token)
    return int(getattr(meta, "decimals", 0)) if meta is not None else 0


def split(rows: Sequence[PayoutRow], per_call: int) -> list[tuple[PayoutRow, ...]]:
    """``rows`` in calls of at most ``per_call`` (and :data:`MAX_ROWS_PER_CALL`), in order."""
    per_call = max(1, min(MAX_ROWS_PER_CALL, per_call))
    return [tuple(rows[i : i + per_call]) for i in range(0, len(rows), per_call)]


def call_ref(ref: bytes, index: int) -> bytes:
    """The bytes32 ``batch`` argument of call ``index``: the batch's 16 bytes, then the
    index, so every call of every batch carries distinct calldata."""
    return ref[:16].ljust(16, b"\0") + index.to_bytes(16, "big")
