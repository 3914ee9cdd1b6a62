"""Session-header refusals in strict and soft mode (docs/interface.md §Modes, §Errors).

Soft mode makes headers optional, never forgiving: whatever is sent must validate.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from conf_api import Answer
from conf_env import Env, MakeEnv, invoice_body
from conf_keys import SessionKey, session, sha256_hex, sign_text
from conf_transport import encode_body
from eth_account.signers.local import LocalAccount

AUTH = "session signature: "

# Each endpoint that takes session headers, called with a given key for a given owner.
Call = Callable[[Env, LocalAccount, SessionKey | None], Answer]
ENDPOINTS: dict[str, Call] = {
    "POST /invoice": lambda env, owner, key: env.api.post(
        "/invoice", invoice_body(owner=owner.address), session=key
    ),
    "GET /invoices": lambda env, owner, key: env.api.get(
        "/invoices", f"owner={owner.address}", session=key
    ),
    "GET /transactions": lambda env, owner, key: env.api.get(
        "/transactions", f"owner={owner.address}", session=key
    ),
    "POST /poll/events": lambda env, owner, key: env.api.post("/poll/events", session=key),
    "GET /auth/pubkeys": lambda env, owner, key: env.api.get(
        "/auth/pubkeys", f"owner={owner.address}", session=key
    ),
    "POST /auth/register-callback": lambda env, owner, key: env.api.post(
        "/auth/register-callback",
        {"url": "https://merchant.example.test/h", "ownerAddress": owner.address},
        session=key,
    ),
    "GET /invoice/{guid}": lambda env, owner, key: env.api.get(
        f"/invoice/{env.create(None, owner=owner.address)['guid']}"
        if env.settings.auth_mode == "soft"
        else "/invoice/00000000-0000-4000-8000-000000000000",
        session=key,
    ),
    "GET /prices": lambda env, owner, key: env.api.get("/prices", session=key),
    "POST /webhook/endpoints": lambda env, owner, key: env.api.post(
        "/webhook/endpoints",
        {"url": "https://merchant.example.test/h", "ownerAddress": owner.address},
        session=key,
    ),
    "GET /webhook/endpoints": lambda env, owner, key: env.api.get(
        "/webhook/endpoints", f"owner={owner.address}", session=key
    ),
    "POST /webhook/endpoints/update": lambda env, owner, key: env.api.post(
        "/webhook/endpoints/update",
        {"id": _endpoint(env, owner), "enabled": False, "ownerAddress": owner.address},
        session=key,
    ),
}


def _endpoint(env: Env, owner: LocalAccount) -> str:
    """An endpoint of ``owner``'s, made directly, for the calls that change one."""
    return env.gateway.webhooks.endpoints.create(owner.address, "https://hooks.example.test/").id


@pytest.mark.parametrize("endpoint", list(ENDPOINTS))
def test_valid_session_is_accepted(mode_env: Env, endpoint: str) -> None:
    owner, [key] = mode_env.merchant("m", "k")
    answer = ENDPOINTS[endpoint](mode_env, owner, key)
    if endpoint == "GET /invoice/{guid}" and mode_env.settings.auth_mode == "strict":
        answer.error(404)  # authenticated, then not found: not a 401
    else:
        assert answer.status in (200, 201), (answer.status, answer.body)


@pytest.mark.parametrize("endpoint", list(ENDPOINTS))
def test_unregistered_key_is_refused_in_both_modes(mode_env: Env, endpoint: str) -> None:
    owner, _ = mode_env.merchant("m")
    ENDPOINTS[endpoint](mode_env, owner, session("never-registered")).error(401, prefix=AUTH)


@pytest.mark.parametrize("endpoint", list(ENDPOINTS))
def test_expired_key_is_refused_in_both_modes(mode_env: Env, endpoint: str) -> None:
    env = mode_env
    owner, [key] = env.merchant("m", "k")
    env.clock.advance(env.settings.session_key_ttl)  # expiresAt: no longer honoured
    ENDPOINTS[endpoint](env, owner, key).error(401, prefix=AUTH)


def test_key_is_honoured_until_just_before_expires_at(mode_env: Env) -> None:
    env = mode_env
    _, [key] = env.merchant("m", "k")
    env.clock.advance(env.settings.session_key_ttl - 1)
    assert env.poll(key) == []
    env.clock.advance(1)
    env.api.post("/poll/events", session=key).error(401, prefix=AUTH)


