"""Session-key registration, listing, deregistration and the callback URL (docs/interface.md)."""

from __future__ import annotations

from conf_env import NOW, Env, MakeEnv
from conf_keys import SessionKey, account, session, sign_text
from eth_account.signers.local import LocalAccount


def _pubkeys(env: Env, owner: LocalAccount, key: SessionKey | None) -> list[dict[str, object]]:
    answer = env.api.get("/auth/pubkeys", f"owner={owner.address}", session=key).ok()
    assert answer["ownerAddress"] == owner.address
    keys: list[dict[str, object]] = answer["pubkeys"]
    return keys


def _deregister_body(
    owner: LocalAccount, key: SessionKey, signer: LocalAccount | None = None
) -> dict[str, str]:
    text = f"deregister-pubkey:{key.public_key.lower()}"
    return {
        "ownerAddress": owner.address,
        "publicKey": key.public_key,
        "signature": sign_text(signer or owner, text),
    }


def test_register_answers_the_spec_record(env: Env) -> None:
    owner = account("owner:m")
    key = session("m:k")
    answer = env.api.post(
        "/auth/register-pubkey",
        {
            "ownerAddress": owner.address.lower(),
            "publicKey": key.public_key,
            "signature": sign_text(owner, key.public_key),
        },
    ).ok()
    assert answer == {
        "registered": True,
        "ownerAddress": owner.address,
        "publicKey": key.public_key,
        "expiresAt": NOW + env.settings.session_key_ttl,
    }
    assert env.poll(key) == []  # the key authenticates right away


def test_register_with_a_bad_signature_is_a_401(env: Env) -> None:
    owner = account("owner:m")
    key = session("m:k")
    body = {
        "ownerAddress": owner.address,
        "publicKey": key.public_key,
        "signature": sign_text(account("mallory"), key.public_key),
    }
    env.api.post("/auth/register-pubkey", body).error(401, prefix="wallet signature: ")
    body["signature"] = sign_text(owner, key.public_key + "00")
    env.api.post("/auth/register-pubkey", body).error(401, prefix="wallet signature: ")
    body["signature"] = "0x1234"
    env.api.post("/auth/register-pubkey", body).error(401, prefix="wallet signature: ")
    # nothing was registered: the key does not authenticate
    env.api.post("/poll/events", session=key).error(401, prefix="session signature: ")


def test_register_with_malformed_fields_is_a_400(env: Env) -> None:
    owner = account("owner:m")
    key = session("m:k")
    short = key.public_key[:-2]
    env.api.post(
        "/auth/register-pubkey",
        {"ownerAddress": owner.address, "publicKey": short, "signature": sign_text(owner, short)},
    ).error(400, prefix="invalid request: publicKey: ")
    env.api.post(
        "/auth/register-pubkey",
        {"ownerAddress": owner.address, "publicKey": key.public_key},
    ).error(400, prefix="invalid request: signature: ")


def test_key_cap_answers_409_conflict_until_a_key_is_deregistered(make_env: MakeEnv) -> None:
    env = make_env(session_key_cap=2)
    owner, [first, _] = env.merchant("m", "k1", "k2")
    third = session("m:k3")
    env.api.register_key(owner, third).error(409, "Conflict")
    env.api.post("/poll/events", session=third).error(401, prefix="session signature: ")
    # re-registering a key already counted is a refresh, not a new slot
    env.api.register_key(owner, first).ok()
    # another owner has a cap of its own
    env.merchant("other", "k1", "k2")
    env.api.post("/auth/deregister-pubkey", _deregister_body(owner, first)).ok()
    env.api.register_key(owner, third).ok()
    assert env.poll(third) == []


