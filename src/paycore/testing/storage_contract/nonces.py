"""``accept_nonce`` and ``spend_nonce`` (the replay window of session keys) and the
session-key writes that must not undo it, on every backend; concurrency with real threads,
one transaction each.

Every window test runs through each way in: ``StorageTx.accept_nonce``,
``StorageTx.spend_nonce`` (a request's one transaction) and ``Storage.spend_nonce`` (a unit
of its own: one autocommitted statement on PostgreSQL). They must agree on every answer.
"""

from __future__ import annotations

import hashlib
import random

import attrs
import pytest

from paycore.storage import Storage
from paycore.testing.storage_contract.concurrency import race
from paycore.testing.storage_records import session_key

KEY = session_key()
WINDOW = 1000
#: Inside the key's validity (``session_key`` registers at 1_700_000_000 for 30 days).
NOW = KEY.registered_at + 60
WAYS_IN = ("tx.accept_nonce", "tx.spend_nonce", "storage.spend_nonce")
#: The way in the running test uses; set by the ``way_in`` fixture.
way: str = WAYS_IN[0]


@pytest.fixture(params=WAYS_IN)
def way_in(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(f"{__name__}.way", request.param)
    return str(request.param)


def digest(label: object) -> str:
    """The sha256 hex of a payload, as the session verifier passes it."""
    return hashlib.sha256(str(label).encode()).hexdigest()


def accept(
    storage: Storage,
    nonce: int,
    payload: object = "",
    *,
    window: int = WINDOW,
    strict: bool = False,
) -> bool:
    message = (KEY.address, nonce, digest(payload))
    if way == "storage.spend_nonce":
        return storage.spend_nonce(*message, window=window, strict=strict, now=NOW) is not None
    with storage.transaction() as tx:
        if way == "tx.spend_nonce":
            return tx.spend_nonce(*message, window=window, strict=strict, now=NOW) is not None
        return tx.accept_nonce(*message, window=window, strict=strict)


def highest(storage: Storage) -> int:
    with storage.transaction() as tx:
        stored = tx.get_session_key(KEY.address)
    assert stored is not None
    return stored.last_seen_nonce


@pytest.fixture
def keyed(storage: Storage, way_in: str) -> Storage:
    with storage.transaction() as tx:
        tx.put_session_key(KEY)
    return storage


# -- the contract, one transaction at a time ---------------------------------------------------


def test_each_message_is_accepted_once(keyed: Storage) -> None:
    assert accept(keyed, 5000) is True
    assert accept(keyed, 5000) is False
    assert highest(keyed) == 5000
    # The same nonce over another payload is another message.
    assert accept(keyed, 5000, "other body") is True
    assert accept(keyed, 5000, "other body") is False


def test_reordered_nonces_pass_within_the_window_only(keyed: Storage) -> None:
    assert accept(keyed, 5000) is True
    assert [accept(keyed, n) for n in (4999, 4001, 4500)] == [True, True, True]
    assert highest(keyed) == 5000  # a late nonce never lowers the mark
    assert [accept(keyed, n) for n in (4999, 4001, 4500)] == [False, False, False]
    assert accept(keyed, 4000) is False  # highest - window: out, used or not
    assert accept(keyed, 5001) is True and highest(keyed) == 5001


def test_strict_accepts_only_above_the_highest(keyed: Storage) -> None:
    assert accept(keyed, 10, strict=True) is True
    assert accept(keyed, 10, "other", strict=True) is False
    assert accept(keyed, 9, strict=True) is False
    assert accept(keyed, 11, strict=True) is True and highest(keyed) == 11


def test_nonces_accepted_in_strict_mode_stay_refused_in_window_mode(keyed: Storage) -> None:
    """Switching the setting never reopens a replay: strict mode records nothing, so it
    leaves a floor under which window mode refuses every nonce, used or not."""
    for nonce in (100, 200, 300):
        assert accept(keyed, nonce, strict=True) is True
    assert [accept(keyed, n) for n in (100, 150, 200, 300)] == [False] * 4
    assert accept(keyed, 250, "other") is False
    assert accept(keyed, 301) is True and accept(keyed, 290) is False
    assert accept(keyed, 350) is True and accept(keyed, 320) is True  # the window, above it


def test_window_mode_messages_stay_refused_in_strict_mode_and_below_its_floor(
    keyed: Storage,
) -> None:
    assert accept(keyed, 500) is True and accept(keyed, 400) is True
    assert [accept(keyed, n, strict=True) for n in (400, 450, 500)] == [False] * 3
    assert accept(keyed, 501, strict=True) is True and accept(keyed, 480) is False


def test_window_moves_and_forgets_only_what_it_refuses_anyway(keyed: Storage) -> None:
    assert accept(keyed, 1000) is True
    assert accept(keyed, 1500) is True
    assert accept(keyed, 2001) is True  # 1000 falls out (<= 2001 - 1000), 1500 stays in
    assert accept(keyed, 1000) is False
    assert accept(keyed, 1500) is False
    assert accept(keyed, 1200) is True


def test_unknown_key_accepts_nothing(storage: Storage, way_in: str) -> None:
    with storage.transaction() as tx:
        assert tx.accept_nonce("0xunknown", 1, digest(""), window=WINDOW) is False


def test_a_rolled_back_acceptance_leaves_nothing(keyed: Storage) -> None:
    with pytest.raises(RuntimeError), keyed.transaction() as tx:
        if way == "tx.accept_nonce":
            assert tx.accept_nonce(KEY.address, 7000, digest(""), window=WINDOW) is True
        else:
            assert tx.spend_nonce(KEY.address, 7000, digest(""), window=WINDOW, now=NOW)
        raise RuntimeError("the request failed after its nonce was accepted")
    assert highest(keyed) == 0
    assert accept(keyed, 7000) is True


def test_writing_a_key_never_lowers_its_nonce_nor_revives_it(keyed: Storage) -> None:
    assert accept(keyed, 9000) is True
    stale = attrs.evolve(KEY, expires_at=KEY.expires_at + 100)  # read before the 9000
    with keyed.transaction() as tx:
        tx.put_session_key(stale)
        stored = tx.get_session_key(KEY.address)
    assert stored == attrs.evolve(stale, last_seen_nonce=9000)
    with keyed.transaction() as tx:
        tx.put_session_key(attrs.evolve(stored, expires_at=0))  # deregistered
        tx.put_session_key(stored)  # a refresh that read the key before that
        after = tx.get_session_key(KEY.address)
    assert after is not None and after.expires_at == 0


@pytest.mark.parametrize("way_in", ["tx.spend_nonce", "storage.spend_nonce"], indirect=True)
def test_spend_nonce_returns_the_key_as_it_now_stands(keyed: Storage, way_in: str) -> None:
    """The owner and the raised nonce come back with the acceptance: the request needs no
    second statement to learn whose key signed it."""
    message = (KEY.address, 5000, digest("body"))
    if way_in == "storage.spend_nonce":
        spent = keyed.spend_nonce(*message, window=WINDOW, now=NOW)
    else:
        with keyed.transaction() as tx:
            spent = tx.spend_nonce(*message, window=WINDOW, now=NOW)
    assert spent == attrs.evolve(KEY, last_seen_nonce=5000)
    assert accept(keyed, 4999) is True  # in the window: the key still says 5000
    assert highest(keyed) == 5000


@pytest.mark.parametrize("way_in", ["tx.spend_nonce", "storage.spend_nonce"], indirect=True)
def test_spend_nonce_refuses_an_expired_or_deregistered_key_and_records_nothing(
    storage: Storage, way_in: str
) -> None:
    expired = attrs.evolve(KEY, expires_at=NOW)  # expires_at is the first refused second
    revoked = attrs.evolve(KEY, address="0x8888888888888888888888888888888888888888", expires_at=0)
    with storage.transaction() as tx:
        tx.put_session_key(expired)
        tx.put_session_key(revoked)
    for key in (expired, revoked, attrs.evolve(KEY, address="0x" + "9" * 40)):
        message = (key.address, 10, digest(""))
        if way_in == "storage.spend_nonce":
            assert storage.spend_nonce(*message, window=WINDOW, now=NOW) is None
        else:
            with storage.transaction() as tx:
                assert tx.spend_nonce(*message, window=WINDOW, now=NOW) is None
    with storage.transaction() as tx:
        assert tx.get_session_key(expired.address) == expired  # nonce not raised
        # accept_nonce does not look at expiry: the message was never recorded, so it passes
        assert tx.accept_nonce(expired.address, 10, digest(""), window=WINDOW) is True


# -- under concurrency ------------------------------------------------------------------------


@pytest.mark.parametrize("workers", [20, 200])
def test_concurrent_distinct_messages_of_one_key_all_pass(keyed: Storage, workers: int) -> None:
    """Date.now() nonces of parallel requests, arriving in any order, all within the window."""
    base = 1_700_000_000_000
    nonces = [base + i for i in range(workers)]
    random.Random(workers).shuffle(nonces)
    outcomes = race(workers, lambda i: accept(keyed, nonces[i], window=60_000))
    assert outcomes == [True] * workers
    assert highest(keyed) == base + workers - 1


@pytest.mark.parametrize("workers", [20, 200])
def test_strict_mode_refuses_what_arrives_after_a_higher_nonce(
    keyed: Storage, workers: int
) -> None:
    assert accept(keyed, 1_000 + workers, strict=True) is True  # the last one, arrived first
    outcomes = race(workers, lambda i: accept(keyed, 1_000 + i, strict=True))
    assert outcomes == [False] * workers
    # All at once: some pass, at most one per nonce, and the mark ends at the highest.
    outcomes = race(workers, lambda i: accept(keyed, 2_000 + i, strict=True))
    assert 1 <= outcomes.count(True) <= workers
    assert highest(keyed) == 2_000 + workers - 1


def test_concurrent_replays_accept_each_message_exactly_once(keyed: Storage) -> None:
    """20 messages, each sent 10 times at once, in a shuffled order: 20 acceptances."""
    sends = [(5_000 + i % 20, f"body {i % 20}") for i in range(200)]
    random.Random(7).shuffle(sends)
    outcomes = race(200, lambda i: accept(keyed, sends[i][0], sends[i][1]))
    accepted = sorted(send for send, ok in zip(sends, outcomes, strict=True) if ok)
    assert accepted == sorted({(5_000 + i, f"body {i}") for i in range(20)})
    assert highest(keyed) == 5_019


def test_parallel_replays_of_one_message_accept_exactly_one(keyed: Storage) -> None:
    assert sorted(race(50, lambda i: accept(keyed, 11))) == [False] * 49 + [True]
