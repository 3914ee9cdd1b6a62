"""The payment link record, and what using one can come to.

A link is the template of the invoices it makes: chain, accepted tokens, description,
currency, validity and the merchant's data are copied into each, with a fixed ``amount``
or one the buyer chooses between ``min_amount`` and ``max_amount``. Money is Decimal;
times are unix seconds.
"""

from __future__ import annotations

from decimal import Decimal
from enum import StrEnum

import attrs

from ..domain.money import to_text
from ..domain.records import Json


class LinkUse(StrEnum):
    """What ``StorageTx.use_payment_link`` came to."""

    OPENED = "opened"  # counted: the caller makes the invoice in the same transaction
    UNKNOWN = "unknown"
    DISABLED = "disabled"
    EXPIRED = "expired"
    USED_UP = "usedUp"  # max_uses reached
    BUSY = "busy"  # the link's rate window is full


@attrs.frozen
class PaymentLink:
    """A reusable payment link. ``uses`` counts the invoices it has made; ``disabled_at``
    is set once by the owner and never cleared."""

    id: str
    owner: str
    created_at: int
    chain_id: int
    description: str
    accepted_tokens: tuple[str, ...]
    token: str  # the display token of each invoice
    vs_currency: str
    amount: Decimal | None = None  # fixed; None when the buyer chooses
    min_amount: Decimal | None = None
    max_amount: Decimal | None = None
    deadline_secs: int | None = None  # each invoice's validity; None: the default
    data: Json = attrs.field(factory=dict)
    expires_at: int | None = None
    max_uses: int | None = None
    uses: int = 0
    disabled_at: int | None = None

    @property
    def fixed(self) -> bool:
        """Whether every invoice is for ``amount``; otherwise the buyer picks one."""
        return self.amount is not None

    def state(self, now: int) -> str:
        """``active``, ``disabled``, ``expired`` or ``usedUp``, in that order of precedence."""
        if self.disabled_at is not None:
            return "disabled"
        if self.expires_at is not None and now >= self.expires_at:
            return "expired"
        if self.max_uses is not None and self.uses >= self.max_uses:
            return "usedUp"
        return "active"

    def to_wire(self, url: str, now: int) -> Json:
        def money(value: Decimal | None) -> str | None:
            return None if value is None else to_text(value)

        return {
            "id": self.id,
            "url": url,
            "owner": self.owner,
            "createdAt": self.created_at,
            "chainId": self.chain_id,
            "description": self.description,
            "acceptedTokens": list(self.accepted_tokens),
            "token": self.token,
            "vsCurrency": self.vs_currency,
            "amount": money(self.amount),
            "minAmount": money(self.min_amount),
            "maxAmount": money(self.max_amount),
            "deadlineSecs": self.deadline_secs,
            "data": self.data,
            "expiresAt": self.expires_at,
            "maxUses": self.max_uses,
            "uses": self.uses,
            "disabledAt": self.disabled_at,
            "state": self.state(now),
        }