def test_reregistration_by_the_owner_alone_changes_nothing(make_env: MakeEnv) -> None:
    env = make_env(auth_mode="soft")
    owner, [key] = env.merchant("m", "k")
    assert env.api.post("/poll/events", session=key, nonce=5000).ok()["events"] == []
    env.clock.advance(100)
    # the same bytes as the first registration: a repeat, or a replay of it
    again = env.api.register_key(owner, key).ok()
    assert again["expiresAt"] == NOW + env.settings.session_key_ttl
    [record] = _pubkeys(env, owner, None)
    assert record == {
        "publicKey": key.public_key,
        "registeredAt": NOW,
        "expiresAt": NOW + env.settings.session_key_ttl,
        "lastSeenNonce": 5000,
    }


def test_refresh_signed_by_the_key_extends_and_keeps_the_nonce(make_env: MakeEnv) -> None:
    env = make_env(auth_mode="soft")
    owner, [key] = env.merchant("m", "k")
    assert env.api.post("/poll/events", session=key, nonce=5000).ok()["events"] == []
    env.clock.advance(100)
    again = env.api.refresh_key(owner, key).ok()
    assert again["expiresAt"] == NOW + 100 + env.settings.session_key_ttl
    [record] = _pubkeys(env, owner, None)
    assert record == {
        "publicKey": key.public_key,
        "registeredAt": NOW + 100,
        "expiresAt": NOW + 100 + env.settings.session_key_ttl,
        "lastSeenNonce": 5000,  # the refresh's own nonce (1001) is below: kept the highest
    }
    env.api.post("/poll/events", session=key, nonce=5000).error(401, prefix="session signature: ")
    env.api.post("/poll/events", session=key).ok()


def test_key_of_another_owner_cannot_be_taken_over(env: Env) -> None:
    _, [key] = env.merchant("m", "k")
    other = account("owner:other")
    env.api.register_key(other, key).error(403, prefix="forbidden: ")


def test_pubkeys_lists_the_owners_keys(env: Env) -> None:
    owner, [first, second] = env.merchant("m", "k1", "k2")
    env.merchant("other", "k")
    keys = _pubkeys(env, owner, first)
    assert sorted(k["publicKey"] for k in keys) == sorted([first.public_key, second.public_key])
    for record in keys:
        assert set(record) == {"publicKey", "registeredAt", "expiresAt", "lastSeenNonce"}
        assert record["registeredAt"] == NOW
        assert record["expiresAt"] == NOW + env.settings.session_key_ttl
    by_key = {k["publicKey"]: k["lastSeenNonce"] for k in keys}
    assert by_key[first.public_key] == first.nonce  # the listing call's own nonce
    assert by_key[second.public_key] == 0


def test_pubkeys_auth_per_mode(make_env: MakeEnv) -> None:
    strict = make_env()
    owner, [key] = strict.merchant("m", "k")
    strict.api.get("/auth/pubkeys", f"owner={owner.address}").error(
        401, prefix="session signature: "
    )
    other, _ = strict.merchant("other", "k")
    strict.api.get("/auth/pubkeys", f"owner={other.address}", session=key).error(
        403, prefix="forbidden: "
    )
    soft = make_env(auth_mode="soft")
    owner, [key] = soft.merchant("m", "k")
    assert [k["publicKey"] for k in _pubkeys(soft, owner, None)] == [key.public_key]
    soft.api.get("/auth/pubkeys").error(400, prefix="invalid request: owner: ")


def test_deregister_by_owner_signature(env: Env) -> None:
    owner, [key, kept] = env.merchant("m", "k1", "k2")
    answer = env.api.post("/auth/deregister-pubkey", _deregister_body(owner, key)).ok()
    assert answer == {
        "deregistered": True,
        "ownerAddress": owner.address,
        "publicKey": key.public_key,
    }
    env.api.post("/poll/events", session=key).error(401, prefix="session signature: ")
    assert [k["publicKey"] for k in _pubkeys(env, owner, kept)] == [kept.public_key]
    # a second deregistration finds nothing
    env.api.post("/auth/deregister-pubkey", _deregister_body(owner, key)).error(404)


