"""GET /ws over real sockets, on both adapters (Flask under werkzeug's threaded server,
Litestar under uvicorn), with a real client: the frames, auth failures, and pushes of
changes made through the gateway."""

from __future__ import annotations

import json

import httpx
import pytest
from eth_account.signers.local import LocalAccount
from realtime_helpers import (
    PREFIX,
    Client,
    Clock,
    Merchant,
    Nonces,
    account,
    public_key,
    register_frame,
    registration,
    session_headers,
    sign,
    wait_until,
)

from paycore import Gateway
from paycore.crypto import ecies
from paycore.realtime import CLOSE_AUTH, CLOSE_BAD_FRAME, hub_for

pytestmark = pytest.mark.slow  # each adapter's real server, per test


def invoice_by_http(base: str, guid: str) -> dict[str, object]:
    answer = httpx.get(f"{base}{PREFIX}/invoice/{guid}")
    assert answer.status_code == 200, answer.text
    record: dict[str, object] = answer.json()
    return record


# -- the happy path ------------------------------------------------------------------------


def test_register_then_deposits_are_pushed_as_full_invoice_records(
    server: str,
    registered: LocalAccount,
    owner: LocalAccount,
    merchant: Merchant,
    nonces: Nonces,
) -> None:
    client = Client(server)
    assert len(client.challenge) == 64 and int(client.challenge, 16) >= 0
    assert client.register(registered, nonces.next()) == {
        "type": "registered",
        "ownerAddress": owner.address,
        "encryption": "none",
    }
    invoice = merchant.invoice(value="20")  # 0.01 ETH at 2000
    merchant.pay(invoice, "0.004")
    first = client.recv()
    assert first["ownerAddress"] == owner.address
    [event] = first["events"]
    assert event["guid"] == invoice.guid and event["status"] == "partialPaid"
    merchant.pay(invoice, "0.006")
    [paid] = client.recv()["events"]
    assert paid["status"] == "paid" and len(paid["payments"]) == 2
    # The complete record, exactly what GET /invoice/{guid} answers (docs/interface.md §Events).
    assert paid == invoice_by_http(server, invoice.guid)
    client.close()


def test_lazy_expiry_through_get_is_pushed(
    server: str,
    registered: LocalAccount,
    merchant: Merchant,
    clock: Clock,
    nonces: Nonces,
) -> None:
    invoice = merchant.invoice(deadlineSecs=60)
    client = Client(server)
    client.register(registered, nonces.next())
    clock.offset += 61
    record = invoice_by_http(server, invoice.guid)  # the read applies the expiry
    assert record["status"] == "expired"
    assert client.recv()["events"] == [record]
    client.close()


def test_pushes_reach_every_socket_of_the_owner_and_no_other(
    server: str,
    registered: LocalAccount,
    owner: LocalAccount,
    gateway: Gateway,
    merchant: Merchant,
    nonces: Nonces,
) -> None:
    other_owner, other_key = account("another owner"), account("another key")
    answer = httpx.post(
        server + PREFIX + "/auth/register-pubkey", json=registration(other_owner, other_key)
    )
    assert answer.status_code == 200
    mine = [Client(server), Client(server)]
    for client in mine:
        client.register(registered, nonces.next())
    theirs = Client(server)
    theirs.register(other_key, nonces.next())

    merchant.pay(merchant.invoice(), "0.001")
    for client in mine:
        assert client.recv()["ownerAddress"] == owner.address
    assert theirs.nothing_within(0.3)
    Merchant(gateway, other_owner).pay(Merchant(gateway, other_owner).invoice(), "0.001")
    assert theirs.recv()["ownerAddress"] == other_owner.address
    for client in [*mine, theirs]:
        client.close()


def test_closed_sockets_unsubscribe(
    server: str, registered: LocalAccount, owner: LocalAccount, gateway: Gateway, nonces: Nonces
) -> None:
    hub = hub_for(gateway)
    client = Client(server)
    client.register(registered, nonces.next())
    assert hub.subscribers(owner.address) == 1
    client.close()
    wait_until(lambda: hub.subscribers(owner.address) == 0, timeout=5, what="unsubscribe")