def test_strict_nonces_refuse_replayed_and_lower(make_env: MakeEnv, mode: str) -> None:
    env = make_env(auth_mode=mode, nonce_mode="strict")
    owner, [key] = env.merchant("m", "k")
    query = f"owner={owner.address}"
    env.api.get("/invoices", query, session=key, nonce=7000).ok()
    env.api.get("/invoices", query, session=key, nonce=7000).error(401, prefix=AUTH)
    env.api.get("/invoices", query, session=key, nonce=6999).error(401, prefix=AUTH)
    env.api.post("/poll/events", session=key, nonce=1).error(401, prefix=AUTH)
    # the counter is per key and only moves forward on acceptance
    env.api.get("/invoices", query, session=key, nonce=7001).ok()


def test_window_nonces_accept_reordered_once_and_refuse_replays(
    make_env: MakeEnv, mode: str
) -> None:
    env = make_env(auth_mode=mode, nonce_window=1000)
    owner, [key] = env.merchant("m", "k")
    query = f"owner={owner.address}"
    env.api.get("/invoices", query, session=key, nonce=7000).ok()
    env.api.get("/invoices", query, session=key, nonce=7000).error(401, prefix=AUTH + "this")
    env.api.get("/invoices", query, session=key, nonce=6999).ok()  # arrived late: fine
    env.api.get("/invoices", query, session=key, nonce=6999).error(401, prefix=AUTH + "this")
    env.api.post("/poll/events", session=key, nonce=6001).ok()
    env.api.post("/poll/events", session=key, nonce=6000).error(
        401, AUTH + "nonce is more than 1000 below the highest accepted one"
    )


def test_exact_replay_of_a_captured_request_is_refused(mode_env: Env) -> None:
    env = mode_env
    _, [key] = env.merchant("m", "k")
    headers = key.headers_for(b"")
    assert env.api.post("/poll/events", headers=headers).ok()["events"] == []
    env.api.post("/poll/events", headers=headers).error(401, prefix=AUTH)


def test_nonces_are_counted_per_key(mode_env: Env) -> None:
    env = mode_env
    _, [first, second] = env.merchant("m", "k1", "k2")
    env.api.post("/poll/events", session=first, nonce=9000).ok()
    env.api.post("/poll/events", session=second, nonce=10).ok()


def test_get_signature_is_bound_to_its_uri(mode_env: Env) -> None:
    env = mode_env
    owner, [key] = env.merchant("m", "k")
    env.create(key)
    signed = f"/paycore/invoices?owner={owner.address}&limit=1"
    env.api.get("/invoices", f"owner={owner.address}&limit=2", session=key, sign_uri=signed).error(
        401, prefix=AUTH
    )
    # without the prefix, or without the query, it is another URI as well
    for wrong in (f"/invoices?owner={owner.address}", "/paycore/invoices"):
        env.api.get("/invoices", f"owner={owner.address}", session=key, sign_uri=wrong).error(
            401, prefix=AUTH
        )
    page = env.api.get("/invoices", f"owner={owner.address}&limit=1", session=key).ok()
    assert page["total"] == 1


def test_post_signature_covers_the_exact_body(mode_env: Env) -> None:
    env = mode_env
    owner, [key] = env.merchant("m", "k")
    signed = encode_body(invoice_body(value="1"), None)
    tampered = encode_body(invoice_body(value="1000"), None)
    env.api.call("POST", "/invoice", raw_body=tampered, headers=key.headers_for(signed)).error(
        401, prefix=AUTH
    )
    # the same JSON in other bytes (white space) is another body too
    spaced = signed.replace(b":", b": ")
    env.api.call("POST", "/invoice", raw_body=spaced, headers=key.headers_for(signed)).error(
        401, prefix=AUTH
    )
    assert env.api.get("/invoices", f"owner={owner.address}", session=key).ok() == []


@pytest.mark.parametrize(
    "headers",
    [
        {"x-session-nonce": "5"},
        {"x-session-signature": "0x" + "11" * 65},
        {"x-session-nonce": "abc", "x-session-signature": "0x" + "11" * 65},
        {"x-session-nonce": "5", "x-session-signature": "not-hex"},
    ],
    ids=["nonce-only", "signature-only", "nonce-not-a-number", "signature-not-hex"],
)
def test_incomplete_or_malformed_headers_are_401_not_anonymous(
    mode_env: Env, headers: dict[str, str]
) -> None:
    env = mode_env
    owner, _ = env.merchant("m")
    env.api.get("/invoices", f"owner={owner.address}", headers=headers).error(401, prefix=AUTH)
    env.api.get("/prices", headers=headers).error(401, prefix=AUTH)


