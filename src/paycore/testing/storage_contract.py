"""The ``paycore.storage`` contract, method by method, as tests a storage plugin runs.

A plugin author runs the whole suite against their backend with one fixture, ``storage``,
that returns a fresh, empty store reading time from the ``clock`` it is given (a
``FakeClock``; this module defines that fixture)::

    # tests/test_my_storage_contract.py
    import pytest
    from paycore.testing.storage_contract import *  # noqa: F403 - the contract's tests

    @pytest.fixture
    def storage(clock):
        store = MyStorage("...", clock=clock)
        yield store
        store.close()

Parametrise that fixture to run the suite on several configurations; paycore's own
tests/storage runs it on the in-memory store, SQLite and PostgreSQL. docs/testing.md says
more.
"""

from __future__ import annotations

import logging
from decimal import Decimal

import attrs
import pytest

from paycore.domain.paging import tx_position
from paycore.domain.records import (
    ALL_OWNERS,
    Invoice,
    NewEvent,
    PollToken,
    PowChallenge,
    Status,
    Transaction,
    TxType,
    WebhookConfig,
)
from paycore.merchant.profile import MerchantProfile
from paycore.storage import Storage
from paycore.storage.idempotency import IdempotentAnswer
from paycore.testing.storage_records import (
    BIG,
    DEPOSIT,
    NATIVE,
    OTHER_OWNER,
    OWNER,
    TINY,
    USDT,
    FakeClock,
    invoice,
    payment,
    session_key,
    transaction,
)


@pytest.fixture
def clock() -> FakeClock:
    """The time the store under test reads (``Storage(clock=...)``): moved by the tests."""
    return FakeClock()


def guid(n: int) -> str:
    return f"00000000-0000-4000-8000-{n:012d}"


def test_is_a_storage(storage: Storage) -> None:
    assert isinstance(storage, Storage)


# -- invoices ---------------------------------------------------------------------------------


def test_invoice_round_trips_every_field(storage: Storage) -> None:
    original = invoice()
    with storage.transaction() as tx:
        tx.insert_invoice(original)
    with storage.transaction() as tx:
        stored = tx.get_invoice(original.guid)
        assert tx.get_invoice(guid(999)) is None
    assert stored == original
    assert isinstance(stored.accepted_tokens, tuple)
    assert isinstance(stored.payments, tuple)
    assert stored.status is Status.INIT


@pytest.mark.parametrize(
    "amount",
    [
        TINY,
        BIG,
        Decimal("999999999999999999999999999999.999999999999999999"),
        Decimal(0),
        Decimal("1.5"),
    ],
)
def test_decimals_round_trip_exactly(storage: Storage, amount: Decimal) -> None:
    inv = attrs.evolve(
        invoice(),
        value=amount,
        paid_amount=amount,
        payments=(attrs.evolve(payment(), amount=amount, vs_value=amount),),
    )
    with storage.transaction() as tx:
        tx.insert_invoice(inv)
        tx.insert_transaction(attrs.evolve(transaction(), amount=amount, vs_value=amount))
    with storage.transaction() as tx:
        stored = tx.get_invoice(inv.guid)
        [stored_tx], _ = tx.list_transactions(OWNER)
    assert stored is not None
    found = [
        stored.value,
        stored.paid_amount,
        stored.payments[0].amount,
        stored.payments[0].vs_value,
        stored_tx.amount,
        stored_tx.vs_value,
    ]
    for value in found:
        assert isinstance(value, Decimal)
        assert value == amount  # Decimal equality is exact: no context rounding


def test_duplicate_guid_raises_and_leaves_the_transaction_usable(storage: Storage) -> None:
    with storage.transaction() as tx:
        tx.insert_invoice(invoice(guid(1)))
        with pytest.raises(ValueError):
            tx.insert_invoice(attrs.evolve(invoice(guid(1)), description="impostor"))
        tx.insert_invoice(invoice(guid(2)))
    with storage.transaction() as tx:
        first = tx.get_invoice(guid(1))
        assert first is not None and first.description == invoice().description
        assert tx.get_invoice(guid(2)) is not None


def test_update_invoice_replaces_the_record(storage: Storage) -> None:
    with storage.transaction() as tx:
        tx.insert_invoice(invoice())
    changed = attrs.evolve(
        invoice(),
        status=Status.PAID,
        paid_amount=BIG,
        payments=(payment("0x01"), payment("0x02", 7)),
        data={"replaced": True},
    )
    with storage.transaction() as tx:
        tx.update_invoice(changed)
    with storage.transaction() as tx:
        assert tx.get_invoice(changed.guid, for_update=True) == changed


def test_update_of_unknown_invoice_raises(storage: Storage) -> None:
    with pytest.raises(KeyError), storage.transaction() as tx:
        tx.update_invoice(invoice())


def test_returned_data_is_not_shared_with_storage(storage: Storage) -> None:
    with storage.transaction() as tx:
        tx.insert_invoice(invoice())
        tx.get_invoice(invoice().guid).data["nested"]["list"].append("mutated")  # type: ignore[union-attr]
    with storage.transaction() as tx:
        assert tx.get_invoice(invoice().guid) == invoice()


