"""The refunds part of the ``paycore.storage`` contract, run against every backend."""

from __future__ import annotations

import threading
from decimal import Decimal

import attrs
import pytest

from paycore.domain.records import RateSource, Refund, RefundStatus
from paycore.storage import Storage
from paycore.testing.storage_records import BIG, OTHER_OWNER, OWNER, TINY, USDT, invoice

GUID = "00000000-0000-4000-8000-000000000001"
OTHER_GUID = "00000000-0000-4000-8000-000000000002"
PAYER = "0x4444444444444444444444444444444444444444"


def refund(
    n: int,
    *,
    guid: str = GUID,
    owner: str = OWNER,
    chain_id: int = 1,
    status: RefundStatus = RefundStatus.PENDING,
    amount: Decimal = TINY,
) -> Refund:
    """Every field non-default, money at both ends of the column's range."""
    return Refund(
        id=f"00000000-0000-4000-9000-{n:012d}",
        guid=guid,
        owner=owner,
        chain_id=chain_id,
        token=USDT,
        to=PAYER,
        amount=amount,
        vs_value=BIG,
        rate=Decimal("0.333333333333333333"),
        rate_source=RateSource.NOW,
        status=status,
        created_at=1_700_000_300 + n,
    )


def confirmed(r: Refund, n: int = 7) -> Refund:
    return attrs.evolve(
        r,
        status=RefundStatus.CONFIRMED,
        tx_hash="0x" + f"{n:02x}" * 32,
        log_index=n,
        settled_at=1_700_000_900,
    )


def test_a_refund_round_trips_every_field(storage: Storage) -> None:
    original = refund(1)
    settled = confirmed(refund(2))
    with storage.transaction() as tx:
        tx.insert_refund(original)
        tx.insert_refund(settled)
    with storage.transaction() as tx:
        assert tx.get_refund(original.id) == original
        assert tx.get_refund(settled.id) == settled
        assert tx.get_refund("00000000-0000-4000-9000-999999999999") is None
    stored = tx_refund(storage, original.id)
    assert stored.amount == TINY and stored.vs_value == BIG
    assert stored.rate == Decimal("0.333333333333333333")
    assert stored.rate_source is RateSource.NOW and stored.status is RefundStatus.PENDING


def tx_refund(storage: Storage, refund_id: str) -> Refund:
    with storage.transaction() as tx:
        found = tx.get_refund(refund_id)
    assert found is not None
    return found


def test_a_duplicate_id_is_refused_and_rolls_back(storage: Storage) -> None:
    with storage.transaction() as tx:
        tx.insert_refund(refund(1))
    with pytest.raises(ValueError), storage.transaction() as tx:
        tx.insert_refund(refund(2))
        tx.insert_refund(attrs.evolve(refund(3), id=refund(1).id))
    with storage.transaction() as tx:
        assert tx.get_refund(refund(2).id) is None  # nothing half-written
        assert tx.refunds_of([GUID]) == [refund(1)]


def test_refunds_of_lists_by_invoice_then_in_insertion_order(storage: Storage) -> None:
    # Inserted out of id order and interleaved between invoices, within one second.
    order = [
        refund(5),
        attrs.evolve(refund(1), guid=OTHER_GUID),
        refund(3),
        refund(4, status=RefundStatus.CANCELLED),
    ]
    for r in order:
        with storage.transaction() as tx:
            tx.insert_refund(r)
    with storage.transaction() as tx:
        assert tx.refunds_of([GUID]) == [order[0], order[2], order[3]]
        assert tx.refunds_of([OTHER_GUID, GUID]) == [order[0], order[2], order[3], order[1]]
        assert tx.refunds_of([OTHER_GUID, OTHER_GUID]) == [order[1]]
        assert tx.refunds_of([]) == []
        assert tx.refunds_of(["00000000-0000-4000-8000-000000000099"]) == []


def test_refunds_are_not_part_of_the_invoice_row(storage: Storage) -> None:
    """Invoice reads come back without refunds, even if the record handed in had some."""
    with_refunds = attrs.evolve(invoice(), refunds=(refund(1),))
    with storage.transaction() as tx:
        tx.insert_invoice(with_refunds)
    with storage.transaction() as tx:
        stored = tx.get_invoice(GUID)
        assert stored is not None and stored.refunds == ()
        tx.update_invoice(with_refunds)
    with storage.transaction() as tx:
        assert tx.get_invoice(GUID) == invoice()
        assert tx.refunds_of([GUID]) == []


def test_pending_refunds_by_chain_and_owner_oldest_first(storage: Storage) -> None:
    rows = [
        refund(9),
        refund(2, owner=OTHER_OWNER),
        refund(3, chain_id=137),
        confirmed(refund(4)),
        refund(5, status=RefundStatus.CANCELLED),
        refund(1, guid=OTHER_GUID),
    ]
    with storage.transaction() as tx:
        for r in rows:
            tx.insert_refund(r)
    with storage.transaction() as tx:
        assert tx.pending_refunds(1, [OWNER]) == [rows[0], rows[5]]
        assert tx.pending_refunds(1, [OTHER_OWNER, OWNER]) == [rows[0], rows[1], rows[5]]
        assert tx.pending_refunds(137, [OWNER]) == [rows[2]]
        assert tx.pending_refunds(1, []) == []
        assert tx.pending_refunds(56, [OWNER]) == []


def test_settle_refund_moves_a_pending_refund_once(storage: Storage) -> None:
    pending = refund(1)
    with storage.transaction() as tx:
        tx.insert_refund(pending)
    paid = confirmed(pending)
    # Only the settled fields are taken from the record handed in.
    with storage.transaction() as tx:
        assert tx.settle_refund(attrs.evolve(paid, amount=BIG, to=OWNER)) is True
    assert tx_refund(storage, pending.id) == paid
    cancelled = attrs.evolve(pending, status=RefundStatus.CANCELLED, settled_at=1_700_000_950)
    with storage.transaction() as tx:
        assert tx.settle_refund(cancelled) is False  # confirmed already: nothing changes
        assert tx.settle_refund(attrs.evolve(cancelled, id="unknown")) is False
    assert tx_refund(storage, pending.id) == paid


def test_a_rolled_back_settle_leaves_the_refund_pending(storage: Storage) -> None:
    pending = refund(1)
    with storage.transaction() as tx:
        tx.insert_refund(pending)
    with pytest.raises(RuntimeError), storage.transaction() as tx:
        assert tx.settle_refund(confirmed(pending))
        raise RuntimeError("the batch failed after settling")
    assert tx_refund(storage, pending.id) == pending
    with storage.transaction() as tx:
        assert tx.pending_refunds(1, [OWNER]) == [pending]


def test_concurrent_settles_one_wins(storage: Storage) -> None:
    """The watcher confirming and the merchant cancelling race: exactly one takes it."""
    pending = refund(1)
    with storage.transaction() as tx:
        tx.insert_refund(pending)
    outcomes = [
        confirmed(pending, n)
        if n % 2
        else attrs.evolve(pending, status=RefundStatus.CANCELLED, settled_at=n)
        for n in range(8)
    ]
    won: list[Refund] = []
    barrier = threading.Barrier(len(outcomes))

    def settle(outcome: Refund) -> None:
        barrier.wait()
        with storage.transaction() as tx:
            if tx.settle_refund(outcome):
                won.append(outcome)

    threads = [threading.Thread(target=settle, args=(o,)) for o in outcomes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(won) == 1
    assert tx_refund(storage, pending.id) == won[0]