def test_encrypted_pushes_for_a_key_with_an_encryption_key(
    server: str, owner: LocalAccount, gateway: Gateway, nonces: Nonces
) -> None:
    """docs/interface.md: owner-scoped answers are encrypted for such a key, and pushes are
    owner-scoped answers; ``"encryption":"none"`` opts out as ``x-encryption: none`` does."""
    key, reader = account("encrypting key"), account("encryption reader")
    body = registration(owner, key, encryptionPublicKey=public_key(reader))
    assert httpx.post(server + PREFIX + "/auth/register-pubkey", json=body).status_code == 200
    sealed, plain = Client(server), Client(server)
    assert sealed.register(key, nonces.next())["encryption"] == "ecies-secp256k1"
    assert plain.register(key, nonces.next(), encryption="none")["encryption"] == "none"

    merchant = Merchant(gateway, owner)
    invoice = merchant.invoice()
    merchant.pay(invoice, "0.001")
    envelope = sealed.recv()
    assert set(envelope) == {"iv", "ephemPublicKey", "ciphertext", "mac"}
    opened = json.loads(ecies.decrypt(reader.key, envelope))
    assert opened == plain.recv()
    assert opened["events"][0]["guid"] == invoice.guid
    sealed.close()
    plain.close()


def test_the_nonce_counter_is_shared_with_http(
    server: str, registered: LocalAccount, owner: LocalAccount, nonces: Nonces
) -> None:
    """A register frame moves the key's highest nonce as an HTTP request would: the listing
    shows it, and it bounds the replay window of HTTP requests (window mode, the default)."""
    nonce = nonces.next()
    Client(server).register(registered, nonce)
    uri = f"{PREFIX}/auth/pubkeys?owner={owner.address}"
    # another message at a lower nonce is not a replay: it passes within the window
    answer = httpx.get(server + uri, headers=session_headers(registered, nonce - 1, uri.encode()))
    assert answer.status_code == 200, answer.text
    assert answer.json()["pubkeys"][0]["lastSeenNonce"] == nonce
    below = nonce - 60_000
    answer = httpx.get(server + uri, headers=session_headers(registered, below, uri.encode()))
    assert answer.status_code == 401
    assert (
        answer.text == "session signature: nonce is more than 60000 below the highest accepted one"
    )


def test_strict_nonces_are_shared_between_frames_and_http(framework: str, clock: Clock) -> None:
    from realtime_helpers import make_gateway, served

    key, nonces = account("strict realtime key"), Nonces()
    gateway = make_gateway(clock, nonce_mode="strict")
    with served(framework, gateway) as base:
        answer = httpx.post(
            base + PREFIX + "/auth/register-pubkey", json=registration(account("o"), key)
        )
        assert answer.status_code == 200, answer.text
        nonce = nonces.next()
        first = Client(base)
        first.register(key, nonce)
        uri = PREFIX + "/auth/pubkeys"
        answer = httpx.get(base + uri, headers=session_headers(key, nonce, uri.encode()))
        expected = "session signature: nonce is not greater than the last accepted one"
        assert (answer.status_code, answer.text) == (401, expected)
        again = Client(base)  # a new socket, so a new challenge, but the same nonce
        again.send(register_frame(key, again.challenge, nonce))
        closed = again.closed()
        assert (closed.code, closed.reason) == (CLOSE_AUTH, expected)
        first.close()
    gateway.close()


# -- refusals ------------------------------------------------------------------------------

BAD_FRAMES = {
    "not json": ("hello", "bad frame: not valid JSON"),
    "not an object": ("[1,2]", "bad frame: must be a JSON object"),
    "wrong type": ('{"type":"subscribe"}', 'bad frame: expected {"type":"register",...}'),
    "binary": (b'{"type":"register"}', "bad frame: frames are JSON text, not binary"),
    "nonce bool": (
        '{"type":"register","nonce":true,"signature":"0x00"}',
        "bad frame: nonce must be an integer",
    ),
    "no signature": ('{"type":"register","nonce":5}', "bad frame: signature must be a string"),
    "huge": ('{"type":"register","pad":"' + "x" * 5000 + '"}', "bad frame: larger than 4096 bytes"),
}


@pytest.mark.parametrize("name", list(BAD_FRAMES))
def test_bad_frames_close_4400(server: str, name: str) -> None:
    frame, message = BAD_FRAMES[name]
    client = Client(server)
    client.send(frame)
    closed = client.closed()
    assert closed.frames == [{"type": "error", "message": message}]
    assert (closed.code, closed.reason) == (CLOSE_BAD_FRAME, message)


def test_a_frame_after_registered_closes_4400(
    server: str, registered: LocalAccount, nonces: Nonces
) -> None:
    client = Client(server)
    client.register(registered, nonces.next())
    client.send('{"type":"ping"}')
    closed = client.closed()
    assert closed.code == CLOSE_BAD_FRAME
    assert closed.frames == [{"type": "error", "message": "no frame is expected after registered"}]


def _wrong_challenge(key: LocalAccount, client: Client, nonce: int) -> str:
    return register_frame(key, "00" * 32, nonce)


