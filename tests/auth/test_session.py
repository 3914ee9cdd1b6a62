"""Session-signed requests: every way a header set can fail, and the one way it passes."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from auth_helpers import NOW, SessionClient, account, registration_body, sign

from paycore.api.wire import read
from paycore.auth import authenticate, register_pubkey, verify_session
from paycore.auth.registry import Registration
from paycore.auth.session import session_message
from paycore.config import Settings
from paycore.domain.records import SessionKey
from paycore.errors import AuthError
from paycore.storage.memory import MemoryStorage

BODY = b'{"value":"10","chainId":1}'


def _auth(
    storage: MemoryStorage,
    settings: Settings,
    headers: dict[str, str],
    *,
    method: str = "POST",
    uri: str = "/invoice",
    body: bytes = BODY,
    now: int = NOW + 1,
    required: bool | None = None,
) -> SessionKey | None:
    return authenticate(
        storage,
        settings,
        method=method,
        uri=uri,
        body=body,
        headers=headers,
        now=now,
        required=required,
    )


def _rejected(reason: str, *args: Any, **kwargs: Any) -> AuthError:
    with pytest.raises(AuthError, match=reason) as caught:
        _auth(*args, **kwargs)
    assert caught.value.status == 401
    assert caught.value.text.startswith("session signature: ")
    return caught.value


def test_signed_post_authenticates_as_the_owner(
    storage: MemoryStorage, settings: Settings, client: SessionClient, registered: SessionKey
) -> None:
    key = _auth(storage, settings, client.headers("POST", "/invoice", BODY))
    assert key is not None
    assert key.owner == registered.owner
    assert key.address == client.key.address
    assert key.last_seen_nonce == 1


def test_header_names_are_case_insensitive(
    storage: MemoryStorage, settings: Settings, client: SessionClient, registered: SessionKey
) -> None:
    headers = {k.upper(): v for k, v in client.headers("POST", "/invoice", BODY).items()}
    assert _auth(storage, settings, headers) is not None


def test_signature_binds_the_body(
    storage: MemoryStorage, settings: Settings, client: SessionClient, registered: SessionKey
) -> None:
    headers = client.headers("POST", "/invoice", BODY)
    _rejected("unknown session key", storage, settings, headers, body=BODY + b" ")


def test_empty_body_hashes_the_empty_string(
    storage: MemoryStorage, settings: Settings, client: SessionClient, registered: SessionKey
) -> None:
    headers = client.headers("POST", "/poll/events", b"")
    assert _auth(storage, settings, headers, uri="/poll/events", body=b"") is not None


def test_get_signs_the_uri_and_is_refused_on_another_uri(
    storage: MemoryStorage, settings: Settings, client: SessionClient, registered: SessionKey
) -> None:
    uri = "/invoices?owner=0xabc&limit=5"
    headers = client.headers("GET", uri)
    # Same nonce, same (empty) body, other resource: the recovered key is a stranger.
    _rejected("unknown session key", storage, settings, headers, method="GET", uri=uri + "0")
    assert _auth(storage, settings, headers, method="GET", uri=uri, body=b"") is not None


def test_get_ignores_the_body_and_post_ignores_the_uri(
    storage: MemoryStorage, settings: Settings, client: SessionClient, registered: SessionKey
) -> None:
    headers = client.headers("GET", "/transactions?owner=x")
    key = _auth(storage, settings, headers, method="get", uri="/transactions?owner=x", body=BODY)
    assert key is not None
    headers = client.headers("POST", "/anything", BODY)
    assert _auth(storage, settings, headers, uri="/somewhere/else") is not None


def test_wrong_signer_is_an_unknown_key(
    storage: MemoryStorage, settings: Settings, registered: SessionKey
) -> None:
    stranger = SessionClient(account("stranger"))
    _rejected("unknown session key", storage, settings, stranger.headers("POST", "/i", BODY))


def test_owner_wallet_itself_is_not_a_session_key(
    storage: MemoryStorage, settings: Settings, owner: Any, registered: SessionKey
) -> None:
    as_owner = SessionClient(owner)
    _rejected("unknown session key", storage, settings, as_owner.headers("POST", "/i", BODY))


@pytest.mark.parametrize(
    ("mode", "reason"), [("window", "a replay"), ("strict", "not greater than the last accepted")]
)
def test_replayed_nonce_is_refused(
    storage: MemoryStorage, client: SessionClient, registered: SessionKey, mode: str, reason: str
) -> None:
    settings = Settings(nonce_mode=mode)
    headers = client.headers("POST", "/invoice", BODY)
    assert _auth(storage, settings, headers) is not None
    _rejected(reason, storage, settings, headers)


def test_strict_mode_refuses_a_lower_nonce_and_accepts_a_higher(
    storage: MemoryStorage, client: SessionClient, registered: SessionKey
) -> None:
    settings = Settings(nonce_mode="strict")
    assert _auth(storage, settings, client.headers("POST", "/i", BODY, nonce=1000)) is not None
    low = client.headers("POST", "/i", BODY, nonce=999)
    _rejected("not greater than the last accepted", storage, settings, low)
    # Gaps are fine: a millisecond clock skips numbers.
    key = _auth(storage, settings, client.headers("POST", "/i", BODY, nonce=5000))
    assert key is not None and key.last_seen_nonce == 5000
    with storage.transaction() as tx:
        stored = tx.get_session_key(client.key.address)
    assert stored is not None and stored.last_seen_nonce == 5000


def test_window_mode_accepts_reordered_nonces_once_each(
    storage: MemoryStorage, client: SessionClient, registered: SessionKey
) -> None:
    settings = Settings(nonce_window=1000)
    for nonce in (5000, 4001, 4999, 4500):
        assert _auth(storage, settings, client.headers("POST", "/i", BODY, nonce=nonce))
    for nonce in (5000, 4001, 4999, 4500):  # each exact request once
        headers = client.headers("POST", "/i", BODY, nonce=nonce)
        _rejected("a replay", storage, settings, headers)
    # The same nonce over another body is another request (two workers, one millisecond).
    assert _auth(storage, settings, client.headers("POST", "/i", b"{}", nonce=5000), body=b"{}")
    # At the window's edge and below: refused whether or not it was used.
    at_edge = client.headers("POST", "/i", BODY, nonce=4000)
    _rejected("more than 1000 below the highest accepted one", storage, settings, at_edge)
    with storage.transaction() as tx:
        stored = tx.get_session_key(client.key.address)
    assert stored is not None and stored.last_seen_nonce == 5000


def test_parallel_replays_accept_exactly_one(
    storage: MemoryStorage, settings: Settings, client: SessionClient, registered: SessionKey
) -> None:
    headers = client.headers("POST", "/invoice", BODY)
    outcomes: list[bool] = []
    lock = threading.Lock()

    def attempt() -> None:
        try:
            _auth(storage, settings, headers)
            ok = True
        except AuthError:
            ok = False
        with lock:
            outcomes.append(ok)

    threads = [threading.Thread(target=attempt) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert outcomes.count(True) == 1 and len(outcomes) == 16


@pytest.mark.parametrize(
    "nonce",
    ["0", "-1", "+5", "05", "1.0", "1e3", " 7", "7 ", "", "abc", "٣", str(2**63), "9" * 20],
)
def test_malformed_nonce_is_refused(
    storage: MemoryStorage,
    settings: Settings,
    client: SessionClient,
    registered: SessionKey,
    nonce: str,
) -> None:
    headers = client.headers("POST", "/i", BODY)
    headers["x-session-nonce"] = nonce
    _rejected("x-session-nonce must be a positive decimal integer", storage, settings, headers)


@pytest.mark.parametrize("mode", ["window", "strict"])
def test_a_nonce_beyond_the_horizon_is_refused_and_locks_nothing(
    storage: MemoryStorage, client: SessionClient, registered: SessionKey, mode: str
) -> None:
    settings = Settings(nonce_mode=mode, nonce_horizon_ms=60_000)
    now = NOW + 1
    limit = now * 1000 + 60_000
    for far in (limit + 1, 2**63 - 1):
        headers = client.headers("POST", "/i", BODY, nonce=far)
        _rejected("more than 60000 ms ahead of the server clock", storage, settings, headers)
    with storage.transaction() as tx:
        stored = tx.get_session_key(client.key.address)
    assert stored is not None and stored.last_seen_nonce == 0
    # A Date.now() client a minute fast is fine, and so is a counter.
    assert _auth(storage, settings, client.headers("POST", "/i", BODY, nonce=limit)) is not None
    # ...and a clock catching up moves the horizon: no value is refused for ever.
    later = client.headers("POST", "/i", BODY, nonce=limit + 5000)
    assert _auth(storage, settings, later, now=now + 5) is not None


def test_counter_nonces_are_far_below_the_horizon(
    storage: MemoryStorage, settings: Settings, client: SessionClient, registered: SessionKey
) -> None:
    for nonce in (1, 2, 3):
        assert _auth(storage, settings, client.headers("POST", "/i", BODY, nonce=nonce))


@pytest.mark.parametrize("signature", ["", "0x", "0x1234", "not hex at all", "0x" + "ab" * 65])
def test_malformed_signature_header_is_refused(
    storage: MemoryStorage,
    settings: Settings,
    client: SessionClient,
    registered: SessionKey,
    signature: str,
) -> None:
    headers = client.headers("POST", "/i", BODY)
    headers["x-session-signature"] = signature
    _rejected("malformed signature", storage, settings, headers)


@pytest.mark.parametrize("missing", ["x-session-nonce", "x-session-signature"])
def test_half_a_header_pair_is_refused_even_when_optional(
    storage: MemoryStorage,
    settings: Settings,
    client: SessionClient,
    registered: SessionKey,
    missing: str,
) -> None:
    headers = client.headers("POST", "/i", BODY)
    del headers[missing]
    _rejected("must be sent together", storage, settings, headers, required=False)


def test_repeated_header_is_refused(
    storage: MemoryStorage, settings: Settings, client: SessionClient, registered: SessionKey
) -> None:
    class TwoValued(dict[str, str]):
        """A multi-dict view whose items() yields one header twice, as WSGI environs can."""

        def items(self) -> Any:
            return [*super().items(), ("X-Session-Nonce", "99")]

    headers = TwoValued(client.headers("POST", "/i", BODY))
    _rejected("sent more than once", storage, settings, headers)


def test_expired_key_is_refused_at_its_expiry_second(
    storage: MemoryStorage, settings: Settings, client: SessionClient, registered: SessionKey
) -> None:
    last = registered.expires_at - 1
    assert _auth(storage, settings, client.headers("POST", "/i", BODY), now=last) is not None
    headers = client.headers("POST", "/i", BODY)
    _rejected("session key expired", storage, settings, headers, now=registered.expires_at)


def test_expired_key_is_refused_in_soft_mode_too(
    storage: MemoryStorage, client: SessionClient, registered: SessionKey
) -> None:
    soft = Settings(auth_mode="soft")
    headers = client.headers("POST", "/i", BODY)
    _rejected("session key expired", storage, soft, headers, now=registered.expires_at + 10)


def test_unregistered_key_is_refused_in_soft_mode_never_anonymous(
    storage: MemoryStorage, client: SessionClient
) -> None:
    soft = Settings(auth_mode="soft")
    _rejected("unknown session key", storage, soft, client.headers("POST", "/i", BODY))
    _rejected(
        "unknown session key", storage, soft, client.headers("POST", "/i", BODY), required=False
    )


def test_strict_mode_requires_headers_soft_mode_does_not(storage: MemoryStorage) -> None:
    strict = Settings(auth_mode="strict")
    soft = Settings(auth_mode="soft")
    _rejected("missing x-session-nonce", storage, strict, {"content-type": "application/json"})
    assert _auth(storage, soft, {"content-type": "application/json"}) is None
    # Explicit choices override the mode both ways.
    assert _auth(storage, strict, {}, required=False) is None
    _rejected("missing", storage, soft, {}, required=True)


def test_soft_mode_with_valid_headers_authenticates(
    storage: MemoryStorage, client: SessionClient, registered: SessionKey
) -> None:
    soft = Settings(auth_mode="soft")
    key = _auth(storage, soft, client.headers("POST", "/i", BODY))
    assert key is not None and key.owner == registered.owner


def test_pubkey_header_matching_the_signer_is_accepted(
    storage: MemoryStorage, settings: Settings, client: SessionClient, registered: SessionKey
) -> None:
    headers = client.headers("POST", "/i", BODY, with_pubkey=True)
    assert _auth(storage, settings, headers) is not None


def test_pubkey_header_of_another_key_is_refused(
    storage: MemoryStorage,
    settings: Settings,
    owner: Any,
    client: SessionClient,
    registered: SessionKey,
) -> None:
    other = SessionClient(account("session-2"))
    register_pubkey(
        storage, settings, read(Registration, registration_body(owner, other.key)), now=NOW
    )
    headers = client.headers("POST", "/i", BODY)
    headers["x-session-pubkey"] = other.public_key
    _rejected("does not match the signing key", storage, settings, headers)
    # Nothing was consumed by the refused request.
    headers["x-session-pubkey"] = client.public_key
    assert _auth(storage, settings, headers) is not None


def test_malformed_pubkey_header_is_a_401_not_a_400(
    storage: MemoryStorage, settings: Settings, client: SessionClient, registered: SessionKey
) -> None:
    headers = client.headers("POST", "/i", BODY)
    headers["x-session-pubkey"] = "0x04nothex"
    _rejected("x-session-pubkey: must be 0x04", storage, settings, headers)


def test_pubkey_header_alone_counts_as_sent_headers(
    storage: MemoryStorage, client: SessionClient
) -> None:
    soft = Settings(auth_mode="soft")
    headers = {"x-session-pubkey": client.public_key}
    _rejected("must be sent together", storage, soft, headers)


def test_verify_session_serves_a_websocket_challenge(
    storage: MemoryStorage, client: SessionClient, registered: SessionKey
) -> None:
    challenge = b"4f1c2a"
    signature = sign(client.key, session_message(7, challenge))
    for mode, reason in (("window", "a replay"), ("strict", "not greater")):
        settings = Settings(nonce_mode=mode)
        if mode == "window":
            key = verify_session(
                storage, settings, nonce="7", signature=signature, payload=challenge, now=NOW
            )
            assert key.owner == registered.owner and key.last_seen_nonce == 7
        with pytest.raises(AuthError, match=reason):
            verify_session(
                storage, settings, nonce="7", signature=signature, payload=challenge, now=NOW
            )


def test_a_revoked_key_is_stored_with_expires_at_zero() -> None:
    """The tombstone's stored form: every release wrote ``expires_at = 0`` for a revoked key,
    so a row written by any of them is read as revoked (and one expiring later is not)."""
    from paycore.auth.session import is_active, is_revoked
    from paycore.domain.records import SessionKey

    key = SessionKey("0x" + "11" * 20, "0x04" + "ab" * 64, "0x" + "22" * 20, 1, 0)
    assert is_revoked(key) and not is_active(key, 0)
    for expires_at in (-1, 1, 2_000_000_000):
        assert not is_revoked(SessionKey(key.address, key.public_key, key.owner, 1, expires_at))


def test_under_the_strict_rule_any_old_nonce_is_refused_as_not_greater() -> None:
    """Strict mode's refusal names the strict rule, however far below the last nonce the
    request is: the window's "more than N below" text belongs to the default rule."""
    from paycore.auth.session import _refusal
    from paycore.domain.records import SessionKey

    key = SessionKey("0x" + "11" * 20, "0x04" + "ab" * 64, "0x" + "22" * 20, 1, 2**40, 1_000)
    for nonce in (1_000, 999, 5):
        assert (
            _refusal(key, nonce, True, 10, 100) == "nonce is not greater than the last accepted one"
        )
    assert (
        _refusal(key, 5, False, 10, 100) == "nonce is more than 10 below the highest accepted one"
    )


