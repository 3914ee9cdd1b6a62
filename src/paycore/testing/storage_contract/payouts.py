"""The payout batches' part of the ``paycore.storage`` contract (``paycore.storage.payouts``),
run against every backend: a batch and its rows round-trip exactly, go back together on a
rollback, and each row settles once."""

from __future__ import annotations

import threading
from decimal import Decimal

import attrs
import pytest

from paycore.payouts.records import Payout, PayoutBatch, PayoutStatus
from paycore.storage import Storage
from paycore.testing.storage_records import BIG, OWNER, TINY, USDT

BATCH = "0123456789abcdef0123456789abcdef"
TO = "0x4444444444444444444444444444444444444444"
HASH = "0x" + "ab" * 32


def batch(batch_id: str = BATCH) -> PayoutBatch:
    return PayoutBatch(
        id=batch_id,
        owner=OWNER,
        chain_id=31337,
        contract="0x5555555555555555555555555555555555555555",
        calls=("0x" + "01" * 32, "0x" + "02" * 32),
        created_at=1_700_000_000,
    )


def rows(batch_id: str = BATCH) -> list[Payout]:
    """Three rows over two calls; money at both ends of the column's range and a uint256
    value no BIGINT holds."""
    return [
        Payout(batch_id, 2, TO, USDT, TINY, 1, "r-2", 0, updated_at=1_700_000_000),
        Payout(batch_id, 3, TO, USDT, BIG, 2**256 - 1, "", 0, updated_at=1_700_000_000),
        Payout(batch_id, 7, TO, USDT, Decimal("1.5"), 1_500_000, "ü r-7", 1, updated_at=1),
    ]


def test_a_batch_and_its_rows_round_trip(storage: Storage) -> None:
    with storage.transaction() as tx:
        tx.insert_payout_batch(batch(), list(reversed(rows())))
    with storage.transaction() as tx:
        assert tx.get_payout_batch(BATCH) == batch()
        assert tx.payouts_of(BATCH) == rows()  # by line, whatever the insert order
        assert tx.get_payout_batch("f" * 32) is None
        assert tx.payouts_of("f" * 32) == []


def test_a_second_batch_under_one_id_is_refused_and_rolls_back_whole(storage: Storage) -> None:
    with storage.transaction() as tx:
        tx.insert_payout_batch(batch(), rows())
    with pytest.raises(ValueError), storage.transaction() as tx:
        tx.insert_payout_batch(batch(), rows()[:1])
    other = "f" * 32
    with pytest.raises(RuntimeError), storage.transaction() as tx:
        tx.insert_payout_batch(batch(other), rows(other))
        raise RuntimeError("the request failed after the insert")
    with storage.transaction() as tx:
        assert tx.payouts_of(BATCH) == rows()
        assert tx.get_payout_batch(other) is None and tx.payouts_of(other) == []


def test_settling_moves_only_the_calls_pending_rows_and_only_once(storage: Storage) -> None:
    with storage.transaction() as tx:
        tx.insert_payout_batch(batch(), rows())
    with storage.transaction() as tx:
        settled = tx.settle_payouts(BATCH, 0, PayoutStatus.CONFIRMED, HASH, 1_800_000_000)
    first, second, third = rows()
    assert settled == [
        attrs.evolve(p, status=PayoutStatus.CONFIRMED, tx_hash=HASH, updated_at=1_800_000_000)
        for p in (first, second)
    ]
    with storage.transaction() as tx:
        assert tx.settle_payouts(BATCH, 0, PayoutStatus.FAILED, HASH, 1_900_000_000) == []
        assert tx.payouts_of(BATCH) == [*settled, third]
        failed = tx.settle_payouts(BATCH, 1, PayoutStatus.FAILED, HASH, 1_900_000_000)
    assert [(p.line, p.status) for p in failed] == [(7, PayoutStatus.FAILED)]


def test_concurrent_settles_of_one_call_settle_each_row_once(storage: Storage) -> None:
    with storage.transaction() as tx:
        tx.insert_payout_batch(batch(), rows())
    counts: list[int] = []
    barrier = threading.Barrier(4)

    def settle() -> None:
        barrier.wait()
        with storage.transaction() as tx:
            counts.append(len(tx.settle_payouts(BATCH, 0, PayoutStatus.CONFIRMED, HASH, 5)))

    threads = [threading.Thread(target=settle) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(counts) == [0, 0, 0, 2]
