"""What a chain backend provides for batch payouts: the unsigned transactions that pay a
batch's rows, and the facts of a mined transaction the confirm step settles payouts from.

Kept chain-neutral so the service does not know EVM from Tron: an EVM backend builds
``PaycoreBatchPay.pay`` calls (``paycore.chains.evm.payouts``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import attrs

from ..domain.records import Json
from ..domain.registry import TokenMeta
from .rows import PayoutRow


@attrs.frozen
class BuiltCall:
    """One batch transaction: the rows it pays, the unsigned transaction, and the
    keccak-256 of its calldata (0x hex), by which a mined transaction is recognised."""

    rows: tuple[PayoutRow, ...]
    transaction: Json
    data_hash: str


@attrs.frozen
class BuiltPayouts:
    """``approvals``: the ERC20 ``approve`` transactions the owner sends first (one per
    token whose allowance to the batch contract is short), then ``calls`` in order."""

    approvals: tuple[Json, ...]
    calls: tuple[BuiltCall, ...]


@attrs.frozen
class MinedCall:
    """A mined transaction as the confirm step needs it. ``success``: its receipt's status."""

    sender: str
    to: str | None
    data_hash: str
    success: bool


@runtime_checkable
class PayoutBackend(Protocol):
    def build_payouts(
        self, chain_id: int, owner: str, contract: str, ref: bytes, rows: Sequence[PayoutRow]
    ) -> BuiltPayouts:
        """The unsigned transactions paying ``rows`` from ``owner`` through ``contract``,
        as few as the chain's block gas limit allows; ``ref`` (16 bytes) tags each call.
        ``InvalidInput`` when the owner's funds cannot cover the rows."""

    def token_facts(self, chain_id: int, tokens: Sequence[str]) -> dict[str, TokenMeta]:
        """Decimals and symbol of ``tokens`` as their contracts report them (those that
        answer)."""

    def mined_call(self, chain_id: int, tx_hash: str) -> MinedCall | None:
        """The mined transaction ``tx_hash``, or None while it is unknown or not mined."""
