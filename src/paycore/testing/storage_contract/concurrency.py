"""The atomicity promises of ``paycore.storage`` under real threads, one transaction each.

Every worker waits on a barrier before opening its transaction, so the transactions really
overlap instead of running one after another as the threads happen to start.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from typing import TypeVar

import attrs
import pytest

from paycore.domain.records import Invoice, NewEvent, OutboxEvent, PowChallenge, Status
from paycore.storage import Storage, StorageTx
from paycore.testing.storage_records import OWNER, invoice, payment, session_key, transaction

T = TypeVar("T")


def race(workers: int, work: Callable[[int], T]) -> list[T]:
    """Run ``work(i)`` on ``workers`` threads released at the same moment; re-raise errors."""
    barrier = threading.Barrier(workers)

    def start(i: int) -> T:
        barrier.wait(timeout=30)
        return work(i)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(start, range(workers)))


def test_parallel_replays_of_one_nonce_accept_exactly_one(storage: Storage) -> None:
    key = session_key(last_seen_nonce=10)
    with storage.transaction() as tx:
        tx.put_session_key(key)

    def replay(_: int) -> bool:
        with storage.transaction() as tx:
            return tx.advance_nonce(key.address, 11)

    assert sorted(race(50, replay)) == [False] * 49 + [True]
    with storage.transaction() as tx:
        stored = tx.get_session_key(key.address)
    assert stored is not None and stored.last_seen_nonce == 11


def test_a_deposit_seen_by_two_workers_is_counted_once(storage: Storage) -> None:
    """The attribution pattern of the core: lock the invoice, record the transfer, and only
    if it was new add it to the invoice."""
    target = attrs.evolve(invoice(), paid_amount=Decimal(0), payments=(), status=Status.INIT)
    with storage.transaction() as tx:
        tx.insert_invoice(target)
    seen = transaction()

    def attribute(_: int) -> bool:
        with storage.transaction() as tx:
            current = tx.get_invoice(target.guid, for_update=True)
            assert current is not None
            if not tx.insert_transaction(seen):
                return False
            tx.update_invoice(
                attrs.evolve(
                    current,
                    paid_amount=current.paid_amount + seen.amount,
                    payments=(*current.payments, payment(seen.tx_hash, seen.log_index)),
                    status=Status.PAID,
                )
            )
            return True

    assert sorted(race(2, attribute)) == [False, True]
    with storage.transaction() as tx:
        stored = tx.get_invoice(target.guid)
        assert tx.list_transactions(OWNER) == ([seen], 1)
    assert stored is not None
    assert stored.paid_amount == seen.amount
    assert len(stored.payments) == 1


def test_a_reorged_deposit_is_flagged_by_one_worker(storage: Storage) -> None:
    """Two watchers that both saw a block replaced: one takes the deposit back."""
    row = attrs.evolve(transaction(), block_number=5, block_hash="0x05")
    with storage.transaction() as tx:
        tx.insert_transaction(row)

    def flag(_: int) -> bool:
        with storage.transaction() as tx:
            return tx.mark_reorged(*row.key) is not None

    assert sorted(race(8, flag)) == [False] * 7 + [True]
    remined = attrs.evolve(row, block_number=6, block_hash="0x06")

    def revive(_: int) -> bool:
        with storage.transaction() as tx:
            return tx.insert_transaction(remined)

    assert sorted(race(8, revive)) == [False] * 7 + [True]
    with storage.transaction() as tx:
        assert tx.recorded_deposits(1, 0) == [remined]


@pytest.mark.parametrize("read", ["get_invoice", "invoices_at_address"])
def test_a_locked_invoice_is_read_only_after_the_holder_commits(
    storage: Storage, read: str
) -> None:
    """Without the row lock the second reader would see the invoice as it was before the
    first transaction changed it, and both would attribute on top of the same old total."""
    with storage.transaction() as tx:
        tx.insert_invoice(invoice())
    locked = threading.Event()

    def read_locked(tx: StorageTx) -> Invoice:
        if read == "get_invoice":
            found = tx.get_invoice(invoice().guid, for_update=True)
            assert found is not None
            return found
        [found] = tx.invoices_at_address(invoice().chain_id, invoice().address, for_update=True)
        return found

    def holder() -> Status:
        with storage.transaction() as tx:
            current = read_locked(tx)
            locked.set()
            time.sleep(0.3)
            tx.update_invoice(attrs.evolve(current, status=Status.PAID))
        return current.status

    def waiter() -> Status:
        assert locked.wait(timeout=30)
        with storage.transaction() as tx:
            return read_locked(tx).status

    assert race(2, lambda i: (holder, waiter)[i]()) == [Status.INIT, Status.PAID]


def test_parallel_wallet_index_allocations_are_distinct_and_consecutive(
    storage: Storage,
) -> None:
    def allocate(_: int) -> int:
        with storage.transaction() as tx:
            return tx.allocate_wallet_index(OWNER, 1)

    assert sorted(race(20, allocate)) == list(range(20))


def test_concurrent_drains_split_the_events_without_overlap(storage: Storage) -> None:
    """Two pollers drain one queue while events keep arriving: every event reaches exactly
    one of them."""
    with storage.transaction() as tx:
        tx.open_queue("key-a", OWNER)
    produced: list[int] = []
    done = threading.Event()

    def produce() -> list[int]:
        for n in range(60):
            with storage.transaction() as tx:
                produced.append(tx.add_event(OWNER, f"guid-{n}", {"n": n}, n))
        done.set()
        return []

    def drain() -> list[int]:
        got: list[int] = []
        while True:
            finished = done.is_set()
            with storage.transaction() as tx:
                got.extend(e.id for e in tx.drain_queue("key-a", cap=1000))
            if finished:
                return got
            time.sleep(0.001)  # let the producer in between polls, like a real poller

    first, second, _ = race(3, lambda i: (drain, drain, produce)[i]())
    assert set(first).isdisjoint(second)
    assert sorted(first + second) == sorted(produced)
    assert len(produced) == 60
    # Each poller sees its share oldest first.
    assert first == sorted(first) and second == sorted(second)


def test_overlapping_writers_events_reach_every_queue_once_in_order(storage: Storage) -> None:
    """Four writers add events one at a time and in batches (the watcher's ``add_events``),
    each transaction lingering after its inserts so that commits come in another order than
    ids; one in four rolls back. Meanwhile two pollers share queue "a" and one polls "b"
    alone, and a queue "late" is opened half-way. Every committed event reaches "a" exactly
    once and "b" exactly once, in id order, each invoice's events in the order they were
    added; no rolled-back one ever does. "late" gets every event of a transaction begun
    after it was opened and, on one-writer-at-a-time storage, none of one that had committed
    before. (On PostgreSQL a new queue starts at the horizon, so it may also get events that
    committed just before it while an older writer was still open: more, never fewer.)"""
    with storage.transaction() as tx:
        tx.open_queue("a", OWNER)
        tx.open_queue("b", OWNER)
    lock = threading.Lock()
    committed: list[tuple[int, int, int]] = []  # (worker, round, k) of committed events
    before_late: set[tuple[int, int, int]] = set()  # committed before "late" was opened
    after_late: set[tuple[int, int, int]] = set()  # in transactions begun after that
    opening, opened, written = threading.Event(), threading.Event(), threading.Event()
    writing = [4]

    class Undo(Exception):
        pass

    def write(worker: int) -> None:
        for round_ in range(12):
            marks = [(worker, round_, k) for k in range(1 + round_ % 3)]
            begun_after = opened.is_set()
            try:
                with storage.transaction() as tx:
                    if len(marks) == 1:
                        tx.add_event(OWNER, f"inv-{worker}", {"m": marks[0]}, round_)
                    else:
                        batch = [NewEvent(OWNER, f"inv-{worker}", {"m": m}, round_) for m in marks]
                        tx.add_events(batch)
                    time.sleep(0.002 * ((worker + round_) % 3))  # commit late, sometimes
                    if round_ % 4 == 3:
                        raise Undo
            except Undo:
                continue
            with lock:
                committed.extend(marks)
                if not opening.is_set():
                    before_late.update(marks)
                if begun_after:
                    after_late.update(marks)
            if worker == 0 and round_ == 6:
                opening.set()
                with storage.transaction() as tx:
                    tx.open_queue("late", OWNER)
                opened.set()
        with lock:
            writing[0] -= 1
            if writing[0] == 0:
                written.set()

    def poll(queue: str) -> list[list[OutboxEvent]]:
        drains: list[list[OutboxEvent]] = []
        while True:
            finished = written.is_set()
            with storage.transaction() as tx:
                drains.append(tx.drain_queue(queue, cap=10_000))
            if finished:  # every writer had ended before this drain began
                return drains
            time.sleep(0.001)

    def role(i: int) -> list[list[OutboxEvent]]:
        if i < 4:
            write(i)
            return []
        return poll(("a", "a", "b")[i - 4])

    results = race(7, role)
    a_drains, b_drains = results[4] + results[5], results[6]
    with storage.transaction() as tx:
        late_got = tx.drain_queue("late", cap=10_000)

    def marks(drained: list[OutboxEvent]) -> list[tuple[int, int, int]]:
        return [tuple(e.payload["m"]) for e in drained]

    expected = sorted(committed)
    assert len(expected) == 4 * 18  # each worker commits 9 rounds of 1, 2 or 3 events
    a_all = [e for d in a_drains for e in d]
    assert sorted(marks(a_all)) == expected  # once each: no loss, no duplicate, no rollback
    for drained in a_drains:
        assert [e.id for e in drained] == sorted(e.id for e in drained)
    b_all = [e for d in b_drains for e in d]
    assert sorted(marks(b_all)) == expected
    assert [e.id for e in b_all] == sorted(e.id for e in b_all)  # one poller: id order
    for worker in range(4):  # an invoice's events in the order they were added
        mine = [m for m in marks(b_all) if m[0] == worker]
        assert mine == sorted(mine)
    got_late = set(marks(late_got))
    assert len(got_late) == len(late_got)
    assert after_late <= got_late and after_late
    if not _overlapping_writers(storage):
        assert not got_late & before_late
    assert got_late <= set(committed)


def _overlapping_writers(storage: Storage) -> bool:
    """Whether write transactions of ``storage`` run at the same time (PostgreSQL)."""
    engine = getattr(storage, "engine", None)
    return engine is not None and engine.dialect.name == "postgresql"


def test_row_counts_agree_with_the_rows_after_concurrent_inserts(storage: Storage) -> None:
    """Eight writers at once insert invoices and transactions of one owner on two chains,
    one at a time and in bulk, flag some transfers reorged and revive a few (each writer
    several transactions, some rolled back): the maintained counts must equal counting
    the rows."""

    class Undo(Exception):
        pass

    def write(worker: int) -> None:
        for round_ in range(6):
            try:
                with storage.transaction() as tx:
                    chain = 1 if (worker + round_) % 2 else 137
                    name = f"{worker:04d}{round_:04d}"
                    tx.insert_invoice(
                        invoice(f"00000000-0000-4000-8000-{name}0000", chain_id=chain)
                    )
                    row = transaction(f"0x{name}", chain_id=chain)
                    tx.insert_transaction(row)
                    tx.insert_transaction(transaction(f"0x{name}", chain_id=chain, log_index=1))
                    # In bulk: all new (one statement), then with a known row (row by row).
                    bulk = [transaction(f"0x{name}", chain_id=chain, log_index=n) for n in (2, 3)]
                    assert tx.insert_transactions(bulk) == [True, True]
                    again = [row, transaction(f"0x{name}", chain_id=chain, log_index=4)]
                    assert tx.insert_transactions(again) == [False, True]
                    if round_ % 3 == 1:
                        tx.mark_reorged(*row.key)
                    if round_ % 3 == 2:
                        tx.mark_reorged(*row.key)
                        tx.insert_transaction(row)  # mined again
                    if round_ == 5:
                        raise Undo
            except Undo:
                pass

    race(8, write)
    with storage.transaction() as tx:
        invoices_all, invoices_total = tx.list_invoices(owner=OWNER)
        rows_all, rows_total = tx.list_transactions(OWNER, limit=10_000)
        by_chain = {
            chain: (
                tx.count_invoices(owner=OWNER, chain_id=chain),
                tx.count_transactions(OWNER, chain_id=chain),
            )
            for chain in (1, 137)
        }
    assert len(invoices_all) == invoices_total == 8 * 5
    assert len(rows_all) == rows_total == 8 * 5 * 5 - 8 * 2  # two rounds of 5 stay flagged
    for chain, (invoice_count, row_count) in by_chain.items():
        assert invoice_count == sum(1 for i in invoices_all if i.chain_id == chain)
        assert row_count == sum(1 for r in rows_all if r.chain_id == chain)


def test_a_challenge_taken_in_parallel_is_handed_out_once(storage: Storage) -> None:
    with storage.transaction() as tx:
        tx.put_challenge(PowChallenge("c0ffee", OWNER, 8, 2_000_000_000))

    def take(_: int) -> bool:
        with storage.transaction() as tx:
            return tx.take_challenge("c0ffee") is not None

    assert sorted(race(2, take)) == [False, True]


def test_a_signature_remembered_in_parallel_is_accepted_once(storage: Storage) -> None:
    def remember(_: int) -> bool:
        with storage.transaction() as tx:
            return tx.remember_signature("digest", 2_000_000_000)

    assert sorted(race(10, remember)) == [False] * 9 + [True]
