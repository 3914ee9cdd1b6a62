"""Replays of POST /auth/register-pubkey change nothing that protects the merchant.

The owner's signature covers the public key only, and is the same bytes every time, so a
captured registration can be sent again by anyone, with any ``encryptionPublicKey`` beside
it. The audit's finding 2: such a replay without ``encryptionPublicKey`` answered 200, the
next signed read came back in plain text, and the key got 30 more days. Now only the key
itself (its session headers over the body) can change its encryption key or window
(docs/decisions.md, "Re-registration").
"""

from __future__ import annotations

import json
from typing import Any

from conf_ecies import decrypt
from conf_env import NOW, Env
from conf_keys import SessionKey, account, public_key_of, session, sign_text
from eth_account.signers.local import LocalAccount

SCHEME = "ecies-secp256k1"
LISTER = session("replay:lister")


def _registration(owner: LocalAccount, key: SessionKey, **extra: Any) -> dict[str, Any]:
    return {
        "ownerAddress": owner.address,
        "publicKey": key.public_key,
        "signature": sign_text(owner, key.public_key),
        **extra,
    }


def _encrypted_merchant(env: Env) -> tuple[LocalAccount, SessionKey, LocalAccount, dict[str, Any]]:
    owner, key, reader = account("owner:replay"), session("replay:k"), account("replay:reader")
    captured = _registration(owner, key, encryptionPublicKey=public_key_of(reader))
    env.api.post("/auth/register-pubkey", captured).ok()
    return owner, key, reader, captured


def _read_is_encrypted_for(env: Env, owner: LocalAccount, key: SessionKey, reader: Any) -> None:
    answer = env.api.get("/invoices", f"owner={owner.address}", session=key)
    assert answer.status == 200, answer.body
    assert answer.headers.get("x-encryption") == SCHEME
    assert json.loads(decrypt(reader, answer.json())) == []


def _expires_at(env: Env, owner: LocalAccount) -> int:
    """The key's expiresAt as listed (an unsigned read: soft mode, or the owner's other key)."""
    query = f"owner={owner.address}"
    lister = None if env.settings.auth_mode == "soft" else env.api.registered(owner, LISTER)
    answer = env.api.get("/auth/pubkeys", query, session=lister, headers={"x-encryption": "none"})
    [record] = [k for k in answer.ok()["pubkeys"] if k["publicKey"] != LISTER.public_key]
    expires: int = record["expiresAt"]
    return expires


def test_a_replay_without_the_encryption_key_does_not_switch_encryption_off(
    env: Env,
) -> None:
    owner, key, reader, captured = _encrypted_merchant(env)
    stripped = {k: v for k, v in captured.items() if k != "encryptionPublicKey"}
    env.api.post("/auth/register-pubkey", stripped).error(
        401,
        "session signature: changing encryptionPublicKey of a registered key needs "
        "session headers signed by that key",
    )
    _read_is_encrypted_for(env, owner, key, reader)


def test_a_replay_with_another_encryption_key_does_not_swap_it(env: Env) -> None:
    owner, key, reader, captured = _encrypted_merchant(env)
    attacker = account("replay:attacker")
    swapped = {**captured, "encryptionPublicKey": public_key_of(attacker)}
    env.api.post("/auth/register-pubkey", swapped).error(401, prefix="session signature: ")
    _read_is_encrypted_for(env, owner, key, reader)


def test_a_replay_later_does_not_extend_the_key(make_env: Any) -> None:
    env = make_env(auth_mode="soft")
    owner, key, reader, captured = _encrypted_merchant(env)
    first = _expires_at(env, owner)
    assert first == NOW + env.settings.session_key_ttl
    env.clock.advance(env.settings.session_key_ttl // 2)
    again = env.api.post("/auth/register-pubkey", captured).ok()  # the exact captured bytes
    assert again["expiresAt"] == first
    assert _expires_at(env, owner) == first
    env.clock.advance(env.settings.session_key_ttl // 2)  # the original expiry is final
    env.api.get("/invoices", f"owner={owner.address}", session=key).error(
        401, "session signature: session key expired"
    )
    env.api.post("/auth/register-pubkey", captured).error(
        403, prefix="forbidden: this session key expired"
    )


def test_the_key_itself_refreshes_and_changes_its_encryption(env: Env) -> None:
    owner, key, reader, captured = _encrypted_merchant(env)
    env.clock.advance(100)
    new_reader = account("replay:new-reader")
    refreshed = env.api.post(
        "/auth/register-pubkey",
        {**captured, "encryptionPublicKey": public_key_of(new_reader)},
        session=key,
    ).ok()
    assert refreshed["expiresAt"] == NOW + 100 + env.settings.session_key_ttl
    _read_is_encrypted_for(env, owner, key, new_reader)
    # and only the key itself turns encryption off
    stripped = {k: v for k, v in captured.items() if k != "encryptionPublicKey"}
    env.api.post("/auth/register-pubkey", stripped, session=key).ok()
    plain = env.api.get("/invoices", f"owner={owner.address}", session=key)
    assert plain.ok() == [] and "x-encryption" not in plain.headers
    del reader


def test_a_refresh_signed_by_another_key_of_the_owner_is_refused(env: Env) -> None:
    owner, key, reader, captured = _encrypted_merchant(env)
    sibling = env.api.registered(owner, session("replay:sibling"))
    env.api.post(
        "/auth/register-pubkey", {k: v for k, v in captured.items()}, session=sibling
    ).error(403, "forbidden: session headers may only refresh their own key")
    _read_is_encrypted_for(env, owner, key, reader)


def test_a_captured_refresh_is_spent_once(env: Env) -> None:
    """A refresh carries a nonce: sending the captured request again is a replay."""
    owner, key, reader, captured = _encrypted_merchant(env)
    raw = json.dumps(captured, separators=(",", ":")).encode()
    headers = key.headers_for(raw)
    env.api.call("POST", "/auth/register-pubkey", raw_body=raw, headers=headers).ok()
    env.clock.advance(50)
    env.api.call("POST", "/auth/register-pubkey", raw_body=raw, headers=headers).error(
        401, prefix="session signature: this nonce was already accepted"
    )
    assert _expires_at(env, owner) == NOW + env.settings.session_key_ttl
    _read_is_encrypted_for(env, owner, key, reader)
