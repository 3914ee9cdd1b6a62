"""The chain-watcher part of the ``paycore.storage`` contract, on every backend: one lease per
chain, a cursor only its holder moves, and the set of addresses worth watching."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from paycore.chains.records import ChainCursor
from paycore.domain.records import Status
from paycore.storage import Storage
from paycore.testing.storage_records import OWNER, invoice

NOW = 1_700_000_000_000  # ms
LEASE = 30_000
HASH_A = "0x" + "aa" * 32
HASH_B = "0x" + "bb" * 32


def guid(n: int) -> str:
    return f"00000000-0000-4000-8000-{n:012d}"


def address(n: int) -> str:
    return "0x" + f"{n:040x}"


def claim(storage: Storage, holder: str, now: int = NOW, chain_id: int = 1) -> ChainCursor | None:
    with storage.transaction() as tx:
        return tx.claim_chain(chain_id, holder, now, LEASE)


def advance(
    storage: Storage, holder: str, number: int, block_hash: str | None, now: int = NOW
) -> bool:
    with storage.transaction() as tx:
        return tx.advance_chain(1, holder, number, block_hash, now, LEASE)


def cursor(storage: Storage, chain_id: int = 1) -> ChainCursor | None:
    with storage.transaction() as tx:
        return tx.get_chain_cursor(chain_id)


def test_a_first_claim_creates_an_empty_cursor(storage: Storage) -> None:
    assert cursor(storage) is None
    got = claim(storage, "w1")
    assert got == ChainCursor(1, None, None, "w1", NOW + LEASE)
    assert cursor(storage) == got
    assert cursor(storage, 2) is None


def test_a_live_lease_keeps_others_out_until_it_lapses(storage: Storage) -> None:
    assert claim(storage, "w1") is not None
    assert claim(storage, "w2", NOW + 1) is None
    assert claim(storage, "w2", NOW + LEASE - 1) is None
    renewed = claim(storage, "w1", NOW + 10_000)  # the holder renews at will
    assert renewed is not None and renewed.lease_until == NOW + 10_000 + LEASE
    assert claim(storage, "w2", NOW + 10_000 + LEASE - 1) is None
    taken = claim(storage, "w2", NOW + 10_000 + LEASE)  # lapsed: anyone may take it
    assert taken is not None and taken.holder == "w2"
    assert claim(storage, "w1", NOW + 10_000 + LEASE + 1) is None


def test_only_the_holder_moves_the_cursor(storage: Storage) -> None:
    claim(storage, "w1")
    assert advance(storage, "w1", 100, HASH_A, NOW + 5)
    assert not advance(storage, "w2", 999, HASH_B, NOW + 6)
    got = cursor(storage)
    assert got == ChainCursor(1, 100, HASH_A, "w1", NOW + 5 + LEASE)  # renewed by advancing
    claimed = claim(storage, "w1", NOW + 7)
    assert claimed is not None and (claimed.block_number, claimed.block_hash) == (100, HASH_A)


def test_a_cursor_moves_back_after_a_reorg_and_may_lose_its_hash(storage: Storage) -> None:
    claim(storage, "w1")
    assert advance(storage, "w1", 100, HASH_A)
    assert advance(storage, "w1", 36, None)
    got = cursor(storage)
    assert got is not None and (got.block_number, got.block_hash) == (36, None)


def test_a_taken_over_holder_cannot_move_the_new_holders_cursor(storage: Storage) -> None:
    claim(storage, "w1")
    advance(storage, "w1", 10, HASH_A)
    later = NOW + LEASE + 1
    assert claim(storage, "w2", later) is not None
    assert advance(storage, "w2", 20, HASH_B, later)
    assert not advance(storage, "w1", 11, HASH_A, later + 1)  # it was killed, then woke up
    got = cursor(storage)
    assert got is not None and (got.block_number, got.holder) == (20, "w2")


def test_a_lapsed_lease_nobody_took_is_still_the_holders(storage: Storage) -> None:
    claim(storage, "w1")
    assert advance(storage, "w1", 10, HASH_A, NOW + 10 * LEASE)
    got = cursor(storage)
    assert got is not None and got.lease_until == NOW + 11 * LEASE


def test_release_frees_the_lease_and_keeps_the_cursor(storage: Storage) -> None:
    claim(storage, "w1")
    advance(storage, "w1", 10, HASH_A)
    with storage.transaction() as tx:
        tx.release_chain(1, "w2")  # not its lease: nothing happens
    assert claim(storage, "w2", NOW + 1) is None
    with storage.transaction() as tx:
        tx.release_chain(1, "w1")
    taken = claim(storage, "w2", NOW + 2)
    assert taken == ChainCursor(1, 10, HASH_A, "w2", NOW + 2 + LEASE)


def test_chains_have_separate_leases(storage: Storage) -> None:
    assert claim(storage, "w1", chain_id=1) is not None
    assert claim(storage, "w2", chain_id=137) is not None
    assert claim(storage, "w2", chain_id=1) is None


def test_a_claim_rolls_back_with_its_transaction(storage: Storage) -> None:
    with pytest.raises(RuntimeError), storage.transaction() as tx:
        tx.claim_chain(1, "w1", NOW, LEASE)
        raise RuntimeError("boom")
    assert cursor(storage) is None
    assert claim(storage, "w2") is not None


def test_parallel_claims_have_one_winner(storage: Storage) -> None:
    workers = 16
    barrier = threading.Barrier(workers)

    def race(i: int) -> bool:
        barrier.wait(timeout=30)
        return claim(storage, f"w{i}") is not None

    with ThreadPoolExecutor(max_workers=workers) as pool:
        won = list(pool.map(race, range(workers)))
    assert won.count(True) == 1


def test_watched_addresses_are_open_or_recently_due_invoices_of_the_chain(
    storage: Storage,
) -> None:
    deadline_after = 1_700_000_000
    rows = [
        # (n, chain, status, deadline, watched?)
        (1, 1, Status.INIT, deadline_after - 10**6, True),  # open, however old
        (2, 1, Status.PARTIAL_PAID, deadline_after - 10**6, True),
        (3, 1, Status.EXPIRED, deadline_after, True),  # due within the grace period
        (4, 1, Status.PAID, deadline_after + 50, True),  # overpayments still recorded
        (5, 1, Status.EXPIRED, deadline_after - 1, False),  # past the grace period
        (6, 1, Status.PAID, deadline_after - 1, False),
        (7, 137, Status.INIT, deadline_after + 50, False),  # another chain
    ]
    with storage.transaction() as tx:
        for n, chain_id, status, deadline, _ in rows:
            tx.insert_invoice(
                invoice(
                    guid(n),
                    chain_id=chain_id,
                    address=address(n),
                    status=status,
                    deadline=deadline,
                    created_at=deadline - 3600,
                )
            )
        # A second invoice at an address already watched: listed once.
        tx.insert_invoice(invoice(guid(99), address=address(1), owner=OWNER))
    with storage.transaction() as tx:
        watched = tx.watched_addresses(1, deadline_after)
        assert tx.watched_addresses(5, deadline_after) == []
    assert watched == [address(n) for n, *_, wanted in rows if wanted]


def test_earliest_watched_is_the_oldest_creation_among_the_watched_invoices(
    storage: Storage,
) -> None:
    """Where a new watcher must begin: the oldest invoice it watches, not the oldest one
    stored (a long-settled invoice would send it back for nothing)."""
    after = 1_700_000_000
    with storage.transaction() as tx:
        assert tx.earliest_watched(1, after) is None
        rows = [
            # (n, chain, status, deadline, created_at)
            (1, 1, Status.PAID, after - 1, 1_000),  # settled long ago: not watched
            (2, 137, Status.INIT, after + 9, 2_000),  # another chain
            (3, 1, Status.EXPIRED, after, 5_000),  # due within the grace period
            (4, 1, Status.INIT, after + 9, 7_000),
        ]
        for n, chain_id, status, deadline, created_at in rows:
            tx.insert_invoice(
                invoice(
                    guid(n),
                    chain_id=chain_id,
                    address=address(n),
                    status=status,
                    deadline=deadline,
                    created_at=created_at,
                )
            )
    with storage.transaction() as tx:
        assert tx.earliest_watched(1, after) == 5_000
        assert tx.earliest_watched(1, after + 1) == 7_000  # the expired one left the grace
        assert tx.earliest_watched(137, after) == 2_000
        assert tx.earliest_watched(5, after) is None
