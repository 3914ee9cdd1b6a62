"""The merchant's part of the storage contract (docs/interface.md: app keys, e-mail notices,
wallet indexes): what paycore keeps of an owner besides invoices and keys.

What storage owes:

- ``allocate_wallet_index`` never hands out the same index twice for an (owner, chain).
- ``add_app_key`` holds the owner's cap however many adds race.
- ``claim_notice`` is ``True`` once per key, across processes: a notice goes out once.
- The ``put_*`` methods replace the row of the same key: writing one twice is writing it once.
"""

from __future__ import annotations

from typing import Protocol

from ...management.records import AppKey, AppKeyAdd, EmailSetting
from ...merchant.profile import MerchantProfile


class MerchantProfiles(Protocol):
    """``StorageTx``'s merchant profiles: the name, logo and support contact of the checkout
    page."""

    def get_merchant_profile(self, owner: str) -> MerchantProfile | None:
        """``owner``'s name, logo and support contact for the checkout page, or ``None``."""

    def put_merchant_profile(self, profile: MerchantProfile) -> None:
        """Insert, or replace every field of the same owner's profile."""


class Owners(Protocol):
    """``StorageTx``'s question whether paycore knows an owner at all."""

    def owner_is_known(self, owner: str) -> bool:
        """Whether paycore has anything of ``owner``: an invoice, a session key, a webhook,
        an app key, an e-mail setting or an allocated wallet index."""


class AppKeys(Protocol):
    """``StorageTx``'s app keys: the addresses an owner lets sign for it, up to a cap."""

    def get_app_key(self, address: str) -> AppKey | None:
        """The app key record of ``address`` (whoever's it is), or ``None``."""

    def app_keys_of(self, owner: str) -> list[AppKey]:
        """``owner``'s app keys, oldest first (added_at, then address)."""

    def add_app_key(self, key: AppKey, cap: int) -> AppKeyAdd:
        """Add ``key`` unless its address is already an app key (of this owner: EXISTS; of
        another: TAKEN) or the owner holds ``cap`` keys (FULL). Atomic against concurrent
        adds for the same owner: the cap holds however many race."""

    def remove_app_key(self, owner: str, address: str) -> bool:
        """Remove ``owner``'s app key ``address``; ``False`` if it was not one."""


class EmailSettings(Protocol):
    """``StorageTx``'s e-mail settings: an owner's notice address per chain, and the operator's
    switch."""

    def get_email(self, owner: str, chain_id: int) -> EmailSetting | None:
        """``owner``'s e-mail setting for ``chain_id``, or ``None``."""

    def emails_of(self, owner: str) -> list[EmailSetting]:
        """Every e-mail setting of ``owner``, by chain id."""

    def put_email(self, setting: EmailSetting) -> None:
        """Insert, or replace the setting of the same (owner, chain_id)."""

    def delete_email(self, owner: str, chain_id: int) -> bool:
        """Remove ``owner``'s setting for ``chain_id``; ``False`` if there was none."""

    def enable_emails(
        self, owner: str, chain_id: int | None, enabled: bool, now: int
    ) -> list[EmailSetting]:
        """The operator's switch: set ``enabled`` on ``owner``'s setting of ``chain_id``
        (every chain when ``None``); turning one on stamps ``enabled_at = now``, turning on
        one already on leaves its stamp. Returns the settings as they now are."""


class WalletIndexes(Protocol):
    """``StorageTx``'s smart-wallet deposit indexes: allocated once, disabled and enabled again."""

    def allocate_wallet_index(self, owner: str, chain_id: int) -> int:
        """The owner's next unused index on the chain: 0, 1, 2, ..."""

    def set_wallet_index_disabled(
        self, owner: str, chain_id: int, index: int, disabled: bool, now: int
    ) -> bool:
        """Record ``index`` as left out of (``disabled``) or back in withdrawal address
        selection; returns whether that changed anything."""

    def disabled_wallet_indexes(self, owner: str, chain_id: int) -> list[int]:
        """``owner``'s disabled indexes on ``chain_id``, ascending."""


class Notices(Protocol):
    """``StorageTx``'s once-only notices (one deposit's e-mail, ...)."""

    def claim_notice(self, key: str, now: int) -> bool:
        """``True`` the first time ``key`` (one notice, e.g. one deposit's e-mail) is
        claimed, ``False`` ever after, across processes: a notice goes out once."""
