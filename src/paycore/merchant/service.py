"""``Gateway.merchant``: set and read an owner's profile, and find the one an invoice shows."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..errors import NotFound
from .profile import MerchantProfile, NewProfile, parse_profile

if TYPE_CHECKING:  # the storage contract names MerchantProfile: importing it here would loop
    from ..storage import Storage

#: Longest invoice id looked up for the page: ours are UUIDs; anything much longer is not one.
MAX_GUID = 100


class MerchantProfiles:
    """The owner's calls (set, get) and the checkout page's read (``for_invoice``)."""

    def __init__(self, storage: Storage, now: Callable[[], int]) -> None:
        self._storage = storage
        self._now = now

    def set(self, owner: str, request: NewProfile) -> MerchantProfile:
        """Replace ``owner``'s profile; a bad field is a 400 before anything is written."""
        profile = parse_profile(request, owner, self._now())
        with self._storage.transaction() as tx:
            tx.put_merchant_profile(profile)
        return profile

    def get(self, owner: str) -> MerchantProfile:
        with self._storage.transaction() as tx:
            profile = tx.get_merchant_profile(owner)
        if profile is None:
            raise NotFound(f"no merchant profile for {owner}")
        return profile

    def for_invoice(self, guid: str) -> MerchantProfile | None:
        """The profile of the invoice's owner, for the checkout page; ``None`` when either
        is missing (the page then names the owner by address, as before)."""
        if not guid or len(guid) > MAX_GUID:
            return None
        with self._storage.transaction() as tx:
            invoice = tx.get_invoice(guid)
            return None if invoice is None else tx.get_merchant_profile(invoice.owner)
