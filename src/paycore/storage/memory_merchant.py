"""The memory store's merchant records -- profiles, app keys, e-mail settings, wallet
indexes, notices (``paycore.storage.protocols.merchant``) -- mixed into its transaction
class.
"""

from __future__ import annotations

import attrs

from ..management.records import AppKey, AppKeyAdd, EmailSetting
from ..merchant.profile import MerchantProfile
from .memory_rows import MemoryTxBase


class MemoryMerchant(MemoryTxBase):
    """The merchant methods over the store's ``merchant_profiles``, ``app_keys``,
    ``emails``, ``wallet_indexes``, ``disabled_indexes`` and ``notices`` tables."""

    def get_merchant_profile(self, owner: str) -> MerchantProfile | None:
        return self._t.merchant_profiles.get(owner)

    def put_merchant_profile(self, profile: MerchantProfile) -> None:
        self._t.merchant_profiles[profile.owner] = profile

    def owner_is_known(self, owner: str) -> bool:
        t = self._t
        return (
            any(inv.owner == owner for inv in t.invoices.values())
            or any(key.owner == owner for key in t.session_keys.values())
            or owner in t.webhooks
            or any(o == owner for o, _id in t.endpoints)
            or owner in t.merchant_profiles
            or any(key.owner == owner for key in t.app_keys.values())
            or any(o == owner for o, _chain in t.emails)
            or any(o == owner for o, _chain in t.wallet_indexes)
        )

    def get_app_key(self, address: str) -> AppKey | None:
        return self._t.app_keys.get(address)

    def app_keys_of(self, owner: str) -> list[AppKey]:
        keys = [k for k in self._t.app_keys.values() if k.owner == owner]
        keys.sort(key=lambda k: (k.added_at, k.address))
        return keys

    def add_app_key(self, key: AppKey, cap: int) -> AppKeyAdd:
        existing = self._t.app_keys.get(key.address)
        if existing is not None:
            return AppKeyAdd.EXISTS if existing.owner == key.owner else AppKeyAdd.TAKEN
        if len(self.app_keys_of(key.owner)) >= cap:
            return AppKeyAdd.FULL
        self._t.app_keys[key.address] = key
        return AppKeyAdd.ADDED

    def remove_app_key(self, owner: str, address: str) -> bool:
        existing = self._t.app_keys.get(address)
        if existing is None or existing.owner != owner:
            return False
        del self._t.app_keys[address]
        return True

    def get_email(self, owner: str, chain_id: int) -> EmailSetting | None:
        return self._t.emails.get((owner, chain_id))

    def emails_of(self, owner: str) -> list[EmailSetting]:
        return sorted(
            (s for (o, _c), s in self._t.emails.items() if o == owner), key=lambda s: s.chain_id
        )

    def put_email(self, setting: EmailSetting) -> None:
        self._t.emails[(setting.owner, setting.chain_id)] = setting

    def delete_email(self, owner: str, chain_id: int) -> bool:
        return self._t.emails.pop((owner, chain_id), None) is not None

    def enable_emails(
        self, owner: str, chain_id: int | None, enabled: bool, now: int
    ) -> list[EmailSetting]:
        changed: list[EmailSetting] = []
        for setting in self.emails_of(owner):
            if chain_id is not None and setting.chain_id != chain_id:
                continue
            stamp = setting.enabled_at if setting.enabled and enabled else now
            updated = attrs.evolve(setting, enabled=enabled, enabled_at=stamp if enabled else None)
            self._t.emails[(owner, setting.chain_id)] = updated
            changed.append(updated)
        return changed

    def allocate_wallet_index(self, owner: str, chain_id: int) -> int:
        index = self._t.wallet_indexes.get((owner, chain_id), 0)
        self._t.wallet_indexes[(owner, chain_id)] = index + 1
        return index

    def set_wallet_index_disabled(
        self, owner: str, chain_id: int, index: int, disabled: bool, now: int
    ) -> bool:
        current = self._t.disabled_indexes.get((owner, chain_id), frozenset())
        wanted = current | {index} if disabled else current - {index}
        if wanted == current:
            return False
        self._t.disabled_indexes[(owner, chain_id)] = wanted
        return True

    def disabled_wallet_indexes(self, owner: str, chain_id: int) -> list[int]:
        return sorted(self._t.disabled_indexes.get((owner, chain_id), ()))

    def claim_notice(self, key: str, now: int) -> bool:
        if key in self._t.notices:
            return False
        self._t.notices.add(key)
        return True