def test_invoices_at_address_filters_chain_and_address_in_creation_order(
    storage: Storage,
) -> None:
    """Creation order, not ``created_at``: a clock that stepped back between two inserts
    does not reorder them."""
    other = "0x9999999999999999999999999999999999999999"
    with storage.transaction() as tx:
        tx.insert_invoice(invoice(guid(2), created_at=300))
        tx.insert_invoice(invoice(guid(1), created_at=100))
        tx.insert_invoice(invoice(guid(3), created_at=200, chain_id=137))
        tx.insert_invoice(invoice(guid(4), created_at=50, address=other))
    with storage.transaction() as tx:
        found = tx.invoices_at_address(1, DEPOSIT, for_update=True)
        assert [i.guid for i in found] == [guid(2), guid(1)]
        assert [i.guid for i in tx.invoices_at_address(137, DEPOSIT)] == [guid(3)]
        assert tx.invoices_at_address(56, DEPOSIT) == []


def nth(n: int) -> str:
    """The guid of the n-th invoice ``nine_invoices`` creates: guids in another order than
    creation, so sorting by guid cannot pass for creation order."""
    return guid((5, 2, 8, 1, 9, 3, 7, 4, 6)[n - 1])


@pytest.fixture
def nine_invoices(storage: Storage) -> None:
    """Nine invoices created one after another within the same second (one created_at), in
    three transactions: only the creation sequence can order them."""
    for first in (1, 4, 7):
        with storage.transaction() as tx:
            for n in range(first, first + 3):
                tx.insert_invoice(
                    invoice(
                        nth(n),
                        created_at=1_700_000_000,
                        owner=OWNER if n <= 7 else OTHER_OWNER,
                        chain_id=1 if n % 3 else 137,
                    )
                )


@pytest.mark.usefixtures("nine_invoices")
def test_list_invoices_orders_filters_pages_and_counts(storage: Storage) -> None:
    with storage.transaction() as tx:
        everything, total = tx.list_invoices()
        assert [i.guid for i in everything] == [nth(n) for n in range(1, 10)]
        assert total == 9

        mine, total = tx.list_invoices(owner=OWNER)
        assert [i.guid for i in mine] == [nth(n) for n in range(1, 8)]
        assert total == 7

        page, total = tx.list_invoices(owner=OWNER, offset=2, limit=3, newest_first=True)
        assert [i.guid for i in page] == [nth(5), nth(4), nth(3)]
        assert total == 7

        page, total = tx.list_invoices(owner=OWNER, offset=1, limit=2)
        assert [i.guid for i in page] == [nth(2), nth(3)]
        assert total == 7

        beyond, total = tx.list_invoices(owner=OWNER, offset=50, limit=10)
        assert beyond == [] and total == 7

        on_polygon, total = tx.list_invoices(owner=OWNER, chain_id=137, newest_first=True)
        assert [i.guid for i in on_polygon] == [nth(6), nth(3)]
        assert total == 2

        at_address, total = tx.list_invoices(address=DEPOSIT, chain_id=1, limit=0)
        assert at_address == [] and total == 6

        nobody, total = tx.list_invoices(owner="0xnobody")
        assert nobody == [] and total == 0


@pytest.mark.usefixtures("nine_invoices")
def test_invoices_after_reads_keyset_pages_from_either_end(storage: Storage) -> None:
    def guids(found: list[Invoice] | None) -> list[str] | None:
        return None if found is None else [i.guid for i in found]

    with storage.transaction() as tx:
        newest = tx.invoices_after(owner=OWNER, limit=3, newest_first=True)
        assert guids(newest) == [nth(7), nth(6), nth(5)]
        older = tx.invoices_after(owner=OWNER, after=nth(5), limit=3, newest_first=True)
        assert guids(older) == [nth(4), nth(3), nth(2)]
        last = tx.invoices_after(owner=OWNER, after=nth(2), limit=3, newest_first=True)
        assert guids(last) == [nth(1)]
        assert tx.invoices_after(owner=OWNER, after=nth(1), limit=3, newest_first=True) == []
        # Back toward the newest, oldest first; and the oldest end itself.
        assert guids(tx.invoices_after(owner=OWNER, after=nth(2), limit=2)) == [nth(3), nth(4)]
        assert guids(tx.invoices_after(owner=OWNER, limit=2)) == [nth(1), nth(2)]
        # A position counts even when its invoice is not in the filtered list.
        on_polygon = tx.invoices_after(owner=OWNER, chain_id=137, after=nth(5), limit=9)
        assert guids(on_polygon) == [nth(6)]
        at_address = tx.invoices_after(
            address=DEPOSIT, chain_id=1, after=nth(7), limit=9, newest_first=True
        )
        assert guids(at_address) == [nth(5), nth(4), nth(2), nth(1)]
        assert tx.invoices_after(owner=OWNER, after=guid(999), limit=3) is None


@pytest.mark.usefixtures("nine_invoices")
def test_invoice_counts_match_the_rows_and_roll_back(storage: Storage) -> None:
    with storage.transaction() as tx:
        assert tx.count_invoices(owner=OWNER) == 7
        assert tx.count_invoices(owner=OWNER, chain_id=137) == 2
        assert tx.count_invoices(owner=OTHER_OWNER, chain_id=1) == 1
        assert tx.count_invoices(address=DEPOSIT, chain_id=1) == 6
        assert tx.count_invoices(owner=OWNER, address=DEPOSIT, chain_id=1) == 5
        assert tx.count_invoices(owner="0xnobody") == 0
    with pytest.raises(Boom), storage.transaction() as tx:
        tx.insert_invoice(invoice(guid(50), chain_id=137))
        assert tx.count_invoices(owner=OWNER) == 8  # this transaction's own insert
        assert tx.count_invoices(owner=OWNER, chain_id=137) == 3
        raise Boom
    with storage.transaction() as tx:
        assert tx.count_invoices(owner=OWNER) == 7
        assert tx.list_invoices(owner=OWNER, limit=1)[1] == 7


