"""The owner-management part of the ``paycore.storage`` contract, on every backend: app keys
(one owner per address, a cap that holds under races), e-mail settings with the operator's
switch, disabled wallet indexes and the once-only notice log."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from paycore.domain.records import WebhookConfig
from paycore.management.records import AppKey, AppKeyAdd, EmailSetting
from paycore.storage import Storage
from paycore.testing.storage_records import OTHER_OWNER, OWNER, invoice, session_key


def key_address(n: int) -> str:
    return "0x" + f"{0xAB00 + n:040x}"


def app_key(n: int, owner: str = OWNER, at: int = 100) -> AppKey:
    return AppKey(address=key_address(n), owner=owner, added_at=at + n, added_by=owner)


def test_owner_is_known_by_any_record(storage: Storage) -> None:
    fresh = ["0x" + f"{0xC000 + n:040x}" for n in range(7)]
    with storage.transaction() as tx:
        assert not any(tx.owner_is_known(o) for o in fresh)
        tx.insert_invoice(invoice(owner=fresh[0]))
        tx.put_session_key(session_key(owner=fresh[1]))
        tx.put_webhook(WebhookConfig(fresh[2], "https://x.example/h", "whsec_x"))
        tx.add_app_key(app_key(1, owner=fresh[3]), 10)
        tx.put_email(EmailSetting(fresh[4], 1, "a@example.test"))
        tx.allocate_wallet_index(fresh[5], 1)
    with storage.transaction() as tx:
        assert [tx.owner_is_known(o) for o in fresh] == [True] * 6 + [False]
        # The app key's address is not an owner for that.
        assert not tx.owner_is_known(key_address(1))


def test_app_keys_round_trip_in_order(storage: Storage) -> None:
    with storage.transaction() as tx:
        assert tx.add_app_key(app_key(2), 10) is AppKeyAdd.ADDED
        assert tx.add_app_key(app_key(1), 10) is AppKeyAdd.ADDED
    with storage.transaction() as tx:
        assert tx.app_keys_of(OWNER) == [app_key(1), app_key(2)]
        assert tx.get_app_key(key_address(2)) == app_key(2)
        assert tx.get_app_key(key_address(3)) is None
        assert tx.app_keys_of(OTHER_OWNER) == []


def test_an_address_is_the_app_key_of_one_owner(storage: Storage) -> None:
    with storage.transaction() as tx:
        tx.add_app_key(app_key(1), 10)
    with storage.transaction() as tx:
        assert tx.add_app_key(app_key(1, at=999), 10) is AppKeyAdd.EXISTS
        assert tx.add_app_key(app_key(1, owner=OTHER_OWNER), 10) is AppKeyAdd.TAKEN
    with storage.transaction() as tx:
        assert tx.get_app_key(key_address(1)) == app_key(1)  # unchanged


def test_the_cap_refuses_one_more(storage: Storage) -> None:
    with storage.transaction() as tx:
        for n in range(3):
            assert tx.add_app_key(app_key(n), 3) is AppKeyAdd.ADDED
        assert tx.add_app_key(app_key(3), 3) is AppKeyAdd.FULL
        assert tx.add_app_key(app_key(3, owner=OTHER_OWNER), 3) is AppKeyAdd.ADDED
    with storage.transaction() as tx:
        assert len(tx.app_keys_of(OWNER)) == 3


def test_racing_adds_never_pass_the_cap(storage: Storage) -> None:
    barrier = threading.Barrier(8)

    def add(n: int) -> AppKeyAdd:
        barrier.wait()
        with storage.transaction() as tx:
            return tx.add_app_key(app_key(n), 5)

    with ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(add, range(8)))
    assert outcomes.count(AppKeyAdd.ADDED) == 5
    assert outcomes.count(AppKeyAdd.FULL) == 3
    with storage.transaction() as tx:
        assert len(tx.app_keys_of(OWNER)) == 5


def test_remove_app_key_only_from_its_owner(storage: Storage) -> None:
    with storage.transaction() as tx:
        tx.add_app_key(app_key(1), 10)
    with storage.transaction() as tx:
        assert not tx.remove_app_key(OTHER_OWNER, key_address(1))
        assert tx.remove_app_key(OWNER, key_address(1))
        assert not tx.remove_app_key(OWNER, key_address(1))
        assert tx.get_app_key(key_address(1)) is None


def test_a_failed_unit_of_work_adds_no_key(storage: Storage) -> None:
    with pytest.raises(RuntimeError), storage.transaction() as tx:
        tx.add_app_key(app_key(1), 10)
        raise RuntimeError("rolled back")
    with storage.transaction() as tx:
        assert tx.get_app_key(key_address(1)) is None


# -- e-mail settings --------------------------------------------------------------------------


def test_email_settings_per_owner_and_chain(storage: Storage) -> None:
    one = EmailSetting(OWNER, 1, "shop@example.test", updated_at=5)
    polygon = EmailSetting(OWNER, 137, "polygon@example.test", updated_at=6)
    with storage.transaction() as tx:
        tx.put_email(polygon)
        tx.put_email(one)
        tx.put_email(EmailSetting(OTHER_OWNER, 1, "other@example.test"))
    with storage.transaction() as tx:
        assert tx.get_email(OWNER, 1) == one
        assert tx.emails_of(OWNER) == [one, polygon]
        assert tx.get_email(OWNER, 56) is None
        replaced = EmailSetting(OWNER, 1, "new@example.test", updated_at=9)
        tx.put_email(replaced)
        assert tx.get_email(OWNER, 1) == replaced
        assert tx.delete_email(OWNER, 1)
        assert not tx.delete_email(OWNER, 1)
        assert tx.emails_of(OWNER) == [polygon]


def test_the_operator_switch_stamps_when_it_turns_on(storage: Storage) -> None:
    with storage.transaction() as tx:
        tx.put_email(EmailSetting(OWNER, 1, "a@example.test"))
        tx.put_email(EmailSetting(OWNER, 137, "b@example.test"))
    with storage.transaction() as tx:
        changed = tx.enable_emails(OWNER, 1, True, 1000)
    assert [(s.chain_id, s.enabled, s.enabled_at) for s in changed] == [(1, True, 1000)]
    with storage.transaction() as tx:
        changed = tx.enable_emails(OWNER, None, True, 2000)
    # Chain 1 was on already and keeps its stamp; 137 is turned on now.
    assert [(s.chain_id, s.enabled, s.enabled_at) for s in changed] == [
        (1, True, 1000),
        (137, True, 2000),
    ]
    with storage.transaction() as tx:
        tx.enable_emails(OWNER, 137, False, 3000)
        assert tx.get_email(OWNER, 137) == EmailSetting(OWNER, 137, "b@example.test")
        assert tx.enable_emails(OTHER_OWNER, None, True, 4000) == []


# -- disabled wallet indexes ------------------------------------------------------------------


def test_disabled_indexes_per_owner_and_chain(storage: Storage) -> None:
    big = 2**63 - 1
    with storage.transaction() as tx:
        assert tx.set_wallet_index_disabled(OWNER, 1, 7, True, 10)
        assert not tx.set_wallet_index_disabled(OWNER, 1, 7, True, 11)
        assert tx.set_wallet_index_disabled(OWNER, 1, big, True, 12)
        assert tx.set_wallet_index_disabled(OWNER, 1, 0, True, 12)
        assert tx.set_wallet_index_disabled(OWNER, 137, 3, True, 12)
        assert tx.set_wallet_index_disabled(OTHER_OWNER, 1, 5, True, 12)
    with storage.transaction() as tx:
        assert tx.disabled_wallet_indexes(OWNER, 1) == [0, 7, big]
        assert tx.set_wallet_index_disabled(OWNER, 1, 7, False, 13)
        assert not tx.set_wallet_index_disabled(OWNER, 1, 7, False, 14)
        assert tx.disabled_wallet_indexes(OWNER, 1) == [0, big]
        assert tx.disabled_wallet_indexes(OWNER, 137) == [3]
        assert tx.disabled_wallet_indexes(OWNER, 56) == []


# -- notices ----------------------------------------------------------------------------------


def test_a_notice_is_claimed_once(storage: Storage) -> None:
    with storage.transaction() as tx:
        assert tx.claim_notice("deposit:1:0xaa:3", 10)
        assert not tx.claim_notice("deposit:1:0xaa:3", 11)
        assert tx.claim_notice("deposit:1:0xaa:4", 11)


def test_racing_claims_of_one_notice_have_one_winner(storage: Storage) -> None:
    barrier = threading.Barrier(6)

    def claim(_n: int) -> bool:
        barrier.wait()
        with storage.transaction() as tx:
            return tx.claim_notice("withdraw:1:0xbb:0", 10)

    with ThreadPoolExecutor(6) as pool:
        assert sorted(pool.map(claim, range(6))) == [False] * 5 + [True]