def _signed_by_stranger(key: LocalAccount, client: Client, nonce: int) -> str:
    return register_frame(account("never registered"), client.challenge, nonce)


def _garbled_signature(key: LocalAccount, client: Client, nonce: int) -> str:
    return json.dumps({"type": "register", "nonce": nonce, "signature": "0x1234"})


def _zero_nonce(key: LocalAccount, client: Client, nonce: int) -> str:
    return register_frame(key, client.challenge, 0)


def _body_hash_instead(key: LocalAccount, client: Client, nonce: int) -> str:
    """Signing the challenge's bytes decoded from hex is not the protocol: the text is hashed."""
    import hashlib

    digest = hashlib.sha256(bytes.fromhex(client.challenge)).hexdigest()
    signature = sign(key, f"sess:{nonce}:{digest}")
    return json.dumps({"type": "register", "nonce": nonce, "signature": signature})


AUTH_FAILURES = {
    "signed another challenge": (_wrong_challenge, "session signature: unknown session key"),
    "unknown key": (_signed_by_stranger, "session signature: unknown session key"),
    "garbled signature": (_garbled_signature, "session signature:"),
    "nonce zero": (_zero_nonce, "session signature: x-session-nonce must be"),
    "hex-decoded challenge": (_body_hash_instead, "session signature: unknown session key"),
}


@pytest.mark.parametrize("name", list(AUTH_FAILURES))
def test_auth_failures_close_4401(
    server: str, registered: LocalAccount, nonces: Nonces, name: str
) -> None:
    """A wrong signature recovers to some other address, which is no registered key."""
    build, message = AUTH_FAILURES[name]
    client = Client(server)
    client.send(build(registered, client, nonces.next()))
    closed = client.closed()
    assert closed.code == CLOSE_AUTH
    [error] = closed.frames
    assert error["type"] == "error" and error["message"].startswith(message)
    assert closed.reason == error["message"][:123]


def test_replayed_register_frame_closes_4401(
    server: str, registered: LocalAccount, nonces: Nonces
) -> None:
    """A frame captured from one socket cannot be used on another, since it signs that
    socket's challenge; a frame below the replay window is refused whatever it signs.
    (The same nonce over another challenge is another message; strict mode refuses it,
    see the test above.)"""
    nonce = nonces.next()
    first = Client(server)
    first.register(registered, nonce)
    captured = Client(server)
    captured.send(register_frame(registered, first.challenge, nonces.next()))
    assert captured.closed().code == CLOSE_AUTH
    old = Client(server)
    old.send(register_frame(registered, old.challenge, nonce - 60_000))
    closed = old.closed()
    assert closed.code == CLOSE_AUTH
    assert (
        closed.reason
        == "session signature: nonce is more than 60000 below the highest accepted one"
    )
    first.close()


def test_register_timeout_closes_4401(framework: str, clock: Clock) -> None:
    from realtime_helpers import make_gateway, served

    gateway = make_gateway(clock, ws_register_timeout=0.3)
    with served(framework, gateway) as base:
        client = Client(base)
        closed = client.closed()
    gateway.close()
    assert (closed.code, closed.reason) == (CLOSE_AUTH, "no register frame within 0.3 s")


def test_deregistered_key_is_cut_off(
    server: str, registered: LocalAccount, owner: LocalAccount, nonces: Nonces
) -> None:
    client = Client(server)
    client.register(registered, nonces.next())
    pub = public_key(registered)
    body = {
        "ownerAddress": owner.address,
        "publicKey": pub,
        "signature": sign(owner, f"deregister-pubkey:{pub.lower()}"),
    }
    answer = httpx.post(server + PREFIX + "/auth/deregister-pubkey", json=body)
    assert answer.status_code == 200, answer.text
    closed = client.closed()  # rechecked every 0.2 s in these tests
    assert (closed.code, closed.reason) == (
        CLOSE_AUTH,
        "session signature: session key deregistered",
    )


def test_expired_key_is_cut_off(
    server: str, registered: LocalAccount, clock: Clock, gateway: Gateway, nonces: Nonces
) -> None:
    client = Client(server)
    client.register(registered, nonces.next())
    clock.offset += gateway.settings.session_key_ttl + 1
    closed = client.closed()
    assert (closed.code, closed.reason) == (CLOSE_AUTH, "session signature: session key expired")


def test_plain_http_to_the_socket_path_gets_the_same_answer_on_both(server: str) -> None:
    answer = httpx.get(server + PREFIX + "/ws")
    assert answer.status_code == 426 and answer.text.startswith("upgrade required: ")
    assert answer.headers["upgrade"] == "websocket"
