"""Every request body and query of docs/interface.md, declared once.

Each class is what one endpoint reads (a POST's JSON body, or a GET's query; the routes
served by both methods take the same fields either way). ``paycore.api.wire`` parses a
request into its class -- refusing unknown fields and malformed values with a one-line 400
-- and derives the OpenAPI schema from the same declaration. Field names are the
attributes' camelCase unless a field says otherwise.

What a class checks is the shape of each value (an integer, an amount, an address as
written, a token id); what needs more than the value -- that a chain is configured, which
chain's address rules apply, who signed -- is the core's step, done with these typed
values.
"""

from __future__ import annotations

import attrs

from ..auth.registry import Deregistration, Registration
from ..domain.changes import ALL_TYPES
from ..domain.fields import Address, Amount, BigUint, ChainId, RawTx, Uint
from ..domain.invoices import CreateInvoice
from ..domain.paging import MAX_CURSOR
from ..domain.refunds import CreateRefund
from ..links.requests import NewLink
from ..management.requests import (
    AppKeyChange,
    AppKeysQuery,
    ChangeCallbackUrl,
    NewAppKey,
    SetEmailNotifications,
    WalletIndexChange,
)
from ..management.staking import Claim, StakeChange, StakingInfo
from ..merchant.profile import NewProfile
from ..payouts.requests import ConfirmPayouts as ConfirmPayouts
from ..payouts.requests import CreatePayouts as CreatePayouts
from ..payouts.requests import PayoutsQuery as PayoutsQuery
from ..webhooks.endpoints import MAX_ID as MAX_ENDPOINT_ID
from .wire import register

_OWNER = "merchant address; must match the session key's owner"
_WALLET_SIG = "EIP-191 signature of the owner's wallet, 0x hex"
#: A keyset page (``paycore.domain.paging``): opaque text the server issued, read there.
_CURSOR = {
    "doc": "keyset page: `first`, `last`, or a page's nextCursor or prevCursor",
    "schema": {"maxLength": MAX_CURSOR},
}


# -- invoices ------------------------------------------------------------------------------


# CreateInvoice and CreateRefund live in the domain, below the Gateway that takes them.
register(CreateInvoice)
register(CreateRefund)
# Batch payouts' requests live with them (paycore.payouts.requests).
register(CreatePayouts)
register(PayoutsQuery)
register(ConfirmPayouts)


@register
@attrs.frozen
class ChallengeRequest:
    address: Address = attrs.field(metadata={"doc": "the owner who will create the invoice"})


@register
@attrs.frozen
class InvoiceQuery:
    owner: Address | None = attrs.field(default=None, metadata={"doc": _OWNER})
    address: Address | None = attrs.field(
        default=None, metadata={"doc": "deposit address (public lookup)"}
    )
    chain_id: ChainId | None = attrs.field(default=None, metadata={"doc": "required with address"})
    offset: Uint | None = attrs.field(
        default=None, metadata={"doc": "zero-based position of the first item"}
    )
    limit: Uint | None = attrs.field(default=None, metadata={"doc": "page size"})
    cursor: str | None = attrs.field(default=None, metadata=_CURSOR)
    # Filters of the owner's list (search; docs/interface.md "Search and filters").
    status: tuple[str, ...] | None = attrs.field(
        default=None,
        metadata={"doc": "filter: some of init, partialPaid, paid, expired, comma-separated"},
    )
    created_from: Uint | None = attrs.field(
        default=None, metadata={"doc": "filter: created at or after (unix seconds)"}
    )
    created_to: Uint | None = attrs.field(
        default=None, metadata={"doc": "filter: created before (unix seconds)"}
    )
    token: str | None = attrs.field(
        default=None, metadata={"doc": "filter: token address", "schema": {"maxLength": 100}}
    )
    q: str | None = attrs.field(
        default=None,
        metadata={
            "doc": "filter: text in the description or data (an order id), 3-100 characters",
            "schema": {"maxLength": 100},
        },
    )

    def filtered(self) -> bool:
        """Whether any search filter is set (``chainId`` alone is the plain list's)."""
        fields = (self.status, self.created_from, self.created_to, self.token, self.q)
        return any(value is not None for value in fields)