def test_due_for_expiry_picks_open_invoices_past_deadline(storage: Storage) -> None:
    with storage.transaction() as tx:
        tx.insert_invoice(invoice(guid(1), deadline=100))
        tx.insert_invoice(invoice(guid(2), deadline=50, status=Status.PARTIAL_PAID))
        tx.insert_invoice(invoice(guid(3), deadline=10, status=Status.PAID))
        tx.insert_invoice(invoice(guid(4), deadline=10, status=Status.EXPIRED))
        tx.insert_invoice(invoice(guid(5), deadline=200))
        tx.insert_invoice(invoice(guid(6), deadline=150))
    with storage.transaction() as tx:
        assert tx.due_for_expiry(200, 10) == [guid(2), guid(1), guid(6)]
        assert tx.due_for_expiry(200, 2) == [guid(2), guid(1)]
        assert tx.due_for_expiry(50, 10) == []


# -- transactions -----------------------------------------------------------------------------


def test_insert_transaction_is_idempotent_on_chain_hash_log_and_token(storage: Storage) -> None:
    with storage.transaction() as tx:
        assert tx.insert_transaction(transaction()) is True
        assert tx.insert_transaction(transaction()) is False
        # Same identity with other details: still the same transfer, still refused.
        assert tx.insert_transaction(attrs.evolve(transaction(), amount=TINY)) is False
    with storage.transaction() as tx:
        assert tx.insert_transaction(transaction()) is False
        assert tx.insert_transaction(transaction(token=NATIVE)) is True
        assert tx.insert_transaction(transaction(log_index=1)) is True
        assert tx.insert_transaction(transaction(chain_id=137)) is True
        assert tx.insert_transaction(transaction("0xcc")) is True
    with storage.transaction() as tx:
        items, total = tx.list_transactions(OWNER)
    assert total == 5
    assert transaction() in items
    assert attrs.evolve(transaction(), amount=TINY) not in items


def test_transactions_round_trip_both_kinds(storage: Storage) -> None:
    deposit = transaction("0x01")
    withdrawal = transaction("0x02", type=TxType.WITHDRAW, timestamp=1)
    with storage.transaction() as tx:
        tx.insert_transaction(deposit)
        tx.insert_transaction(withdrawal)
    with storage.transaction() as tx:
        items, _ = tx.list_transactions(OWNER)
    assert items == [deposit, withdrawal]
    assert items[1].to is not None and items[1].guid is None and items[1].counted is False


def test_list_transactions_newest_first_filters_pages_and_counts(storage: Storage) -> None:
    rows = [
        transaction("0x0a", timestamp=300),
        transaction("0x0b", timestamp=100, chain_id=137),
        transaction("0x0c", timestamp=200),
        transaction("0x0c", timestamp=200, log_index=4),
        transaction("0x0d", timestamp=200),
        transaction("0x0e", timestamp=400, owner=OTHER_OWNER),
    ]
    with storage.transaction() as tx:
        for row in rows:
            tx.insert_transaction(row)
    expected = [rows[0], rows[4], rows[3], rows[2], rows[1]]
    with storage.transaction() as tx:
        assert tx.list_transactions(OWNER) == (expected, 5)
        assert tx.list_transactions(OWNER, offset=1, limit=2) == (expected[1:3], 5)
        assert tx.list_transactions(OWNER, offset=9) == ([], 5)
        assert tx.list_transactions(OWNER, chain_id=1) == (expected[:4], 4)
        assert tx.list_transactions(OWNER, chain_id=137) == ([rows[1]], 1)
        assert tx.list_transactions(OTHER_OWNER) == ([rows[5]], 1)
        assert tx.list_transactions("0xnobody") == ([], 0)


def test_transactions_after_reads_keyset_pages_in_the_listing_order(storage: Storage) -> None:
    rows = [
        transaction("0x0a", timestamp=300),
        transaction("0x0b", timestamp=100, chain_id=137),
        transaction("0x0c", timestamp=200),
        transaction("0x0c", timestamp=200, log_index=4),
        transaction("0x0d", timestamp=200),
        transaction("0x0e", timestamp=400, owner=OTHER_OWNER),
    ]
    with storage.transaction() as tx:
        for row in rows:
            tx.insert_transaction(row)
    expected = [rows[0], rows[4], rows[3], rows[2], rows[1]]
    with storage.transaction() as tx:
        assert tx.transactions_after(OWNER, limit=2) == expected[:2]
        assert tx.transactions_after(OWNER, after=tx_position(rows[4]), limit=2) == expected[2:4]
        assert tx.transactions_after(OWNER, after=tx_position(rows[2]), limit=2) == expected[4:]
        assert tx.transactions_after(OWNER, after=tx_position(rows[1]), limit=2) == []
        # Oldest first from the far end, and back toward the newest from a position.
        assert tx.transactions_after(OWNER, limit=2, newest_first=False) == expected[:2:-1]
        toward_newest = tx.transactions_after(
            OWNER, after=tx_position(rows[3]), limit=9, newest_first=False
        )
        assert toward_newest == [rows[4], rows[0]]
        on_mainnet = tx.transactions_after(OWNER, chain_id=1, after=tx_position(rows[0]), limit=9)
        assert on_mainnet == expected[1:4]
        assert tx.count_transactions(OWNER) == 5
        assert tx.count_transactions(OWNER, chain_id=137) == 1
        assert tx.count_transactions(OTHER_OWNER) == 1