def test_deregister_refuses_other_signatures(env: Env) -> None:
    owner, [key] = env.merchant("m", "k")
    mallory = account("mallory")
    env.api.post("/auth/deregister-pubkey", _deregister_body(owner, key, mallory)).error(
        401, prefix="wallet signature: "
    )
    # the registration signature (over the bare key) is not a deregistration signature
    body = _deregister_body(owner, key)
    body["signature"] = sign_text(owner, key.public_key)
    env.api.post("/auth/deregister-pubkey", body).error(401, prefix="wallet signature: ")
    # mallory signing for her own address cannot remove the owner's key
    stolen = _deregister_body(mallory, key)
    env.api.post("/auth/deregister-pubkey", stolen).error(404)
    assert env.poll(key) == []  # still registered


def test_deregister_by_the_keys_own_session(env: Env) -> None:
    owner, [key, other_key] = env.merchant("m", "k1", "k2")
    # one key cannot deregister another with its session
    env.api.post("/auth/deregister-pubkey", {"publicKey": other_key.public_key}, session=key).error(
        403, prefix="forbidden: "
    )
    answer = env.api.post(
        "/auth/deregister-pubkey", {"publicKey": key.public_key}, session=key
    ).ok()
    assert answer == {
        "deregistered": True,
        "ownerAddress": owner.address,
        "publicKey": key.public_key,
    }
    env.api.post("/poll/events", session=key).error(401, prefix="session signature: ")
    env.api.get("/auth/pubkeys", f"owner={owner.address}", session=key).error(
        401, prefix="session signature: "
    )
    assert env.poll(other_key) == []


def test_deregistered_key_is_refused_in_soft_mode_too(make_env: MakeEnv) -> None:
    env = make_env(auth_mode="soft")
    owner, [key] = env.merchant("m", "k")
    env.api.post("/auth/deregister-pubkey", {"publicKey": key.public_key}, session=key).ok()
    env.api.get("/invoices", f"owner={owner.address}", session=key).error(
        401, prefix="session signature: "
    )


def test_register_callback_sets_the_webhook_url(env: Env) -> None:
    owner, [key] = env.merchant("m", "k")
    url = "https://merchant.example.test/hooks/paycore"
    answer = env.api.post("/auth/register-callback", {"url": url}, session=key).ok()
    assert answer == {"ownerAddress": owner.address, "url": url}
    current = env.api.post(
        "/webhook/get",
        {
            "ownerAddress": owner.address,
            "signature": sign_text(owner, f"get-webhook:{owner.address.lower()}"),
        },
    ).ok()
    assert current["url"] == url


def test_register_callback_refusals(env: Env) -> None:
    owner, [key] = env.merchant("m", "k")
    url = "https://merchant.example.test/hook"
    env.api.post("/auth/register-callback", {"url": url, "ownerAddress": owner.address}).error(
        401, prefix="session signature: "
    )
    env.api.post("/auth/register-callback", {"url": "ftp://x.test/"}, session=key).error(
        400, prefix="invalid request: url: "
    )
    env.api.post("/auth/register-callback", {}, session=key).error(
        400, prefix="invalid request: url: "
    )
    other, _ = env.merchant("other")
    env.api.post(
        "/auth/register-callback", {"url": url, "ownerAddress": other.address}, session=key
    ).error(403, prefix="forbidden: ")


def test_expired_key_is_not_revived_by_reregistration(mode_env: Env) -> None:
    env = mode_env
    owner, [key] = env.merchant("m", "k")
    env.api.post("/poll/events", session=key, nonce=4000).ok()
    env.clock.advance(env.settings.session_key_ttl)
    env.api.post("/poll/events", session=key).error(401, prefix="session signature: ")
    env.api.register_key(owner, key).error(403, prefix="forbidden: this session key expired")
    env.api.refresh_key(owner, key).error(401, prefix="session signature: session key expired")
    env.api.post("/poll/events", session=key).error(401, prefix="session signature: ")
    # a new key is the way back
    fresh = env.api.registered(owner, session("m:fresh"))
    assert env.poll(fresh) == []
