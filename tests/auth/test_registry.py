"""Session-key registration, refresh, cap, listing and deregistration."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from auth_helpers import NOW, SessionClient, account, public_key_of, registration_body, sign
from eth_account.signers.local import LocalAccount

from paycore.api.wire import read
from paycore.auth import (
    authenticate,
    deregister_pubkey,
    deregister_pubkey_message,
    deregistration_wire,
    list_pubkeys,
    register_pubkey,
    registration_wire,
)
from paycore.auth.registry import Deregistration, Registration
from paycore.config import Settings
from paycore.domain.records import SessionKey
from paycore.errors import AuthError, Conflict, Forbidden, InvalidInput, NotFound
from paycore.storage.memory import MemoryStorage


def _register(
    storage: MemoryStorage, settings: Settings, body: dict[str, Any], now: int = NOW
) -> SessionKey:
    return register_pubkey(storage, settings, read(Registration, body), now=now)


def _use(storage: MemoryStorage, settings: Settings, client: SessionClient, now: int) -> SessionKey:
    key = authenticate(
        storage,
        settings,
        method="POST",
        uri="/poll/events",
        body=b"",
        headers=client.headers("POST", "/poll/events"),
        now=now,
    )
    assert key is not None
    return key


def test_registration_returns_the_record_and_its_wire_form(
    storage: MemoryStorage, settings: Settings, owner: LocalAccount, client: SessionClient
) -> None:
    key = _register(storage, settings, registration_body(owner, client.key))
    assert key.owner == owner.address
    assert key.address == client.key.address
    assert key.public_key == client.public_key
    assert key.expires_at == NOW + settings.session_key_ttl
    assert key.last_seen_nonce == 0
    assert registration_wire(key) == {
        "registered": True,
        "ownerAddress": owner.address,
        "publicKey": client.public_key,
        "expiresAt": NOW + 3600,
    }


def test_owner_address_in_any_case_is_normalised(
    storage: MemoryStorage, settings: Settings, owner: LocalAccount, client: SessionClient
) -> None:
    body = registration_body(owner, client.key)
    body["ownerAddress"] = owner.address.lower()
    assert _register(storage, settings, body).owner == owner.address


def test_signature_covers_the_public_key_exactly_as_sent(
    storage: MemoryStorage, settings: Settings, owner: LocalAccount, client: SessionClient
) -> None:
    upper = "0x" + client.public_key[2:].upper()
    body = {"ownerAddress": owner.address, "publicKey": upper, "signature": sign(owner, upper)}
    key = _register(storage, settings, body)
    assert key.public_key == client.public_key  # stored lowercase
    # A signature over the lowercase text does not cover the upper-case text that was sent.
    body["signature"] = sign(owner, client.public_key)
    with pytest.raises(AuthError, match="wallet signature: signer does not match"):
        _register(storage, settings, body)


def test_signature_by_someone_else_is_refused(
    storage: MemoryStorage, settings: Settings, owner: LocalAccount, client: SessionClient
) -> None:
    body = registration_body(account("mallory"), client.key)
    body["ownerAddress"] = owner.address
    with pytest.raises(AuthError) as caught:
        _register(storage, settings, body)
    assert caught.value.status == 401
    assert caught.value.text == "wallet signature: signer does not match ownerAddress"
    with storage.transaction() as tx:
        assert tx.get_session_key(client.key.address) is None


@pytest.mark.parametrize(
    ("field", "value", "error"),
    [
        ("publicKey", None, "invalid request: publicKey: required"),
        ("publicKey", "0x1234", "invalid request: publicKey: must be 0x04"),
        ("ownerAddress", None, "invalid request: ownerAddress: required"),
        ("ownerAddress", "0x123", "invalid request: ownerAddress: not a 20-byte hex"),
        ("signature", None, "invalid request: signature: required"),
        ("encryptionPublicKey", "0x04" + "00" * 64, "invalid request: encryptionPublicKey: not"),
    ],
)
def test_malformed_registration_fields_are_invalid_input(
    storage: MemoryStorage,
    settings: Settings,
    owner: LocalAccount,
    client: SessionClient,
    field: str,
    value: object,
    error: str,
) -> None:
    body = registration_body(owner, client.key)
    body[field] = value
    with pytest.raises(InvalidInput) as caught:
        _register(storage, settings, body)
    assert caught.value.text.startswith(error)


def test_encryption_public_key_is_stored_lowercase(
    storage: MemoryStorage, settings: Settings, owner: LocalAccount, client: SessionClient
) -> None:
    enc = public_key_of(account("encryption"))
    body = {**registration_body(owner, client.key), "encryptionPublicKey": "0x" + enc[2:].upper()}
    assert _register(storage, settings, body).encryption_public_key == enc


def _refresh(
    storage: MemoryStorage,
    settings: Settings,
    client: SessionClient,
    body: dict[str, Any],
    now: int,
) -> SessionKey:
    """POST /auth/register-pubkey with session headers of the key itself over this body."""
    raw = json.dumps(body).encode()
    session = authenticate(
        storage,
        settings,
        method="POST",
        uri="/auth/register-pubkey",
        body=raw,
        headers=client.headers("POST", "/auth/register-pubkey", raw),
        now=now,
    )
    return register_pubkey(
        storage, settings, read(Registration, json.loads(raw)), now=now, session=session
    )


def test_re_registration_by_the_owner_alone_changes_nothing(
    storage: MemoryStorage, settings: Settings, owner: LocalAccount, client: SessionClient
) -> None:
    first = _register(storage, settings, registration_body(owner, client.key))
    for _ in range(3):
        _use(storage, settings, client, NOW + 10)
    # The same bytes as the first registration: a repeat, or a replay, cannot be told apart.
    again = _register(storage, settings, registration_body(owner, client.key), now=NOW + 1000)
    assert again.expires_at == first.expires_at and again.last_seen_nonce == 3
    with storage.transaction() as tx:
        assert tx.get_session_key(client.key.address) == again


def test_refresh_with_the_keys_own_session_extends_and_keeps_the_nonce(
    storage: MemoryStorage, settings: Settings, owner: LocalAccount, client: SessionClient
) -> None:
    _register(storage, settings, registration_body(owner, client.key))
    for _ in range(3):
        _use(storage, settings, client, NOW + 10)
    later = NOW + 1000
    key = _refresh(storage, settings, client, registration_body(owner, client.key), later)
    assert key.last_seen_nonce == 4  # three polls and the refresh itself
    assert key.expires_at == later + settings.session_key_ttl
    # Old nonces stay spent after the refresh.
    with pytest.raises(AuthError, match="a replay"):
        authenticate(
            storage,
            settings,
            method="POST",
            uri="/x",
            body=b"",
            headers=client.headers("POST", "/x", nonce=2),
            now=later,
        )


def test_session_of_another_key_cannot_refresh(
    storage: MemoryStorage, settings: Settings, owner: LocalAccount, client: SessionClient
) -> None:
    _register(storage, settings, registration_body(owner, client.key))
    other = SessionClient(account("session-2"))
    first_other = _register(storage, settings, registration_body(owner, other.key))
    with pytest.raises(Forbidden, match="only refresh their own key"):
        _refresh(storage, settings, client, registration_body(owner, other.key), NOW + 5)
    with storage.transaction() as tx:
        assert tx.get_session_key(other.key.address) == first_other


def test_expired_key_is_not_revived_a_new_key_is_registered(
    storage: MemoryStorage, settings: Settings, owner: LocalAccount, client: SessionClient
) -> None:
    key = _register(storage, settings, registration_body(owner, client.key))
    with pytest.raises(AuthError, match="expired"):
        _use(storage, settings, client, key.expires_at)
    with pytest.raises(Forbidden, match="expired; register a new key"):
        _register(storage, settings, registration_body(owner, client.key), now=key.expires_at)
    with pytest.raises(AuthError, match="expired"):
        _refresh(storage, settings, client, registration_body(owner, client.key), key.expires_at)
    fresh = SessionClient(account("session-fresh"))
    _register(storage, settings, registration_body(owner, fresh.key), now=key.expires_at)
    assert _use(storage, settings, fresh, key.expires_at + 1).owner == owner.address


def test_cap_of_active_keys_gives_conflict(
    storage: MemoryStorage, settings: Settings, owner: LocalAccount
) -> None:
    for i in range(settings.session_key_cap):
        _register(storage, settings, registration_body(owner, account(f"k{i}")))
    with pytest.raises(Conflict) as caught:
        _register(storage, settings, registration_body(owner, account("one-too-many")))
    assert caught.value.status == 409 and caught.value.text == "Conflict"
    # Refreshing a key already counted is not a new slot.
    _register(storage, settings, registration_body(owner, account("k0")))
    # Another owner has a cap of their own.
    _register(storage, settings, registration_body(account("owner-2"), account("one-too-many")))


def test_expired_keys_do_not_count_toward_the_cap(
    storage: MemoryStorage, settings: Settings, owner: LocalAccount
) -> None:
    for i in range(settings.session_key_cap):
        _register(storage, settings, registration_body(owner, account(f"k{i}")))
    later = NOW + settings.session_key_ttl
    for i in range(settings.session_key_cap):
        _register(storage, settings, registration_body(owner, account(f"fresh{i}")), now=later)
    with pytest.raises(Conflict):
        _register(storage, settings, registration_body(owner, account("one-more")), now=later)


def test_cap_clears_after_deregistration(
    storage: MemoryStorage, settings: Settings, owner: LocalAccount
) -> None:
    keys = [account(f"k{i}") for i in range(settings.session_key_cap)]
    for k in keys:
        _register(storage, settings, registration_body(owner, k))
    public_key = public_key_of(keys[0])
    deregister_pubkey(
        storage,
        read(
            Deregistration,
            {
                "ownerAddress": owner.address,
                "publicKey": public_key,
                "signature": sign(owner, deregister_pubkey_message(public_key)),
            },
        ),
        now=NOW,
    )
    _register(storage, settings, registration_body(owner, account("replacement")))


def test_parallel_registrations_never_exceed_the_cap(
    storage: MemoryStorage, owner: LocalAccount
) -> None:
    settings = Settings(session_key_cap=2)
    bodies = [registration_body(owner, account(f"race-{i}")) for i in range(8)]
    results: list[str] = []
    lock = threading.Lock()

    def attempt(body: dict[str, Any]) -> None:
        try:
            _register(storage, settings, body)
            outcome = "ok"
        except Conflict:
            outcome = "conflict"
        with lock:
            results.append(outcome)

    threads = [threading.Thread(target=attempt, args=(b,)) for b in bodies]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == ["conflict"] * 6 + ["ok"] * 2
    assert len(list_pubkeys(storage, owner.address).keys) == 2


def test_key_of_another_owner_cannot_be_taken_over(
    storage: MemoryStorage,
    settings: Settings,
    owner: LocalAccount,
    client: SessionClient,
    registered: SessionKey,
) -> None:
    thief = account("thief")
    with pytest.raises(Forbidden, match="registered to another owner"):
        _register(storage, settings, registration_body(thief, client.key))
    assert _use(storage, settings, client, NOW + 1).owner == owner.address
    # Not even once it has expired: a key stays bound to its first owner for life.
    with pytest.raises(Forbidden, match="registered to another owner"):
        _register(
            storage, settings, registration_body(thief, client.key), now=registered.expires_at
        )
    # ...while its own owner may still refresh it, keeping the nonce counter.
    key = _refresh(storage, settings, client, registration_body(owner, client.key), NOW + 2)
    assert key.owner == owner.address and key.last_seen_nonce == 2


def _deregister_body(owner: LocalAccount, public_key: str) -> dict[str, Any]:
    return {
        "ownerAddress": owner.address,
        "publicKey": public_key,
        "signature": sign(owner, f"deregister-pubkey:{public_key.lower()}"),
    }


def test_owner_signature_deregisters_and_the_key_stops_working(
    storage: MemoryStorage,
    settings: Settings,
    owner: LocalAccount,
    client: SessionClient,
    registered: SessionKey,
) -> None:
    _use(storage, settings, client, NOW + 1)
    removed = deregister_pubkey(
        storage, read(Deregistration, _deregister_body(owner, client.public_key)), now=NOW + 2
    )
    assert deregistration_wire(removed) == {
        "deregistered": True,
        "ownerAddress": owner.address,
        "publicKey": client.public_key,
    }
    with pytest.raises(AuthError, match="unknown session key"):
        _use(storage, settings, client, NOW + 3)
    assert list_pubkeys(storage, owner.address).keys == ()
    with pytest.raises(NotFound, match="session key not found"):
        deregister_pubkey(
            storage, read(Deregistration, _deregister_body(owner, client.public_key)), now=NOW + 4
        )


def test_a_deregistered_key_cannot_be_revived_by_replaying_its_registration(
    storage: MemoryStorage,
    settings: Settings,
    owner: LocalAccount,
    client: SessionClient,
) -> None:
    body = registration_body(owner, client.key)
    _register(storage, settings, body)
    deregister_pubkey(
        storage, read(Deregistration, _deregister_body(owner, client.public_key)), now=NOW + 1
    )
    with pytest.raises(Forbidden, match="deregistered"):
        _register(storage, settings, body, now=NOW + 2)


def test_deregistration_signed_by_another_wallet_is_refused(
    storage: MemoryStorage, owner: LocalAccount, client: SessionClient, registered: SessionKey
) -> None:
    body = _deregister_body(account("mallory"), client.public_key)
    body["ownerAddress"] = owner.address
    with pytest.raises(AuthError, match="wallet signature: signer does not match"):
        deregister_pubkey(storage, read(Deregistration, body), now=NOW)
    # The signer's own name does not help either: the key is not theirs.
    with pytest.raises(NotFound):
        deregister_pubkey(
            storage,
            read(Deregistration, _deregister_body(account("mallory"), client.public_key)),
            now=NOW,
        )


def test_signature_for_deregistering_another_key_is_refused(
    storage: MemoryStorage, owner: LocalAccount, client: SessionClient, registered: SessionKey
) -> None:
    body = _deregister_body(owner, public_key_of(account("other")))
    body["publicKey"] = client.public_key
    with pytest.raises(AuthError, match="signer does not match"):
        deregister_pubkey(storage, read(Deregistration, body), now=NOW)


def test_session_headers_deregister_their_own_key_only(
    storage: MemoryStorage,
    settings: Settings,
    owner: LocalAccount,
    client: SessionClient,
    registered: SessionKey,
) -> None:
    other = SessionClient(account("session-2"))
    _register(storage, settings, registration_body(owner, other.key))
    session = _use(storage, settings, client, NOW + 1)
    with pytest.raises(Forbidden, match="their own key"):
        deregister_pubkey(
            storage,
            read(Deregistration, {"publicKey": other.public_key}),
            now=NOW + 1,
            session=session,
        )
    with pytest.raises(Forbidden, match="ownerAddress"):
        deregister_pubkey(
            storage,
            read(
                Deregistration,
                {"publicKey": client.public_key, "ownerAddress": account("x").address},
            ),
            now=NOW + 1,
            session=session,
        )
    # The key is named, never implied: an empty body is what every poll signs.
    with pytest.raises(InvalidInput, match="publicKey: required"):
        deregister_pubkey(storage, read(Deregistration, {}), now=NOW + 1, session=session)
    # A registration body (which the key signs to refresh itself) is not a deregistration.
    refresh_body = registration_body(owner, client.key)
    with pytest.raises(InvalidInput, match="signature: not a field"):
        deregister_pubkey(storage, read(Deregistration, refresh_body), now=NOW + 1, session=session)
    removed = deregister_pubkey(
        storage,
        read(Deregistration, {"publicKey": client.public_key}),
        now=NOW + 1,
        session=session,
    )
    assert removed.address == client.key.address
    assert [k.address for k in list_pubkeys(storage, owner.address).keys] == [other.key.address]


def test_listing_shows_expired_keys_and_checks_the_session_owner(
    storage: MemoryStorage,
    settings: Settings,
    owner: LocalAccount,
    client: SessionClient,
    registered: SessionKey,
) -> None:
    later = registered.expires_at + 5
    second = SessionClient(account("session-2"))
    _register(storage, settings, registration_body(owner, second.key), now=later)
    session = _use(storage, settings, second, later)
    listing = list_pubkeys(storage, owner.address.lower(), session=session)
    assert listing.owner == owner.address
    wire = listing.to_wire()
    assert wire["ownerAddress"] == owner.address
    assert [k["publicKey"] for k in wire["pubkeys"]] == [client.public_key, second.public_key]
    assert wire["pubkeys"][1] == {
        "publicKey": second.public_key,
        "registeredAt": later,
        "expiresAt": later + settings.session_key_ttl,
        "lastSeenNonce": 1,
    }
    with pytest.raises(Forbidden):
        list_pubkeys(storage, account("someone-else").address, session=session)
    with pytest.raises(InvalidInput, match="owner: required"):
        list_pubkeys(storage, None)