def test_transaction_counts_follow_reorgs_and_revivals(storage: Storage) -> None:
    row = transaction("0x01")
    with storage.transaction() as tx:
        tx.insert_transaction(row)
        tx.insert_transaction(transaction("0x02"))
        assert tx.count_transactions(OWNER) == 2
    with storage.transaction() as tx:
        assert tx.mark_reorged(*row.key) is not None
        assert tx.mark_reorged(*row.key) is None  # flagged once, taken off once
    with storage.transaction() as tx:
        assert tx.count_transactions(OWNER) == 1
        assert tx.transactions_after(OWNER, limit=9) == [transaction("0x02")]
        assert tx.insert_transaction(row) is True  # mined again: counted again
        assert tx.insert_transaction(row) is False
    with storage.transaction() as tx:
        assert tx.count_transactions(OWNER) == 2 == tx.list_transactions(OWNER)[1]


# -- deep reorgs: deposits with their block, flagged once replaced ---------------------------


def _in_block(row: Transaction, number: int, block_hash: str) -> Transaction:
    return attrs.evolve(row, block_number=number, block_hash=block_hash)


def test_a_deposit_keeps_its_block(storage: Storage) -> None:
    row = _in_block(transaction("0x01"), 77, "0x" + "ab" * 32)
    with storage.transaction() as tx:
        tx.insert_transaction(row)
    with storage.transaction() as tx:
        assert tx.list_transactions(OWNER) == ([row], 1)
        assert tx.recorded_deposits(1, 77) == [row]


def test_recorded_deposits_newest_block_first_from_a_block_on(storage: Storage) -> None:
    rows = [
        _in_block(transaction("0x01"), 10, "0xa"),
        _in_block(transaction("0x02"), 12, "0xb"),
        _in_block(transaction("0x03", log_index=2), 12, "0xb"),
        _in_block(transaction("0x03", log_index=1), 12, "0xb"),
        _in_block(transaction("0x04", chain_id=137), 12, "0xc"),  # another chain
        _in_block(transaction("0x05", type=TxType.WITHDRAW), 12, "0xb"),  # not a deposit
        transaction("0x06"),  # no block known (recorded before revision 0006)
        _in_block(transaction("0x07"), 9, "0xd"),  # below from_block
    ]
    with storage.transaction() as tx:
        for row in rows:
            assert tx.insert_transaction(row)
    with storage.transaction() as tx:
        assert tx.recorded_deposits(1, 10) == [rows[1], rows[3], rows[2], rows[0]]
        assert tx.recorded_deposits(137, 0) == [rows[4]]
        assert tx.recorded_deposits(1, 13) == []


def test_mark_reorged_flags_once_and_hides_the_row(storage: Storage) -> None:
    row = _in_block(transaction("0x01"), 10, "0xa")
    kept = _in_block(transaction("0x02"), 10, "0xa")
    with storage.transaction() as tx:
        tx.insert_transaction(row)
        tx.insert_transaction(kept)
    with storage.transaction() as tx:
        assert tx.mark_reorged(1, "0x01", 0, USDT) == attrs.evolve(row, reorged=True)
        assert tx.mark_reorged(1, "0x01", 0, USDT) is None  # once
        assert tx.mark_reorged(1, "0xnone", 0, USDT) is None
        assert tx.list_transactions(OWNER) == ([kept], 1)
        assert tx.recorded_deposits(1, 0) == [kept]
    remined = _in_block(attrs.evolve(row, timestamp=row.timestamp + 9), 15, "0xe")
    with storage.transaction() as tx:
        assert tx.insert_transaction(remined) is True  # mined again: the flagged row gives way
        assert tx.insert_transaction(remined) is False  # and is a known transfer again
        assert tx.recorded_deposits(1, 0) == [remined, kept]
        items, total = tx.list_transactions(OWNER)
    assert total == 2 and remined in items and not any(i.reorged for i in items)


def test_a_flag_rolls_back_with_its_transaction(storage: Storage) -> None:
    row = _in_block(transaction("0x01"), 10, "0xa")
    with storage.transaction() as tx:
        tx.insert_transaction(row)
    with pytest.raises(RuntimeError), storage.transaction() as tx:
        assert tx.mark_reorged(1, "0x01", 0, USDT) is not None
        raise RuntimeError("the invoice update failed")
    with storage.transaction() as tx:
        assert tx.list_transactions(OWNER) == ([row], 1)


# -- session keys -----------------------------------------------------------------------------


