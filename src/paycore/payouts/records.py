"""The records of a payout batch: the batch (who pays, on which chain, through which
contract, with which transactions) and one payout per recipient row, each with its own state.

A payout is ``pending`` from the moment its batch is built until the transaction carrying it
is mined: ``confirmed`` when that transaction succeeded (the batch contract pays all of its
rows or none), ``failed`` when it reverted. Only ``pending`` moves, and only once: a second
confirm of the same transaction finds nothing pending and changes nothing.
"""

from __future__ import annotations

from decimal import Decimal
from enum import StrEnum

import attrs

from ..domain.changes import EventType
from ..domain.money import to_text
from ..domain.records import Json


class PayoutStatus(StrEnum):
    PENDING = "pending"
    CONFIRMED = "confirmed"
    FAILED = "failed"


#: The outbox event types of a payout's settlement (``paycore.domain.changes``).
PAYOUT_CONFIRMED: str = EventType.PAYOUT_CONFIRMED.value
PAYOUT_FAILED: str = EventType.PAYOUT_FAILED.value


@attrs.frozen
class Payout:
    """One recipient row. ``line`` is its line in what the merchant sent (the CSV's line,
    or the row's position from 1), ``call`` the index of the batch transaction paying it,
    ``value`` the amount in the token's base units."""

    batch_id: str
    line: int
    to: str
    token: str
    amount: Decimal
    value: int
    reference: str
    call: int
    status: PayoutStatus = PayoutStatus.PENDING
    tx_hash: str | None = None
    updated_at: int = 0

    def to_wire(self) -> Json:
        return {
            "batchId": self.batch_id,
            "line": self.line,
            "to": self.to,
            "token": self.token,
            "amount": to_text(self.amount),
            "value": str(self.value),
            "reference": self.reference,
            "transaction": self.call,
            "status": self.status.value,
            "txHash": self.tx_hash,
            "updatedAt": self.updated_at,
        }


@attrs.frozen
class PayoutBatch:
    """One batch. ``calls`` holds, per transaction of the batch, the keccak-256 of its
    calldata (0x hex): the confirm step accepts a transaction hash only when the mined
    transaction carries exactly one of these, sent by ``owner`` to ``contract``."""

    id: str
    owner: str
    chain_id: int
    contract: str
    calls: tuple[str, ...]
    created_at: int

    def to_wire(self) -> Json:
        return {
            "id": self.id,
            "owner": self.owner,
            "chainId": self.chain_id,
            "contract": self.contract,
            "transactions": len(self.calls),
            "createdAt": self.created_at,
        }