@register
@attrs.frozen
class StatsQuery:
    start: Uint = attrs.field(metadata={"wire": "from", "doc": "unix seconds, inclusive"})
    end: Uint = attrs.field(
        metadata={"wire": "to", "doc": "unix seconds, exclusive; at most 366 days after from"}
    )
    owner: Address | None = attrs.field(default=None, metadata={"doc": _OWNER})
    currency: str | None = attrs.field(
        default=None,
        metadata={"doc": "a configured fiat currency; vs_currency by default"},
    )
    tz_offset: str | None = attrs.field(
        default=None,
        metadata={
            "doc": "minutes east of UTC the days are counted in, -840 to 840; 0 by default",
            "schema": {"pattern": "^-?[0-9]{1,3}$"},
        },
    )


@register
@attrs.frozen
class TransactionQuery:
    owner: Address | None = attrs.field(default=None, metadata={"doc": _OWNER})
    chain_id: ChainId | None = attrs.field(default=None, metadata={"doc": "one chain only"})
    offset: Uint | None = attrs.field(
        default=None, metadata={"doc": "zero-based position of the first item"}
    )
    limit: Uint | None = attrs.field(default=None, metadata={"doc": "page size"})
    cursor: str | None = attrs.field(default=None, metadata=_CURSOR)


@register
@attrs.frozen
class CancelRefund:
    """POST /refund/cancel."""

    refund_id: str = attrs.field(metadata={"doc": "the pending refund's id"})
    owner: Address | None = attrs.field(default=None, metadata={"doc": _OWNER})


@register
@attrs.frozen
class PricesQuery:
    vs_currency: str | None = attrs.field(
        default=None, metadata={"doc": "a configured fiat currency"}
    )


# -- events and sessions ---------------------------------------------------------------------


@register
@attrs.frozen
class PollEvents:
    """POST /poll/events without session headers: the legacy token (soft mode)."""

    owner_address: Address | None = attrs.field(default=None)
    token: str | None = attrs.field(default=None, metadata={"doc": "token from /poll/register"})


@register
@attrs.frozen
class OwnerSigned:
    """A wallet-signed body naming its owner: /poll/register, /webhook/get, /webhook/clear."""

    owner_address: Address = attrs.field()
    signature: str = attrs.field(metadata={"doc": _WALLET_SIG})


register(Registration)
register(Deregistration)


@register
@attrs.frozen
class PubkeysQuery:
    owner: Address = attrs.field(metadata={"doc": "merchant address"})


@register
@attrs.frozen
class RegisterCallback:
    url: str = attrs.field(metadata={"doc": "https URL the webhooks go to"})
    owner_address: Address | None = attrs.field(default=None, metadata={"doc": _OWNER})


@register
@attrs.frozen
class SetWebhook:
    owner_address: Address = attrs.field()
    url: str = attrs.field(metadata={"doc": "https URL the webhooks go to"})
    signature: str = attrs.field(metadata={"doc": _WALLET_SIG})


# -- the webhook delivery log (session-signed) --------------------------------------------


@register
@attrs.frozen
class DeliveryQuery:
    owner: Address | None = attrs.field(default=None, metadata={"doc": _OWNER})
    guid: str | None = attrs.field(default=None, metadata={"doc": "one invoice's deliveries"})
    status: str | None = attrs.field(
        default=None, metadata={"schema": {"enum": ["pending", "delivered", "failed"]}}
    )
    offset: Uint | None = attrs.field(
        default=None, metadata={"doc": "zero-based position of the first item"}
    )
    limit: Uint | None = attrs.field(default=None, metadata={"doc": "page size, at most 50"})
    endpoint: str | None = attrs.field(
        default=None,
        metadata={
            "doc": "one endpoint's deliveries (default: the /webhook/set URL's)",
            "schema": {"maxLength": MAX_ENDPOINT_ID},
        },
    )


@register
@attrs.frozen
class Redeliver:
    id: Uint = attrs.field(metadata={"doc": "the delivery's id, from GET /webhook/deliveries"})
    owner_address: Address | None = attrs.field(default=None, metadata={"doc": _OWNER})


