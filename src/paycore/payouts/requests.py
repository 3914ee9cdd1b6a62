"""The HTTP requests of batch payouts (docs/payouts.md), declared once for parsing and the
OpenAPI document (``paycore.api.wire``). Rows are read by ``paycore.payouts.rows``, which
checks all of them and names each bad one by its line."""

from __future__ import annotations

from typing import Any

import attrs

from ..domain.fields import Address, ChainId
from .rows import MAX_ROWS
from .service import MAX_HASHES

_OWNER = "merchant address; must match the session key's owner"


@attrs.frozen
class CreatePayouts:
    """POST /payouts: give ``rows`` or ``csv``, not both."""

    chain_id: ChainId = attrs.field()
    owner: Address | None = attrs.field(default=None, metadata={"doc": _OWNER})
    rows: tuple[dict[str, Any], ...] | None = attrs.field(
        default=None,
        metadata={
            "doc": "recipients: objects with address, token, amount and optionally reference",
            "schema": {"maxItems": MAX_ROWS},
        },
    )
    csv: str | None = attrs.field(
        default=None,
        metadata={"doc": "recipients as CSV text: a header line (address,token,amount,reference)"},
    )


@attrs.frozen
class PayoutsQuery:
    """GET /payouts/{id}."""

    owner: Address | None = attrs.field(default=None, metadata={"doc": _OWNER})


@attrs.frozen
class ConfirmPayouts:
    """POST /payouts/confirm: the batch is named in the signed body."""

    batch_id: str = attrs.field(metadata={"doc": "the batch's id, as POST /payouts gave it"})
    tx_hashes: tuple[str, ...] = attrs.field(
        metadata={
            "doc": "hashes of the batch's transactions the owner sent",
            "schema": {"maxItems": MAX_HASHES},
        }
    )
    owner: Address | None = attrs.field(default=None, metadata={"doc": _OWNER})