def test_session_keys_put_get_list_replace_delete(storage: Storage) -> None:
    a = session_key("0xa1", registered_at=20)
    b = session_key("0xb2", registered_at=10)
    c = session_key("0xc3", registered_at=5, owner=OTHER_OWNER)
    plain = attrs.evolve(session_key("0xd4", registered_at=30), encryption_public_key=None)
    with storage.transaction() as tx:
        for key in (a, b, c, plain):
            tx.put_session_key(key)
    with storage.transaction() as tx:
        assert tx.get_session_key("0xa1") == a
        assert tx.get_session_key("0xd4") == plain
        assert tx.get_session_key("0xnone") is None
        assert tx.session_keys_of(OWNER) == [b, a, plain]
        assert tx.session_keys_of(OTHER_OWNER) == [c]
        assert tx.session_keys_of("0xnobody") == []
        refreshed = attrs.evolve(a, expires_at=a.expires_at + 99, last_seen_nonce=7)
        tx.put_session_key(refreshed)
        assert tx.get_session_key("0xa1") == refreshed
        assert tx.delete_session_key("0xb2") is True
        assert tx.delete_session_key("0xb2") is False
    with storage.transaction() as tx:
        assert tx.session_keys_of(OWNER) == [refreshed, plain]


def test_advance_nonce_only_moves_forward(storage: Storage) -> None:
    big_nonce = 1_700_000_000_123  # millisecond timestamps need 64 bits
    with storage.transaction() as tx:
        tx.put_session_key(session_key(last_seen_nonce=5))
        address = session_key().address
        assert tx.advance_nonce(address, 5) is False
        assert tx.advance_nonce(address, 4) is False
        assert tx.advance_nonce(address, 6) is True
        assert tx.advance_nonce(address, 6) is False
        assert tx.advance_nonce(address, big_nonce) is True
        assert tx.advance_nonce("0xunknown", 100) is False
    with storage.transaction() as tx:
        key = tx.get_session_key(address)
    assert key is not None and key.last_seen_nonce == big_nonce


# -- wallet indexes, challenges, signatures, webhooks, poll tokens ----------------------------


def test_wallet_indexes_count_up_per_owner_and_chain(storage: Storage) -> None:
    with storage.transaction() as tx:
        assert [tx.allocate_wallet_index(OWNER, 1) for _ in range(3)] == [0, 1, 2]
        assert tx.allocate_wallet_index(OWNER, 728126428) == 0
        assert tx.allocate_wallet_index(OTHER_OWNER, 1) == 0
    with storage.transaction() as tx:
        assert tx.allocate_wallet_index(OWNER, 1) == 3


def test_challenge_is_taken_once(storage: Storage) -> None:
    challenge = PowChallenge("c0ffee", OWNER, 12, 1_700_000_120)
    with storage.transaction() as tx:
        tx.put_challenge(challenge)
        tx.put_challenge(PowChallenge("other", OWNER, 1, 1))
    with storage.transaction() as tx:
        assert tx.take_challenge("c0ffee") == challenge
        assert tx.take_challenge("c0ffee") is None
        assert tx.take_challenge("never") is None
    with storage.transaction() as tx:
        assert tx.take_challenge("c0ffee") is None
        assert tx.take_challenge("other") is not None


def test_signature_expiry_follows_the_callers_clock(storage: Storage, clock: FakeClock) -> None:
    """A gateway whose clock differs from storage's must still see its replays refused."""
    caller_now = int(clock.now) - 10**6  # far behind the storage's clock
    with storage.transaction() as tx:
        assert tx.remember_signature("d9", caller_now + 600, now=caller_now) is True
        assert tx.remember_signature("d9", caller_now + 600, now=caller_now + 599) is False
        assert tx.remember_signature("d9", caller_now + 1200, now=caller_now + 600) is True


def test_signature_is_remembered_until_it_expires(storage: Storage, clock: FakeClock) -> None:
    expires = int(clock.now) + 600
    with storage.transaction() as tx:
        assert tx.remember_signature("d1", expires) is True
        assert tx.remember_signature("d1", expires) is False
        assert tx.remember_signature("d2", expires) is True
    clock.now = expires - 1
    with storage.transaction() as tx:
        assert tx.remember_signature("d1", expires + 600) is False
    clock.now = expires
    with storage.transaction() as tx:
        assert tx.remember_signature("d1", expires + 600) is True
        assert tx.remember_signature("d1", expires + 600) is False


def test_merchant_profiles_put_get_replace(storage: Storage) -> None:
    profile = MerchantProfile(
        OWNER, "Mugs & Co", "https://cdn.shop.example/logo.svg", "help@shop.example", 1000
    )
    with storage.transaction() as tx:
        assert tx.get_merchant_profile(OWNER) is None
        tx.put_merchant_profile(profile)
        tx.put_merchant_profile(MerchantProfile(OTHER_OWNER, "Other", None, None, 1001))
    with storage.transaction() as tx:
        assert tx.get_merchant_profile(OWNER) == profile
        assert tx.owner_is_known(OWNER)
        replaced = attrs.evolve(profile, name="Mugs", logo_url=None, support=None, updated_at=2000)
        tx.put_merchant_profile(replaced)
        assert tx.get_merchant_profile(OWNER) == replaced
    with pytest.raises(RuntimeError), storage.transaction() as tx:
        tx.put_merchant_profile(attrs.evolve(profile, name="Rolled back"))
        raise RuntimeError("roll back")
    with storage.transaction() as tx:
        assert tx.get_merchant_profile(OWNER) == replaced
        assert tx.get_merchant_profile(OTHER_OWNER) == MerchantProfile(
            OTHER_OWNER, "Other", None, None, 1001
        )


