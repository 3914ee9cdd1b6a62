"""Records of the owner's management settings: app keys and e-mail notification addresses.

Kept apart from ``domain.records`` (the interface's invoice-side records) the way
``webhooks.records`` and ``chains.records`` are: storage and the management operations
share them, nothing else does.
"""

from __future__ import annotations

from enum import StrEnum

import attrs

from ..domain.records import Json

#: docs/interface.md §Limits and ``PaycoreWallet.MAX_APP_KEYS``: one number, on chain and off.
MAX_APP_KEYS = 10


@attrs.frozen
class AppKey:
    """A key that acts for ``owner`` (docs/interface.md §App keys). An address is the app key of one
    owner at most, so a signer names its owner without the body having to."""

    address: str
    owner: str
    added_at: int
    added_by: str

    def to_wire(self) -> Json:
        return {"address": self.address, "addedAt": self.added_at, "addedBy": self.added_by}


class AppKeyAdd(StrEnum):
    """What ``StorageTx.add_app_key`` did."""

    ADDED = "added"
    EXISTS = "exists"  # already this owner's app key: nothing changed
    TAKEN = "taken"  # another owner's app key: nothing changed
    FULL = "full"  # the owner already holds MAX_APP_KEYS: nothing changed


@attrs.frozen
class EmailSetting:
    """Where deposit and withdrawal notices of ``owner`` on ``chain_id`` go.

    ``enabled`` is the operator's switch (docs/interface.md: sending is enabled by the
    operator); a merchant can set the address but never turn sending on.
    ``enabled_at`` is when the operator last turned it on: payments older than that are
    not announced, so enabling does not flood an inbox with history.
    """

    owner: str
    chain_id: int
    email: str
    enabled: bool = False
    updated_at: int = 0
    enabled_at: int | None = None

    def to_wire(self) -> Json:
        return {
            "ownerAddress": self.owner,
            "chainId": self.chain_id,
            "emailAddress": self.email,
            "enabled": self.enabled,
        }
