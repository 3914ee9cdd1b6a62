"""The host-signal lease part of the storage contract (``StorageTx.claim_signal``,
``move_signal``, ``release_signal``): one holder at a time runs a handler's queue, and only
it moves the queue's position. Re-exported by ``paycore.testing.storage_contract``."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from paycore.domain.records import ALL_OWNERS
from paycore.storage import Storage
from paycore.testing.storage_records import OWNER

__all__ = [
    "test_signal_lease_goes_to_one_holder_until_it_lapses",
    "test_signal_lease_only_its_holder_moves_the_position",
    "test_signal_lease_released_is_free_at_once",
    "test_signal_lease_concurrent_claims_have_one_winner",
]

_NOW = 1_700_000_000_000  # ms
_LEASE = 30_000
_QUEUE = "signal:shop.ship"


def _opened(storage: Storage) -> int:
    """Opens the queue after two events; returns its position."""
    with storage.transaction() as tx:
        tx.add_event(OWNER, "g-1", {"n": 1}, 1)
        tx.add_event(OWNER, "g-2", {"n": 2}, 2)
        tx.open_queue(_QUEUE, ALL_OWNERS)
        read = tx.read_outbox(_QUEUE, 10)
    assert read is not None
    return read.position


def _claim(storage: Storage, holder: str, now: int = _NOW) -> bool:
    with storage.transaction() as tx:
        return tx.claim_signal(_QUEUE, holder, now, _LEASE)


def _position(storage: Storage) -> int:
    with storage.transaction() as tx:
        read = tx.read_outbox(_QUEUE, 1)
    assert read is not None
    return read.position


def test_signal_lease_goes_to_one_holder_until_it_lapses(storage: Storage) -> None:
    _opened(storage)
    assert _claim(storage, "a")
    assert not _claim(storage, "b")
    assert _claim(storage, "a", _NOW + 1_000)  # renewed to _NOW + 31 s
    assert not _claim(storage, "b", _NOW + _LEASE + 999)
    assert _claim(storage, "b", _NOW + _LEASE + 1_000)  # lapsed: taken over
    assert not _claim(storage, "a", _NOW + _LEASE + 1_001)


def test_signal_lease_only_its_holder_moves_the_position(storage: Storage) -> None:
    start = _opened(storage)
    with storage.transaction() as tx:
        tx.add_event(OWNER, "g-3", {"n": 3}, 3)
        later = tx.add_event(OWNER, "g-4", {"n": 4}, 4)
    assert _claim(storage, "a")
    with storage.transaction() as tx:
        assert not tx.move_signal(_QUEUE, "b", start, later, _NOW, _LEASE)
    assert _position(storage) == start
    with storage.transaction() as tx:
        assert not tx.move_signal(_QUEUE, "a", start - 1, later, _NOW, _LEASE)  # stale start
        assert tx.move_signal(_QUEUE, "a", start, later - 1, _NOW, _LEASE)
    assert _position(storage) == later - 1
    # The move renewed the lease: still a's a lease-length after the move.
    assert not _claim(storage, "b", _NOW + _LEASE - 1)
    assert _claim(storage, "b", _NOW + _LEASE)
    with storage.transaction() as tx:  # fenced: a lost it, so a moves nothing
        assert not tx.move_signal(_QUEUE, "a", later - 1, later, _NOW + _LEASE, _LEASE)
    assert _position(storage) == later - 1


def test_signal_lease_released_is_free_at_once(storage: Storage) -> None:
    _opened(storage)
    assert _claim(storage, "a")
    with storage.transaction() as tx:
        tx.release_signal(_QUEUE, "b")  # not b's: a no-op
    assert not _claim(storage, "b")
    with storage.transaction() as tx:
        tx.release_signal(_QUEUE, "a")
    assert _claim(storage, "b")


def test_signal_lease_concurrent_claims_have_one_winner(storage: Storage) -> None:
    _opened(storage)
    with ThreadPoolExecutor(max_workers=6) as pool:
        won = list(pool.map(lambda n: _claim(storage, f"h{n}"), range(12)))
    assert won.count(True) == 1