def test_idempotency_keys_claim_answer_expire_and_prune(storage: Storage) -> None:
    """A claim is this transaction's until it ends: stored with its answer on commit, gone on
    rollback; a stored key answers every later claim unchanged, per (scope, route, key),
    until it is older than ``expires_before``; pruning takes only the old ones."""
    with storage.transaction() as tx:
        assert (
            tx.claim_idempotency_key(
                OWNER, "create_invoice", "k1", "fp1", now=1000, expires_before=0
            )
            is None
        )
        tx.store_idempotent_answer(
            OWNER,
            "create_invoice",
            "k1",
            status=201,
            content_type="application/json",
            body=b'{"a":1}',
        )
    with pytest.raises(RuntimeError), storage.transaction() as tx:
        assert (
            tx.claim_idempotency_key(
                OWNER, "create_invoice", "k2", "fp2", now=1000, expires_before=0
            )
            is None
        )
        raise RuntimeError("roll back")
    with storage.transaction() as tx:
        claim = tx.claim_idempotency_key(
            OWNER, "create_invoice", "k1", "other", now=1500, expires_before=0
        )
        assert claim == IdempotentAnswer("fp1", 1000, 201, "application/json", b'{"a":1}')
        # The rolled-back claim left nothing: k2 is free; other scopes and routes are apart.
        assert (
            tx.claim_idempotency_key(
                OWNER, "create_invoice", "k2", "fp2", now=1500, expires_before=0
            )
            is None
        )
        assert (
            tx.claim_idempotency_key(
                OTHER_OWNER, "create_invoice", "k1", "fp9", now=1500, expires_before=0
            )
            is None
        )
        assert (
            tx.claim_idempotency_key(OWNER, "create_link", "k1", "fp8", now=1500, expires_before=0)
            is None
        )
        partial_claim = tx.claim_idempotency_key(
            OWNER, "create_invoice", "k2", "fp2", now=1500, expires_before=0
        )
        assert partial_claim is not None and partial_claim.status == 0  # claimed, no answer yet
    with storage.transaction() as tx:
        # k1 (made at 1000) is past its time at expires_before=1001: claimed anew.
        assert (
            tx.claim_idempotency_key(
                OWNER, "create_invoice", "k1", "fp3", now=90000, expires_before=1001
            )
            is None
        )
        assert tx.prune_idempotency_keys(1501, 10) == 3  # the three claims made at 1500
    with storage.transaction() as tx:
        again = tx.claim_idempotency_key(
            OWNER, "create_invoice", "k1", "x", now=90001, expires_before=0
        )
        assert again is not None and again.fingerprint == "fp3" and again.created_at == 90000
        assert tx.prune_idempotency_keys(90001, 10) == 1
        assert tx.prune_idempotency_keys(90001, 10) == 0


def test_webhooks_put_get_replace_delete(storage: Storage) -> None:
    config = WebhookConfig(OWNER, "https://shop.example/hook", "whsec_abc")
    with storage.transaction() as tx:
        assert tx.get_webhook(OWNER) is None
        tx.put_webhook(config)
        tx.put_webhook(WebhookConfig(OTHER_OWNER, "https://other.example", "whsec_o"))
    with storage.transaction() as tx:
        assert tx.get_webhook(OWNER) == config
        moved = attrs.evolve(config, url="https://shop.example/v2")
        tx.put_webhook(moved)
        assert tx.get_webhook(OWNER) == moved
        assert tx.delete_webhook(OWNER) is True
        assert tx.delete_webhook(OWNER) is False
        assert tx.get_webhook(OWNER) is None
        assert tx.get_webhook(OTHER_OWNER) is not None


def test_poll_tokens_put_and_get(storage: Storage) -> None:
    token = PollToken("tok-1", OWNER, 1_700_000_000)
    with storage.transaction() as tx:
        tx.put_poll_token(token)
    with storage.transaction() as tx:
        assert tx.get_poll_token("tok-1") == token
        assert tx.get_poll_token("tok-2") is None


# -- events -----------------------------------------------------------------------------------


def payload(n: int) -> dict[str, object]:
    return {"guid": guid(n), "status": "paid", "paidAmount": "1.5", "data": {"n": [n]}}


def test_event_ids_strictly_increase(storage: Storage) -> None:
    with storage.transaction() as tx:
        first = tx.add_event(OWNER, guid(1), payload(1), 10)
        second = tx.add_event(OTHER_OWNER, guid(2), payload(2), 10)
    with storage.transaction() as tx:
        third = tx.add_event(OWNER, guid(3), payload(3), 11)
    assert first < second < third


def test_queue_starts_after_existing_events_and_drains_its_owner_oldest_first(
    storage: Storage,
) -> None:
    with storage.transaction() as tx:
        tx.add_event(OWNER, guid(1), payload(1), 10)  # before the queue: never delivered
        tx.open_queue("key-a", OWNER)
        ids = [
            tx.add_event(OWNER, guid(2), payload(2), 20),
            tx.add_event(OTHER_OWNER, guid(3), payload(3), 21),
            tx.add_event(OWNER, guid(4), payload(4), 22),
        ]
    with storage.transaction() as tx:
        drained = tx.drain_queue("key-a", cap=100)
        assert [(e.id, e.owner, e.guid, e.created_at) for e in drained] == [
            (ids[0], OWNER, guid(2), 20),
            (ids[2], OWNER, guid(4), 22),
        ]
        assert drained[0].payload == payload(2)
        assert tx.drain_queue("key-a", cap=100) == []
    with storage.transaction() as tx:
        assert tx.drain_queue("key-a", cap=100) == []
        later = tx.add_event(OWNER, guid(5), payload(5), 30)
        tx.open_queue("key-a", OWNER)  # already open: the cursor must not jump
        assert [e.id for e in tx.drain_queue("key-a", cap=100)] == [later]