@register
@attrs.frozen
class RedeliverFailed:
    since: Uint = attrs.field(
        metadata={"doc": "unix seconds: every failed delivery created since then"}
    )
    owner_address: Address | None = attrs.field(default=None, metadata={"doc": _OWNER})


# -- webhook endpoints (session-signed; docs/interface.md §Webhook endpoints) ---------------

_TYPES_SCHEMA = {"items": {"enum": sorted(ALL_TYPES)}, "minItems": 1, "maxItems": len(ALL_TYPES)}
_ENDPOINT_ID = {"doc": "the endpoint's id", "schema": {"maxLength": MAX_ENDPOINT_ID}}


@register
@attrs.frozen
class CreateEndpoint:
    url: str = attrs.field(metadata={"doc": "https URL the endpoint's deliveries go to"})
    types: tuple[str, ...] | None = attrs.field(
        default=None,
        metadata={
            "doc": "event types it is sent (default: the status changes)",
            "schema": _TYPES_SCHEMA,
        },
    )
    enabled: bool | None = attrs.field(default=None, metadata={"doc": "default true"})
    owner_address: Address | None = attrs.field(default=None, metadata={"doc": _OWNER})


@register
@attrs.frozen
class EndpointsQuery:
    owner: Address | None = attrs.field(default=None, metadata={"doc": _OWNER})


@register
@attrs.frozen
class UpdateEndpoint:
    id: str = attrs.field(metadata=_ENDPOINT_ID)
    url: str | None = attrs.field(default=None, metadata={"doc": "a new URL"})
    types: tuple[str, ...] | None = attrs.field(
        default=None, metadata={"doc": "the event types it is sent", "schema": _TYPES_SCHEMA}
    )
    enabled: bool | None = attrs.field(default=None, metadata={"doc": "false: send it nothing"})
    owner_address: Address | None = attrs.field(default=None, metadata={"doc": _OWNER})


@register
@attrs.frozen
class EndpointId:
    id: str = attrs.field(metadata=_ENDPOINT_ID)
    owner_address: Address | None = attrs.field(default=None, metadata={"doc": _OWNER})


# -- the merchant's identity on the checkout page --------------------------------------------


@register
@attrs.frozen
class SetMerchantProfile(NewProfile):
    """POST /merchant/profile: the whole profile, plus who claims to set it."""

    owner_address: Address | None = attrs.field(default=None, metadata={"doc": _OWNER})


@register
@attrs.frozen
class MerchantProfileQuery:
    owner: Address | None = attrs.field(default=None, metadata={"doc": _OWNER})


# -- the accounting export -----------------------------------------------------------------


@register
@attrs.frozen
class ExportQuery:
    owner: Address | None = attrs.field(default=None, metadata={"doc": _OWNER})
    start: Uint | None = attrs.field(
        default=None, metadata={"wire": "from", "doc": "unix seconds, inclusive; 0 by default"}
    )
    end: Uint | None = attrs.field(
        default=None, metadata={"wire": "to", "doc": "unix seconds, exclusive; open by default"}
    )
    format: str | None = attrs.field(
        default=None,
        metadata={"doc": "csv (default) or jsonl", "schema": {"enum": ["csv", "jsonl"]}},
    )
    records: tuple[str, ...] | None = attrs.field(
        default=None,
        metadata={"doc": "some of invoices, payments, refunds, withdrawals; all by default"},
    )


# -- payment links ---------------------------------------------------------------------------


@register
@attrs.frozen
class CreateLink(NewLink):
    """POST /link: the link's fields, plus who claims to create it."""

    owner_address: Address | None = attrs.field(default=None, metadata={"doc": _OWNER})


@register
@attrs.frozen
class LinksQuery:
    owner: Address | None = attrs.field(default=None, metadata={"doc": _OWNER})
    offset: Uint | None = attrs.field(
        default=None, metadata={"doc": "zero-based position of the first item"}
    )
    limit: Uint | None = attrs.field(default=None, metadata={"doc": "page size, at most 50"})