@pytest.mark.parametrize("nonce", ["0", "-5", "+5", "05", "5.0", " 5", "9" * 25])
def test_nonce_must_be_a_plain_positive_integer(mode_env: Env, nonce: str) -> None:
    env = mode_env
    _, [key] = env.merchant("m", "k")
    headers = {
        "x-session-nonce": nonce,
        "x-session-signature": sign_text(key.key, f"sess:{nonce}:{sha256_hex(b'')}"),
    }
    env.api.post("/poll/events", headers=headers).error(401, prefix=AUTH)


def test_pubkey_header_must_name_the_signing_key(mode_env: Env) -> None:
    env = mode_env
    _, [key, other] = env.merchant("m", "k1", "k2")
    headers = {**key.headers_for(b""), "x-session-pubkey": other.public_key}
    env.api.post("/poll/events", headers=headers).error(401, prefix=AUTH)
    headers = {**key.headers_for(b""), "x-session-pubkey": key.public_key}
    assert env.api.post("/poll/events", headers=headers).ok()["events"] == []


def test_header_names_are_case_insensitive(mode_env: Env) -> None:
    env = mode_env
    _, [key] = env.merchant("m", "k")
    headers = {k.upper(): v for k, v in key.headers_for(b"").items()}
    assert env.api.post("/poll/events", headers=headers).ok()["events"] == []


@pytest.mark.parametrize("endpoint", ["GET /invoices", "GET /transactions", "GET /auth/pubkeys"])
def test_session_of_one_owner_asking_for_another_is_403(mode_env: Env, endpoint: str) -> None:
    env = mode_env
    _, [key] = env.merchant("m", "k")
    other, _ = env.merchant("other")
    ENDPOINTS[endpoint](env, other, key).error(403, prefix="forbidden: ")


@pytest.mark.parametrize("endpoint", ["POST /invoice", "POST /auth/register-callback"])
def test_body_owner_of_another_owner_is_403(mode_env: Env, endpoint: str) -> None:
    env = mode_env
    _, [key] = env.merchant("m", "k")
    other, _ = env.merchant("other")
    ENDPOINTS[endpoint](env, other, key).error(403, prefix="forbidden: ")


def test_register_callback_needs_a_session_in_both_modes(mode_env: Env) -> None:
    owner, _ = mode_env.merchant("m")
    ENDPOINTS["POST /auth/register-callback"](mode_env, owner, None).error(401, prefix=AUTH)


@pytest.mark.parametrize("endpoint", ["GET /invoices", "GET /transactions", "GET /auth/pubkeys"])
def test_owner_scoped_without_headers_per_mode(mode_env: Env, endpoint: str) -> None:
    env = mode_env
    owner, _ = env.merchant("m")
    call = ENDPOINTS[endpoint]
    answer = call(env, owner, None)
    if env.settings.auth_mode == "strict":
        answer.error(401, prefix=AUTH)
    else:
        assert answer.status == 200, answer.body


def test_get_signature_covers_the_query_exactly_as_sent(mode_env: Env) -> None:
    env = mode_env
    owner, [key] = env.merchant("m", "k")
    made = env.create(key)
    query = f"owner={owner.address}&note=a%2Fb%20c+d"
    assert env.api.get("/invoices", query, session=key).ok() == [made]
    # the decoded form of the same query is another text, so another signature
    decoded = f"/paycore/invoices?owner={owner.address}&note=a/b c d"
    env.api.get("/invoices", query, session=key, sign_uri=decoded).error(401, prefix=AUTH)


def test_owner_query_matches_the_session_in_any_case(mode_env: Env) -> None:
    env = mode_env
    owner, [key] = env.merchant("m", "k")
    made = env.create(key)
    assert env.api.get("/invoices", f"owner={owner.address.lower()}", session=key).ok() == [made]
    bad_checksum = "0x" + owner.address[2:].swapcase()
    env.api.get("/invoices", f"owner={bad_checksum}", session=key).error(
        400, prefix="invalid request: owner: "
    )


def test_far_future_nonces_are_refused_and_lock_nothing(mode_env: Env) -> None:
    env = mode_env
    _, [first, second] = env.merchant("m", "k1", "k2")
    horizon = int(env.clock.now) * 1000 + env.settings.nonce_horizon_ms
    for far in (2**63 - 1, horizon + 1):
        env.api.post("/poll/events", session=first, nonce=far).error(
            401, prefix=AUTH + f"x-session-nonce is more than {env.settings.nonce_horizon_ms} ms"
        )
    env.api.post("/poll/events", session=second, nonce=2**63).error(401, prefix=AUTH)
    # a Date.now() client, and a counter on the other key, carry on
    env.api.post("/poll/events", session=first, nonce=horizon).ok()
    env.api.post("/poll/events", session=second, nonce=1).ok()