def test_queues_are_independent_per_consumer(storage: Storage) -> None:
    with storage.transaction() as tx:
        tx.open_queue("key-a", OWNER)
        tx.open_queue("key-b", OWNER)
        event_id = tx.add_event(OWNER, guid(1), payload(1), 10)
    with storage.transaction() as tx:
        assert [e.id for e in tx.drain_queue("key-a", 10)] == [event_id]
        assert [e.id for e in tx.drain_queue("key-b", 10)] == [event_id]
        assert tx.drain_queue("never-opened", 10) == []


def test_drain_keeps_only_the_newest_cap_and_warns(
    storage: Storage, caplog: pytest.LogCaptureFixture
) -> None:
    with storage.transaction() as tx:
        tx.open_queue("key-a", OWNER)
        ids = [tx.add_event(OWNER, guid(n), payload(n), n) for n in range(7)]
    with caplog.at_level(logging.WARNING, logger="paycore.events"), storage.transaction() as tx:
        drained = tx.drain_queue("key-a", cap=3)
    assert [e.id for e in drained] == ids[-3:]
    warnings = [r for r in caplog.records if r.name == "paycore.events"]
    assert len(warnings) == 1 and "dropped 4" in warnings[0].getMessage()
    with storage.transaction() as tx:
        assert tx.drain_queue("key-a", cap=3) == []


def test_closed_queue_drains_nothing_and_reopens_fresh(storage: Storage) -> None:
    with storage.transaction() as tx:
        tx.open_queue("key-a", OWNER)
        tx.add_event(OWNER, guid(1), payload(1), 10)
        tx.close_queue("key-a")
        tx.close_queue("key-a")  # closing twice is harmless
        assert tx.drain_queue("key-a", 10) == []
        tx.open_queue("key-a", OWNER)
        assert tx.drain_queue("key-a", 10) == []
        fresh = tx.add_event(OWNER, guid(2), payload(2), 11)
        assert [e.id for e in tx.drain_queue("key-a", 10)] == [fresh]


def test_drained_payload_is_not_shared_with_storage(storage: Storage) -> None:
    with storage.transaction() as tx:
        tx.open_queue("key-a", OWNER)
        tx.open_queue("key-b", OWNER)
        sent = payload(1)
        tx.add_event(OWNER, guid(1), sent, 10)
        sent["status"] = "changed after add"
        tx.drain_queue("key-a", 10)[0].payload["data"]["n"].append("changed after drain")
        assert tx.drain_queue("key-b", 10)[0].payload == payload(1)


def test_events_of_one_invoice_drain_in_the_order_they_were_added(storage: Storage) -> None:
    with storage.transaction() as tx:
        tx.open_queue("key-a", OWNER)
    added: list[int] = []
    for n in (1, 2, 1, 3, 1):
        with storage.transaction() as tx:
            added.append(tx.add_event(OWNER, guid(n), payload(n), n))
    with storage.transaction() as tx:
        drained = tx.drain_queue("key-a", 10)
    assert [e.id for e in drained] == added


def test_event_types_round_trip_and_default_to_updated(storage: Storage) -> None:
    with storage.transaction() as tx:
        tx.open_queue("key-a", OWNER)
        tx.add_event(OWNER, guid(1), payload(1), 10, "invoice.paid")
        tx.add_event(OWNER, guid(1), payload(1), 11)
        tx.add_events([NewEvent(OWNER, guid(2), payload(2), 12, "invoice.overpaid")] * 2)
    with storage.transaction() as tx:
        drained = tx.drain_queue("key-a", 10)
    assert [e.type for e in drained] == [
        "invoice.paid",
        "invoice.updated",
        "invoice.overpaid",
        "invoice.overpaid",
    ]
    assert drained[0].payload == payload(1)  # the type is not mixed into the payload


def test_read_outbox_reads_every_owner_and_moves_only_when_told(storage: Storage) -> None:
    with storage.transaction() as tx:
        tx.add_event(OWNER, guid(1), payload(1), 10)  # before the queue: never read
        assert tx.read_outbox("signal:x", 10) is None
        tx.open_queue("signal:x", ALL_OWNERS)
        tx.open_queue("signal:x", ALL_OWNERS)  # again: kept
        ids = [
            tx.add_event(OWNER, guid(2), payload(2), 20, "invoice.paid"),
            tx.add_event(OTHER_OWNER, guid(3), payload(3), 21),
            tx.add_event(OWNER, guid(4), payload(4), 22),
        ]
    with storage.transaction() as tx:
        first = tx.read_outbox("signal:x", 2)
        assert first is not None
        assert [(e.id, e.owner, e.type) for e in first.events] == [
            (ids[0], OWNER, "invoice.paid"),
            (ids[1], OTHER_OWNER, "invoice.updated"),
        ]
        assert first.upto == ids[1]  # cut short by the cap: no further than the last read
        again = tx.read_outbox("signal:x", 2)  # not moved by reading
        assert again is not None and [e.id for e in again.events] == ids[:2]
        assert tx.drain_queue("signal:x", 10) == []  # no owner is empty
    with storage.transaction() as tx:
        assert tx.move_queue("signal:x", first.position, first.upto)
        assert not tx.move_queue("signal:x", first.position, first.upto)  # moved already
        assert not tx.move_queue("never-opened", 0, 5)
    with storage.transaction() as tx:
        rest = tx.read_outbox("signal:x", 10)
        assert rest is not None and [e.id for e in rest.events] == [ids[2]]
        assert rest.position == ids[1] and rest.upto >= ids[2]
        assert tx.move_queue("signal:x", rest.position, rest.upto)
        empty = tx.read_outbox("signal:x", 10)
        assert empty is not None and empty.events == []


