"""Handlers of the merchant profile (docs/interface.md §Merchant profile): session-signed,
owner-scoped, like the webhook delivery log."""

from __future__ import annotations

from ..domain.records import Json
from .requests import MerchantProfileQuery, SetMerchantProfile
from .routing import Call


def set_profile(call: Call) -> Json:
    """POST /merchant/profile: replace the owner's name, logo URL and support contact."""
    request = call.read(SetMerchantProfile)
    owner = call.owner_scope(request.owner_address, "ownerAddress")
    return call.gateway.merchant.set(owner, request).to_wire()


def get_profile(call: Call) -> Json:
    """GET /merchant/profile: the owner's profile; 404 before the first set."""
    query = call.read(MerchantProfileQuery)
    owner = call.owner_scope(query.owner)
    return call.gateway.merchant.get(owner).to_wire()
