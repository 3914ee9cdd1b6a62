"""Proof of work: bound to an address, single use, expiring, and really work."""

from __future__ import annotations

import pytest
from auth_helpers import NOW, account

from paycore.auth import issue_challenge, leading_zero_bits, meets_difficulty, solve, verify_pow
from paycore.auth.pow import pow_digest
from paycore.config import Settings
from paycore.domain.records import POW_ALGORITHM
from paycore.errors import Forbidden, InvalidInput
from paycore.storage.memory import MemoryStorage

SETTINGS = Settings(pow_difficulty=10, challenge_ttl=120)
ADDRESS = account("merchant").address


def _unsolved(challenge: str, difficulty: int) -> int:
    return next(n for n in range(10_000) if not meets_difficulty(challenge, n, difficulty))


@pytest.mark.parametrize(
    ("digest", "bits"),
    [
        (b"\x80" + b"\x00" * 31, 0),
        (b"\x01" + b"\xff" * 31, 7),
        (b"\x00\x00\x10" + b"\x00" * 29, 19),
    ],
)
def test_leading_zero_bits(digest: bytes, bits: int) -> None:
    assert leading_zero_bits(digest) == bits
    assert leading_zero_bits(b"\x00" * 32) == 256


def test_solve_finds_a_nonce_with_enough_zero_bits() -> None:
    nonce = solve("abc", 12)
    assert leading_zero_bits(pow_digest("abc", nonce)) >= 12
    assert all(not meets_difficulty("abc", n, 12) for n in range(nonce))


def test_issue_binds_address_difficulty_and_expiry(storage: MemoryStorage) -> None:
    challenge = issue_challenge(storage, SETTINGS, ADDRESS.lower(), now=NOW)
    assert challenge.address == ADDRESS
    assert challenge.difficulty == 10
    assert challenge.expires_at == NOW + 120
    assert len(challenge.challenge) == 32 and int(challenge.challenge, 16) >= 0
    assert challenge.to_wire(NOW + 20) == {
        "challenge": challenge.challenge,
        "difficulty": 10,
        "expiresInSecs": 100,
        "algorithm": POW_ALGORITHM,
    }
    assert issue_challenge(storage, SETTINGS, ADDRESS, now=NOW).challenge != challenge.challenge


def test_right_nonce_passes_once(storage: MemoryStorage) -> None:
    challenge = issue_challenge(storage, SETTINGS, ADDRESS, now=NOW).challenge
    nonce = solve(challenge, 10)
    verify_pow(storage, challenge=challenge, nonce=nonce, address=ADDRESS, now=NOW + 5)
    with pytest.raises(InvalidInput, match="challenge: unknown or already used"):
        verify_pow(storage, challenge=challenge, nonce=nonce, address=ADDRESS, now=NOW + 6)


def test_nonce_as_a_string_of_digits_is_accepted(storage: MemoryStorage) -> None:
    challenge = issue_challenge(storage, SETTINGS, ADDRESS, now=NOW).challenge
    nonce = str(solve(challenge, 10))
    verify_pow(storage, challenge=challenge, nonce=nonce, address=ADDRESS, now=NOW)


def test_wrong_nonce_is_refused_and_does_not_burn_the_challenge(storage: MemoryStorage) -> None:
    challenge = issue_challenge(storage, SETTINGS, ADDRESS, now=NOW).challenge
    with pytest.raises(InvalidInput, match="nonce: does not give 10 leading zero bits"):
        verify_pow(
            storage,
            challenge=challenge,
            nonce=_unsolved(challenge, 10),
            address=ADDRESS,
            now=NOW,
        )
    verify_pow(storage, challenge=challenge, nonce=solve(challenge, 10), address=ADDRESS, now=NOW)


def test_difficulty_is_the_one_issued_not_the_current_setting(storage: MemoryStorage) -> None:
    challenge = issue_challenge(storage, Settings(pow_difficulty=4), ADDRESS, now=NOW).challenge
    nonce = solve(challenge, 4)
    verify_pow(storage, challenge=challenge, nonce=nonce, address=ADDRESS, now=NOW)


def test_wrong_address_is_forbidden_and_leaves_the_challenge_for_its_owner(
    storage: MemoryStorage,
) -> None:
    challenge = issue_challenge(storage, SETTINGS, ADDRESS, now=NOW).challenge
    nonce = solve(challenge, 10)
    with pytest.raises(Forbidden, match="another address"):
        verify_pow(storage, challenge=challenge, nonce=nonce, address=account("x").address, now=NOW)
    verify_pow(storage, challenge=challenge, nonce=nonce, address=ADDRESS, now=NOW)


def test_expired_challenge_is_refused_and_spent(storage: MemoryStorage) -> None:
    challenge = issue_challenge(storage, SETTINGS, ADDRESS, now=NOW).challenge
    nonce = solve(challenge, 10)
    with pytest.raises(InvalidInput, match="challenge: expired"):
        verify_pow(storage, challenge=challenge, nonce=nonce, address=ADDRESS, now=NOW + 120)
    with pytest.raises(InvalidInput, match="unknown or already used"):
        verify_pow(storage, challenge=challenge, nonce=nonce, address=ADDRESS, now=NOW)


def test_last_second_before_expiry_still_counts(storage: MemoryStorage) -> None:
    challenge = issue_challenge(storage, SETTINGS, ADDRESS, now=NOW).challenge
    nonce = solve(challenge, 10)
    verify_pow(storage, challenge=challenge, nonce=nonce, address=ADDRESS, now=NOW + 119)


def test_unknown_challenge_is_refused(storage: MemoryStorage) -> None:
    with pytest.raises(InvalidInput, match="unknown"):
        verify_pow(storage, challenge="00" * 16, nonce=1, address=ADDRESS, now=NOW)


@pytest.mark.parametrize(
    ("challenge", "nonce", "error"),
    [
        (None, 1, "challenge: required"),
        ("abc", None, "nonce: required"),
        (123, 1, "challenge: must be a string"),
        ("abc", -1, "nonce: must be"),
        ("abc", True, "nonce: must be"),
        ("abc", 1.5, "nonce: must be"),
        ("abc", "12a", "nonce: must be"),
        ("abc", "1" * 33, "nonce: must be"),
    ],
)
def test_malformed_fields_are_invalid_input(
    storage: MemoryStorage, challenge: object, nonce: object, error: str
) -> None:
    with pytest.raises(InvalidInput, match=error):
        verify_pow(storage, challenge=challenge, nonce=nonce, address=ADDRESS, now=NOW)


def test_issue_needs_an_address(storage: MemoryStorage) -> None:
    with pytest.raises(InvalidInput, match="address: required"):
        issue_challenge(storage, SETTINGS, None, now=NOW)
    with pytest.raises(InvalidInput, match="address"):
        issue_challenge(storage, SETTINGS, "nope", now=NOW)
