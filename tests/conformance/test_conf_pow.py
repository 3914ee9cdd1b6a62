"""Proof of work for invoice creation when pow_difficulty > 0 (docs/interface.md)."""

from __future__ import annotations

import hashlib
import itertools

from conf_env import Env, MakeEnv, invoice_body

from paycore.auth import solve

DIFFICULTY = 8


def _zero_bits(challenge: str, nonce: int) -> int:
    digest = hashlib.sha256(f"{challenge}:{nonce}".encode()).digest()
    return len(digest) * 8 - int.from_bytes(digest, "big").bit_length()


def _unsolved(challenge: str) -> int:
    return next(n for n in itertools.count() if _zero_bits(challenge, n) < DIFFICULTY)


def _pow_env(make_env: MakeEnv) -> Env:
    return make_env(pow_difficulty=DIFFICULTY)


def _challenge(env: Env, address: str) -> str:
    issued = env.api.post("/invoice/challenge", {"address": address}).ok()
    assert set(issued) == {"challenge", "difficulty", "expiresInSecs", "algorithm"}
    assert issued["difficulty"] == DIFFICULTY
    assert issued["expiresInSecs"] == env.settings.challenge_ttl
    assert "leading zero bits" in issued["algorithm"]
    challenge: str = issued["challenge"]
    int(challenge, 16)  # random hex
    return challenge


def test_solved_challenge_buys_exactly_one_invoice(make_env: MakeEnv) -> None:
    env = _pow_env(make_env)
    owner, [key] = env.merchant("m", "k")
    challenge = _challenge(env, owner.address)
    nonce = solve(challenge, DIFFICULTY)
    assert _zero_bits(challenge, nonce) >= DIFFICULTY
    body = invoice_body(challenge=challenge, nonce=nonce)
    assert env.api.post("/invoice", body, session=key).ok(201)["status"] == "init"
    env.api.post("/invoice", body, session=key).error(400, prefix="invalid request: challenge: ")


def test_challenges_are_fresh_each_time(make_env: MakeEnv) -> None:
    env = _pow_env(make_env)
    owner, _ = env.merchant("m")
    assert _challenge(env, owner.address) != _challenge(env, owner.address)


def test_missing_challenge_or_nonce_is_a_400(make_env: MakeEnv) -> None:
    env = _pow_env(make_env)
    owner, [key] = env.merchant("m", "k")
    env.api.post("/invoice", invoice_body(), session=key).error(
        400, prefix="invalid request: challenge: "
    )
    challenge = _challenge(env, owner.address)
    env.api.post("/invoice", invoice_body(challenge=challenge), session=key).error(
        400, prefix="invalid request: nonce: "
    )


def test_wrong_nonce_is_refused_and_spends_nothing(make_env: MakeEnv) -> None:
    env = _pow_env(make_env)
    owner, [key] = env.merchant("m", "k")
    challenge = _challenge(env, owner.address)
    wrong = invoice_body(challenge=challenge, nonce=_unsolved(challenge))
    env.api.post("/invoice", wrong, session=key).error(400, prefix="invalid request: nonce: ")
    right = invoice_body(challenge=challenge, nonce=solve(challenge, DIFFICULTY))
    env.api.post("/invoice", right, session=key).ok(201)


def test_unknown_challenge_is_refused(make_env: MakeEnv) -> None:
    env = _pow_env(make_env)
    _, [key] = env.merchant("m", "k")
    made_up = "ab" * 16
    body = invoice_body(challenge=made_up, nonce=solve(made_up, DIFFICULTY))
    env.api.post("/invoice", body, session=key).error(400, prefix="invalid request: challenge: ")


def test_challenge_of_another_address_is_forbidden(make_env: MakeEnv) -> None:
    env = _pow_env(make_env)
    _, [key] = env.merchant("m", "k")
    other, _ = env.merchant("other")
    challenge = _challenge(env, other.address)
    body = invoice_body(challenge=challenge, nonce=solve(challenge, DIFFICULTY))
    env.api.post("/invoice", body, session=key).error(403, prefix="forbidden: ")


def test_expired_challenge_is_refused(make_env: MakeEnv) -> None:
    env = _pow_env(make_env)
    owner, [key] = env.merchant("m", "k")
    challenge = _challenge(env, owner.address)
    env.clock.advance(env.settings.challenge_ttl + 1)
    body = invoice_body(challenge=challenge, nonce=solve(challenge, DIFFICULTY))
    env.api.post("/invoice", body, session=key).error(400, prefix="invalid request: challenge: ")


def test_challenge_needs_an_address(make_env: MakeEnv) -> None:
    env = _pow_env(make_env)
    env.api.post("/invoice/challenge", {}).error(400, prefix="invalid request: address: ")
    env.api.post("/invoice/challenge", {"address": "0x1234"}).error(
        400, prefix="invalid request: address: "
    )


def test_pow_off_by_default_needs_no_challenge(env: Env) -> None:
    assert env.settings.pow_difficulty == 0
    _, [key] = env.merchant("m", "k")
    env.create(key)