def test_outbox_since_reads_after_a_held_position_without_storing_one(storage: Storage) -> None:
    with storage.transaction() as tx:
        tx.add_event(OWNER, guid(1), payload(1), 10)
    with storage.transaction() as tx:
        start = tx.outbox_since(None, 10)  # a new reader starts at the horizon
        assert start.events == [] and start.position == start.upto
        ids = [
            tx.add_event(OWNER, guid(2), payload(2), 20, "invoice.paid"),
            tx.add_event(OTHER_OWNER, guid(3), payload(3), 21),
            tx.add_event(OWNER, guid(4), payload(4), 22),
        ]
    with storage.transaction() as tx:
        every = tx.outbox_since(start.upto, 10)
        assert [(e.id, e.owner, e.type) for e in every.events] == [
            (ids[0], OWNER, "invoice.paid"),
            (ids[1], OTHER_OWNER, "invoice.updated"),
            (ids[2], OWNER, "invoice.updated"),
        ]
        assert every.position == start.upto and every.upto >= ids[2]
        cut = tx.outbox_since(start.upto, 2)
        assert [e.id for e in cut.events] == ids[:2] and cut.upto == ids[1]
        mine = tx.outbox_since(start.upto, 10, OWNER)
        assert [e.id for e in mine.events] == [ids[0], ids[2]]
        assert [e.payload for e in mine.events] == [payload(2), payload(4)]
        assert tx.outbox_since(ids[2], 10).events == []
        assert tx.outbox_since(None, 10).upto >= ids[2]
        with pytest.raises(ValueError):
            tx.outbox_since(0, 0)


# -- rollback ---------------------------------------------------------------------------------


class Boom(Exception):
    pass


def test_exception_rolls_back_every_write(storage: Storage) -> None:
    with storage.transaction() as tx:
        tx.insert_invoice(invoice(guid(1)))
        tx.put_session_key(session_key(last_seen_nonce=1))
        tx.put_challenge(PowChallenge("kept", OWNER, 1, 1))
        tx.open_queue("key-a", OWNER)
        kept_event = tx.add_event(OWNER, guid(1), payload(1), 1)
    with pytest.raises(Boom), storage.transaction() as tx:
        tx.insert_invoice(invoice(guid(2)))
        tx.update_invoice(attrs.evolve(invoice(guid(1)), status=Status.PAID))
        tx.insert_transaction(transaction())
        tx.put_session_key(session_key("0xnew"))
        tx.advance_nonce(session_key().address, 99)
        assert tx.allocate_wallet_index(OWNER, 1) == 0
        assert tx.take_challenge("kept") is not None
        tx.put_challenge(PowChallenge("new", OWNER, 1, 1))
        tx.remember_signature("digest", 2_000_000_000)
        tx.put_webhook(WebhookConfig(OWNER, "https://x.example", "s"))
        tx.add_event(OWNER, guid(2), payload(2), 2)
        assert len(tx.drain_queue("key-a", 10)) == 2
        tx.open_queue("key-b", OWNER)
        tx.put_poll_token(PollToken("tok", OWNER, 1))
        raise Boom
    with storage.transaction() as tx:
        assert tx.list_invoices() == ([invoice(guid(1))], 1)
        assert tx.list_transactions(OWNER) == ([], 0)
        assert tx.get_session_key("0xnew") is None
        key = tx.get_session_key(session_key().address)
        assert key is not None and key.last_seen_nonce == 1
        assert tx.allocate_wallet_index(OWNER, 1) == 0
        assert tx.take_challenge("new") is None
        assert tx.take_challenge("kept") is not None
        assert tx.remember_signature("digest", 2_000_000_000) is True
        assert tx.get_webhook(OWNER) is None
        assert [e.id for e in tx.drain_queue("key-a", 10)] == [kept_event]
        assert tx.drain_queue("key-b", 10) == []
        assert tx.get_poll_token("tok") is None


def test_tip_jar_and_tron_sized_values_survive(storage: Storage) -> None:
    tron = invoice(guid(1), chain_id=3448148188, value=Decimal(0))
    with storage.transaction() as tx:
        tx.insert_invoice(tron)
        tx.insert_transaction(transaction(chain_id=3448148188, log_index=-1, token=USDT))
    with storage.transaction() as tx:
        stored = tx.get_invoice(tron.guid)
        assert stored == tron and stored.is_tip_jar
        [row], _ = tx.list_transactions(OWNER, chain_id=3448148188)
        assert row.log_index == -1


# The detected transfers' part of the contract, kept in a module of its own.
# Webhook endpoints (revision 0017): a module of their own, run with the rest of the suite.
from paycore.testing.storage_contract_endpoints import *  # noqa: E402, F403
from paycore.testing.storage_contract_signals import *  # noqa: E402, F403 - host-signal leases
from paycore.testing.storage_detected import *  # noqa: E402, F403