def test_a_public_key_of_the_wrong_length_has_no_address() -> None:
    """An uncompressed key is 64 bytes after 0x04: any other length is refused, never hashed
    into an address that no key owns."""
    from paycore.auth.signatures import public_key_to_address

    key = bytes(range(64))
    assert public_key_to_address(b"\x04" + key) == public_key_to_address(key)  # 0x04 optional
    for wrong in (key[:63], b"\x04" + key + b"\x00", b"\x04"):
        with pytest.raises(ValueError, match="64 bytes"):
            public_key_to_address(wrong)


def test_a_request_checked_already_is_not_checked_again_and_no_other_is_taken_for_it(
    storage: MemoryStorage, settings: Settings, client: SessionClient, registered: SessionKey
) -> None:
    """``Sessions.already_checked``: an event loop checks a request's signature before its
    storage is awaited, and the dispatcher's check of that very request (the same headers
    mapping and body, the same target) then returns what the first proved. Any other
    request -- other headers, even equal ones, another body or another target -- is checked
    on its own."""
    from paycore.auth.service import Sessions
    from paycore.auth.session import SignedRequest

    sessions = Sessions(storage, settings, lambda: NOW + 1)
    headers = client.headers("POST", "/invoice", BODY)
    first = sessions.check(method="POST", uri="/invoice", body=BODY, headers=headers)
    assert first is not None
    proved = SignedRequest(first.address, first.nonce, first.digest, first.at - 1)
    with sessions.already_checked(headers, BODY, "/invoice", proved):
        again = sessions.check(method="POST", uri="/invoice", body=BODY, headers=headers)
        assert again is proved  # not recomputed: the one proof stands
        assert sessions.check(method="POST", uri="/invoice", body=BODY, headers=dict(headers)) == (
            first
        )
        # Another body under the same headers: checked on its own bytes, another key.
        body = b'{"value":"99","chainId":1}'
        other = sessions.check(method="POST", uri="/invoice", body=body, headers=headers)
        assert other is not None and other is not proved and other.address != first.address
        # Another target: checked on its own bytes, so the signature recovers another key.
        other = sessions.check(method="GET", uri="/invoice?x=1", body=b"", headers=headers)
        assert other is not None and other is not proved and other.address != first.address
        spent = sessions.authenticate(method="POST", uri="/invoice", body=BODY, headers=headers)
        assert spent is not None and spent.last_seen_nonce == first.nonce
    assert sessions.check(method="POST", uri="/invoice", body=BODY, headers=headers) == first
