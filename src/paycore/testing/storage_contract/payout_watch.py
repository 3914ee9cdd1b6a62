"""The payout watch list's part of the ``paycore.storage`` contract
(``paycore.storage.payout_watch``): a hash is kept once per batch, read back longest kept
first, dropped on request, and taken back by a rollback."""

from __future__ import annotations

import pytest

from paycore.storage import Storage

A = "0123456789abcdef0123456789abcdef"
B = "fedcba9876543210fedcba9876543210"
H1, H2, H3 = ("0x" + c * 64 for c in "123")


def test_watched_hashes_are_kept_once_and_read_oldest_first(storage: Storage) -> None:
    with storage.transaction() as tx:
        assert tx.watched_payout_hashes(10) == []
        tx.watch_payout_hashes(B, [H2], 200)
        tx.watch_payout_hashes(A, [H1, H1], 100)
    with storage.transaction() as tx:
        tx.watch_payout_hashes(A, [H1, H3], 300)  # H1 again: kept as it was, at 100
        tx.watch_payout_hashes(B, [H1], 300)  # the same hash for another batch is its own
    with storage.transaction() as tx:
        assert tx.watched_payout_hashes(10) == [(A, H1), (B, H2), (A, H3), (B, H1)]
        assert tx.watched_payout_hashes(2) == [(A, H1), (B, H2)]


def test_an_unwatched_hash_is_gone_and_a_rollback_keeps_it(storage: Storage) -> None:
    with storage.transaction() as tx:
        tx.watch_payout_hashes(A, [H1, H2], 100)
    with pytest.raises(RuntimeError), storage.transaction() as tx:
        tx.unwatch_payout_hash(A, H1)
        raise RuntimeError("rolled back")
    with storage.transaction() as tx:
        assert tx.watched_payout_hashes(10) == [(A, H1), (A, H2)]
        tx.unwatch_payout_hash(A, H1)
        tx.unwatch_payout_hash(B, H1)  # never kept: nothing happens
    with storage.transaction() as tx:
        assert tx.watched_payout_hashes(10) == [(A, H2)]
