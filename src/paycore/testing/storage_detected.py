"""The detected-transfers part of the ``paycore.storage`` contract (``replace_detected``,
``detected_of``), as tests a storage plugin runs; ``storage_contract`` brings them in, so a
plugin's one ``from paycore.testing.storage_contract import *`` runs them too."""

from __future__ import annotations

from decimal import Decimal

import attrs

from paycore.domain.detected import Detected
from paycore.storage import Storage
from paycore.testing.storage_records import BIG, NATIVE, TINY, USDT

DETECTED_GUID = "00000000-0000-4000-8000-00000000d001"
OTHER_DETECTED_GUID = "00000000-0000-4000-8000-00000000d002"
TRON_CHAIN = 3448148188


def detected(
    n: int,
    *,
    chain_id: int = 1,
    guid: str = DETECTED_GUID,
    block: int = 100,
    token: str = USDT,
    amount: Decimal = TINY,
    log_index: int = 0,
) -> Detected:
    """Every field non-default, money at either end of the column's range."""
    return Detected(
        chain_id=chain_id,
        tx_hash="0x" + f"{n:064x}",
        log_index=log_index,
        token=token,
        from_="0x4444444444444444444444444444444444444444",
        to="0x3333333333333333333333333333333333333333",
        amount=amount,
        block_number=block,
        block_hash="0x" + f"{block:064x}",
        timestamp=1_700_000_100 + block,
        confirmations=2,
        required=12,
        guid=guid,
        seen_at=1_700_000_200,
    )


def test_detected_round_trips_every_field_by_invoice(storage: Storage) -> None:
    first = detected(1, block=101, amount=BIG)
    native = detected(2, block=100, token=NATIVE, log_index=-1)
    other = detected(3, guid=OTHER_DETECTED_GUID)
    with storage.transaction() as tx:
        assert tx.detected_of([DETECTED_GUID]) == []
        tx.replace_detected(1, [first, native, other])
    with storage.transaction() as tx:
        assert tx.detected_of([DETECTED_GUID]) == [native, first]  # oldest block first
        assert tx.detected_of([OTHER_DETECTED_GUID, DETECTED_GUID]) == [native, first, other]
        assert tx.detected_of([]) == []
        assert tx.detected_of(["00000000-0000-4000-8000-00000000dfff"]) == []


def test_replace_detected_replaces_one_chains_rows_only(storage: Storage) -> None:
    gone, kept = detected(1), detected(2, block=101)
    tron = detected(3, chain_id=TRON_CHAIN, block=200)
    with storage.transaction() as tx:
        tx.replace_detected(1, [gone, kept])
        tx.replace_detected(TRON_CHAIN, [tron])
    deeper = attrs.evolve(kept, confirmations=3, seen_at=1_700_000_300)
    with storage.transaction() as tx:
        tx.replace_detected(1, [deeper])  # gone dropped (a reorg), kept one block deeper
    with storage.transaction() as tx:
        assert tx.detected_of([DETECTED_GUID]) == [deeper, tron]
        tx.replace_detected(1, [])
    with storage.transaction() as tx:
        assert tx.detected_of([DETECTED_GUID]) == [tron]


def test_replace_detected_is_idempotent_and_keyed_by_transfer(storage: Storage) -> None:
    row = detected(1)
    later = attrs.evolve(row, confirmations=5)
    other_token = attrs.evolve(row, token=NATIVE)
    stray = detected(9, chain_id=TRON_CHAIN)  # not of the chain replaced: ignored
    for _ in range(2):
        with storage.transaction() as tx:
            tx.replace_detected(1, [row, later, other_token, stray])
    with storage.transaction() as tx:
        assert tx.detected_of([DETECTED_GUID]) == sorted(
            [later, other_token], key=lambda d: d.token
        )


def test_replace_detected_rolls_back_with_its_transaction(storage: Storage) -> None:
    row = detected(1)
    with storage.transaction() as tx:
        tx.replace_detected(1, [row])
    try:
        with storage.transaction() as tx:
            tx.replace_detected(1, [])
            assert tx.detected_of([DETECTED_GUID]) == []
            raise LookupError("roll back")
    except LookupError:
        pass
    with storage.transaction() as tx:
        assert tx.detected_of([DETECTED_GUID]) == [row]