@register
@attrs.frozen
class DisableLink:
    id: str = attrs.field(metadata={"doc": "the link's id", "schema": {"maxLength": 64}})
    owner_address: Address | None = attrs.field(default=None, metadata={"doc": _OWNER})


@register
@attrs.frozen
class OpenLink:
    amount: Amount | None = attrs.field(
        default=None, metadata={"doc": "the buyer's amount, when the link lets them choose"}
    )


# -- salt-signed management calls (declared beside their service) ---------------------------

for _cls in (
    ChangeCallbackUrl,
    SetEmailNotifications,
    WalletIndexChange,
    AppKeyChange,
    NewAppKey,
    AppKeysQuery,
):
    register(_cls)


# -- staking (Ethereum; declared beside the helpers) --------------------------------------------

for _staking in (StakingInfo, StakeChange, Claim):
    register(_staking)


# -- smart-wallet helpers -----------------------------------------------------------------------


@register
@attrs.frozen
class OwnerChain:
    """/initWallet and /getBalances."""

    owner_address: Address = attrs.field()
    chain_id: ChainId = attrs.field()


@register
@attrs.frozen
class GetAddress:
    owner_address: Address = attrs.field()
    chain_id: ChainId = attrs.field()
    index: BigUint | None = attrs.field(
        default=None, metadata={"doc": "deposit index; required for contractType deposit"}
    )
    contract_type: str | None = attrs.field(
        default=None, metadata={"schema": {"enum": ["deposit", "wallet"]}}
    )


@register
@attrs.frozen
class DeployWallet:
    raw_tx: RawTx = attrs.field(metadata={"doc": "the signed deployment"})
    chain_id: ChainId = attrs.field()


@register
@attrs.frozen
class InitWithdraw:
    to: Address = attrs.field()
    owner_address: Address = attrs.field()
    chain_id: ChainId = attrs.field()
    token_address: Address | None = attrs.field(
        default=None, metadata={"doc": "token contract; the zero address for the coin"}
    )
    token: str | None = attrs.field(
        default=None, metadata={"doc": "alias of tokenAddress, or {chainId}:{address}"}
    )
    amount: Amount | None = attrs.field(
        default=None, metadata={"doc": "decimal amount, in place of value"}
    )
    value: BigUint | None = attrs.field(
        default=None, metadata={"doc": "base units, in place of amount"}
    )
    contract_type: str | None = attrs.field(
        default=None, metadata={"schema": {"enum": ["deposit", "wallet"]}}
    )


@register
@attrs.frozen
class History:
    owner_address: Address = attrs.field()
    chain_id: ChainId | None = attrs.field(default=None)
    offset: Uint | None = attrs.field(default=None)
    limit: Uint | None = attrs.field(default=None)


@register
@attrs.frozen
class Faucet:
    chain_id: ChainId = attrs.field()
    to: Address = attrs.field()


@register
@attrs.frozen
class QrQuery:
    data: str = attrs.field(metadata={"doc": "the link, at most 512 URI characters"})


__all__ = [
    "AppKeyChange",
    "AppKeysQuery",
    "CancelRefund",
    "ChallengeRequest",
    "ChangeCallbackUrl",
    "Claim",
    "CreateInvoice",
    "CreateLink",
    "CreateEndpoint",
    "DeliveryQuery",
    "EndpointId",
    "EndpointsQuery",
    "DisableLink",
    "ExportQuery",
    "CreateRefund",
    "DeployWallet",
    "Deregistration",
    "Faucet",
    "GetAddress",
    "History",
    "InitWithdraw",
    "InvoiceQuery",
    "LinksQuery",
    "NewAppKey",
    "OpenLink",
    "OwnerChain",
    "OwnerSigned",
    "PollEvents",
    "PricesQuery",
    "PubkeysQuery",
    "QrQuery",
    "Redeliver",
    "RedeliverFailed",
    "RegisterCallback",
    "Registration",
    "SetEmailNotifications",
    "SetWebhook",
    "UpdateEndpoint",
    "StakeChange",
    "StakingInfo",
    "TransactionQuery",
    "WalletIndexChange",
]
