"""A transfer the watcher has seen mined but not yet ``confirmations`` deep: "payment
detected, confirming (n of m)" (docs/chains.md, Detection).

Provisional on purpose: a detected transfer is never a payment, never counts toward
``paidAmount`` and never moves an invoice's status; a reorg that drops its block drops it,
and once it is deep enough the watcher attributes it as it would any deposit (it is then a
``Payment`` and leaves the list). The watcher replaces a chain's whole list each pass
(``StorageTx.replace_detected``), so what storage holds is what the chain's unconfirmed
head range held at the last pass.

It is its own record, not part of the invoice's stored row: the gateway attaches the
detected transfers of an invoice to every invoice it hands out (``Invoice.detected``), as it
does refunds.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import attrs

from .money import to_text

Json = dict[str, Any]

#: The key a detected transfer is stored under, as a recorded deposit's transaction row.
DetectedKey = tuple[int, str, int, str]

#: Seconds after the watcher last saw it that a detected transfer is no longer shown: its
#: chain's watcher has stopped (or detection was turned off), so nothing keeps it current.
STALE_AFTER = 600


@attrs.frozen
class Detected:
    """One transfer to a watched deposit address, mined ``confirmations`` blocks deep
    (1: in the head block) out of the ``required`` the chain attributes at.

    ``guid`` is the invoice it would pay if it were confirmed now (the watcher picks it as
    attribution would); ``to`` is the deposit address, ``amount`` whole tokens."""

    chain_id: int
    tx_hash: str
    log_index: int  # -1 for a native-coin transfer, as in Payment
    token: str
    from_: str
    to: str
    amount: Decimal
    block_number: int
    block_hash: str
    timestamp: int
    confirmations: int
    required: int
    guid: str
    #: When the watcher last saw it (unix seconds).
    seen_at: int = 0

    @property
    def key(self) -> DetectedKey:
        return (self.chain_id, self.tx_hash, self.log_index, self.token)

    def to_wire(self) -> Json:
        """The element of ``Invoice.detected`` (docs/interface.md §Detected)."""
        return {
            "txHash": self.tx_hash,
            "logIndex": self.log_index,
            "chainId": str(self.chain_id),
            "token": self.token,
            "from": self.from_,
            "amount": to_text(self.amount),
            "blockNumber": self.block_number,
            "confirmations": self.confirmations,
            "required": self.required,
        }

    @classmethod
    def from_wire(cls, data: Json, *, guid: str = "", to: str = "") -> Detected:
        """The element ``to_wire`` wrote; what the wire leaves out (the invoice, the
        address, the block's hash and time) is given or left empty."""
        return cls(
            chain_id=int(data["chainId"]),
            tx_hash=data["txHash"],
            log_index=int(data["logIndex"]),
            token=data["token"],
            from_=data["from"],
            to=to,
            amount=Decimal(data["amount"]),
            block_number=int(data["blockNumber"]),
            block_hash="",
            timestamp=0,
            confirmations=int(data["confirmations"]),
            required=int(data["required"]),
            guid=guid,
        )
