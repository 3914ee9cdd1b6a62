"""The merchant records' statements -- profiles, app keys, e-mail settings, wallet indexes,
notices (``paycore.storage.protocols.merchant``) -- mixed into ``SqlTx``.
``allocate_wallet_index`` is an upsert that increments and returns the counter;
``claim_notice`` an ``INSERT .. ON CONFLICT DO NOTHING`` whose returned row says who won.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, case, func, literal, select, update

from paycore.management.records import AppKey, AppKeyAdd, EmailSetting
from paycore.merchant.profile import MerchantProfile

from .engine import advisory_key
from .rows import plain_row
from .statements import SqlTxBase
from .tables import (
    app_keys,
    disabled_indexes,
    email_settings,
    invoices,
    merchant_profiles,
    notices,
    session_keys,
    wallet_indexes,
    webhook_endpoints,
    webhooks,
)


class MerchantStatements(SqlTxBase):
    """The merchant methods of ``StorageTx``, on the transaction's connection."""

    def allocate_wallet_index(self, owner: str, chain_id: int) -> int:
        first = self._insert(wallet_indexes).values(owner=owner, chain_id=chain_id, next_index=1)
        counted = first.on_conflict_do_update(
            index_elements=["owner", "chain_id"],
            set_={"next_index": wallet_indexes.c.next_index + 1},
        ).returning(wallet_indexes.c.next_index)
        next_index: int = self._c.execute(counted).scalar_one()
        return next_index - 1

    def get_merchant_profile(self, owner: str) -> MerchantProfile | None:
        row = self._one(select(merchant_profiles).where(merchant_profiles.c.owner == owner))
        return None if row is None else MerchantProfile(**row)

    def put_merchant_profile(self, profile: MerchantProfile) -> None:
        self._put(merchant_profiles, plain_row(profile))

    def owner_is_known(self, owner: str) -> bool:
        for table in (
            invoices,
            session_keys,
            webhooks,
            webhook_endpoints,
            merchant_profiles,
            app_keys,
            email_settings,
            wallet_indexes,
        ):
            if self._one(select(literal(1)).select_from(table).where(table.c.owner == owner)):
                return True
        return False

    def get_app_key(self, address: str) -> AppKey | None:
        row = self._one(select(app_keys).where(app_keys.c.address == address))
        return None if row is None else AppKey(**row)

    def app_keys_of(self, owner: str) -> list[AppKey]:
        query = (
            select(app_keys)
            .where(app_keys.c.owner == owner)
            .order_by(app_keys.c.added_at, app_keys.c.address)
        )
        return [AppKey(**row) for row in self._all(query)]

    def add_app_key(self, key: AppKey, cap: int) -> AppKeyAdd:
        if self._postgres:
            # Serialises adds for one owner, so two racing adds cannot both pass the count.
            lock = advisory_key(f"paycore.app_keys:{key.owner}")
            self._c.execute(select(func.pg_advisory_xact_lock(lock)))
        existing = self.get_app_key(key.address)
        if existing is not None:
            return AppKeyAdd.EXISTS if existing.owner == key.owner else AppKeyAdd.TAKEN
        if self._count(app_keys, app_keys.c.owner == key.owner) >= cap:
            return AppKeyAdd.FULL
        if self._insert_new(app_keys, plain_row(key), ["address"]):
            return AppKeyAdd.ADDED
        # Another owner's add of the same address committed in between.
        existing = self.get_app_key(key.address)
        return AppKeyAdd.EXISTS if existing and existing.owner == key.owner else AppKeyAdd.TAKEN

    def remove_app_key(self, owner: str, address: str) -> bool:
        return self._delete(app_keys, app_keys.c.address == address, app_keys.c.owner == owner)

    def get_email(self, owner: str, chain_id: int) -> EmailSetting | None:
        e = email_settings
        row = self._one(select(e).where(e.c.owner == owner, e.c.chain_id == chain_id))
        return None if row is None else EmailSetting(**row)

    def emails_of(self, owner: str) -> list[EmailSetting]:
        e = email_settings
        query = select(e).where(e.c.owner == owner).order_by(e.c.chain_id)
        return [EmailSetting(**row) for row in self._all(query)]

    def put_email(self, setting: EmailSetting) -> None:
        self._put(email_settings, plain_row(setting))

    def delete_email(self, owner: str, chain_id: int) -> bool:
        e = email_settings
        return self._delete(e, e.c.owner == owner, e.c.chain_id == chain_id)

    def enable_emails(
        self, owner: str, chain_id: int | None, enabled: bool, now: int
    ) -> list[EmailSetting]:
        e = email_settings
        where = [e.c.owner == owner]
        if chain_id is not None:
            where.append(e.c.chain_id == chain_id)
        # Turning on one already on keeps its stamp; turning one off clears it.
        stamp = (
            case((e.c.enabled.is_(True), e.c.enabled_at), else_=literal(now, BigInteger()))
            if enabled
            else None
        )
        result = self._c.execute(
            update(e).where(*where).values(enabled=enabled, enabled_at=stamp).returning(*e.c)
        )
        changed = [EmailSetting(**row._mapping) for row in result]
        return sorted(changed, key=lambda setting: setting.chain_id)

    def set_wallet_index_disabled(
        self, owner: str, chain_id: int, index: int, disabled: bool, now: int
    ) -> bool:
        d = disabled_indexes
        if disabled:
            row = {"owner": owner, "chain_id": chain_id, "wallet_index": index, "disabled_at": now}
            return self._insert_new(d, row, ["owner", "chain_id", "wallet_index"])
        return self._delete(
            d, d.c.owner == owner, d.c.chain_id == chain_id, d.c.wallet_index == index
        )

    def disabled_wallet_indexes(self, owner: str, chain_id: int) -> list[int]:
        d = disabled_indexes
        query = (
            select(d.c.wallet_index)
            .where(d.c.owner == owner, d.c.chain_id == chain_id)
            .order_by(d.c.wallet_index)
        )
        return list(self._c.execute(query).scalars())

    def claim_notice(self, key: str, now: int) -> bool:
        return self._insert_new(notices, {"key": key, "claimed_at": now}, ["key"])
