"""What the subscription calls ask for, declared once for the typed request layer
(``paycore.api.wire``) and the OpenAPI document, beside the service that checks them."""

from __future__ import annotations

import attrs

from ..domain.fields import Address, Amount, ChainId, Token, Uint
from ..domain.invoices import MAX_ACCEPTED_TOKENS
from ..domain.subscriptions import MAX_EMAIL, MAX_PLAN_NAME, MAX_REFERENCE

_OWNER = "merchant address; must match the session key's owner"


@attrs.frozen
class NewPlan:
    """A plan (POST /plan): what every period costs, how long it lasts, its trial and grace."""

    name: str = attrs.field(
        metadata={"doc": "shown to the subscriber", "schema": {"maxLength": MAX_PLAN_NAME}}
    )
    amount: Amount = attrs.field(metadata={"doc": "price of one period, in currency"})
    chain_id: ChainId = attrs.field(metadata={"doc": "the chain its invoices are paid on"})
    accepted_tokens: tuple[Token, ...] = attrs.field(
        metadata={
            "doc": "tokens its invoices may be paid in, on chainId",
            "schema": {"minItems": 1, "maxItems": MAX_ACCEPTED_TOKENS},
        }
    )
    period_unit: str = attrs.field(
        metadata={"doc": "`day` or `month`", "schema": {"enum": ["day", "month"]}}
    )
    period_count: Uint = attrs.field(metadata={"doc": "days or months per period (1 or more)"})
    currency: str | None = attrs.field(
        default=None, metadata={"doc": "a configured fiat currency; the default one if absent"}
    )
    trial_days: Uint | None = attrs.field(
        default=None, metadata={"doc": "free days before the first period (default 0)"}
    )
    grace_days: Uint | None = attrs.field(
        default=None,
        metadata={"doc": "days a period may stay unpaid after it is due (default 0)"},
    )
    owner_address: Address | None = attrs.field(default=None, metadata={"doc": _OWNER})


@attrs.frozen
class NewSubscription:
    """A subscriber on a plan (POST /subscription)."""

    plan_id: str = attrs.field(metadata={"doc": "the plan's id", "schema": {"maxLength": 64}})
    reference: str = attrs.field(
        metadata={
            "doc": "the merchant's own reference (a customer id)",
            "schema": {"maxLength": MAX_REFERENCE},
        }
    )
    email: str | None = attrs.field(
        default=None,
        metadata={"doc": "the subscriber's e-mail address", "schema": {"maxLength": MAX_EMAIL}},
    )
    owner_address: Address | None = attrs.field(default=None, metadata={"doc": _OWNER})


@attrs.frozen
class OwnerPage:
    """A page of the owner's plans or subscriptions (GET /plans, GET /subscriptions)."""

    owner: Address | None = attrs.field(default=None, metadata={"doc": _OWNER})
    offset: Uint | None = attrs.field(
        default=None, metadata={"doc": "zero-based position of the first item"}
    )
    limit: Uint | None = attrs.field(default=None, metadata={"doc": "page size, at most 50"})


@attrs.frozen
class SubscriptionId:
    """One of the owner's subscriptions (POST /subscription/cancel)."""

    id: str = attrs.field(metadata={"doc": "the subscription's id", "schema": {"maxLength": 64}})
    owner_address: Address | None = attrs.field(default=None, metadata={"doc": _OWNER})


@attrs.frozen
class SubscriptionQuery:
    """GET /subscriptions/{id}: who asks."""

    owner: Address | None = attrs.field(default=None, metadata={"doc": _OWNER})
