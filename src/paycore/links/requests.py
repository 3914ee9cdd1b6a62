"""What creating a payment link asks for (POST /link), declared once for the typed request
layer (``paycore.api.wire``) and the OpenAPI document, beside the service that checks it."""

from __future__ import annotations

from typing import Any

import attrs

from ..domain.fields import Amount, ChainId, Token, Uint
from ..domain.invoices import MAX_ACCEPTED_TOKENS, MAX_DESCRIPTION


@attrs.frozen
class NewLink:
    """What a merchant asks for when creating a payment link (POST /link). Give ``amount``,
    or ``minAmount`` and ``maxAmount``; the rest is what POST /invoice takes, checked by
    the same rules (``paycore.domain.invoices.parse_new_invoice``)."""

    chain_id: ChainId = attrs.field(metadata={"doc": "the chain its invoices are paid on"})
    description: str = attrs.field(
        metadata={"doc": "shown to the buyer", "schema": {"maxLength": MAX_DESCRIPTION}}
    )
    accepted_tokens: tuple[Token, ...] = attrs.field(
        metadata={
            "doc": "tokens its invoices may be paid in, on chainId",
            "schema": {"minItems": 1, "maxItems": MAX_ACCEPTED_TOKENS},
        }
    )
    amount: Amount | None = attrs.field(
        default=None, metadata={"doc": "fixed fiat value of every invoice (0: a tip jar)"}
    )
    min_amount: Amount | None = attrs.field(
        default=None, metadata={"doc": "lowest amount a buyer may choose (above 0)"}
    )
    max_amount: Amount | None = attrs.field(
        default=None, metadata={"doc": "highest amount a buyer may choose"}
    )
    token: Token | None = attrs.field(
        default=None, metadata={"doc": "the token shown first; one of acceptedTokens"}
    )
    vs_currency: str | None = attrs.field(
        default=None, metadata={"doc": "a configured fiat currency"}
    )
    deadline_secs: Uint | None = attrs.field(
        default=None, metadata={"doc": "validity of each invoice, seconds"}
    )
    data: dict[str, Any] | None = attrs.field(
        default=None, metadata={"doc": "copied into each invoice's data, with paymentLink"}
    )
    expires_at: Uint | None = attrs.field(
        default=None, metadata={"doc": "unix seconds after which the link makes no invoice"}
    )
    max_uses: Uint | None = attrs.field(
        default=None, metadata={"doc": "invoices the link may make at most"}
    )
