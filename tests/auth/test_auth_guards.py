"""Signature edges: the exact bounds of r, s and v, the scheme named in every refusal, and the
replay guard of salt-signed calls at the last second of its window.

Signing is done here with eth-account, independently of paycore. Signatures with chosen r and
s are built by hand: they need not verify to test what parsing accepts, and one whose r is not
the x of any curve point (r = 5) parses but recovers nothing.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from eth_account import Account
from eth_account.messages import encode_defunct
from eth_account.signers.local import LocalAccount

from paycore.api.wire import read
from paycore.auth import authenticate, register_pubkey, verify_salted, verify_wallet_signature
from paycore.auth.registry import Registration
from paycore.auth.signatures import WALLET_PREFIX, parse_signature, recover_address
from paycore.config import Settings
from paycore.errors import AuthError, InvalidInput
from paycore.storage.memory import MemoryStorage

NOW = 1_700_000_000
#: The order of secp256k1, written out rather than imported so that the bound under test is
#: not the one the tests compare against.
SECP256K1_N = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141
HALF_N = SECP256K1_N // 2
WINDOW = 600


def account(label: str) -> LocalAccount:
    acct: LocalAccount = Account.from_key(hashlib.sha256(label.encode()).digest())
    return acct


def sign(acct: LocalAccount, message: str) -> str:
    return "0x" + bytes(acct.sign_message(encode_defunct(text=message)).signature).hex()


def raw_signature(r: int, s: int, v: int = 27) -> str:
    return "0x" + (r.to_bytes(32, "big") + s.to_bytes(32, "big") + bytes((v,))).hex()


ALICE = account("alice")
OWNER = account("owner")
SESSION = account("session-1")
UNRECOVERABLE = raw_signature(5, 1)


# -- parsing: the bounds themselves -------------------------------------------------------------


@pytest.mark.parametrize("r", [1, SECP256K1_N - 1])
def test_r_from_1_to_n_minus_1_parses(r: int) -> None:
    assert parse_signature(raw_signature(r, 1))[:32] == r.to_bytes(32, "big")


@pytest.mark.parametrize("r", [0, SECP256K1_N, 2**256 - 1])
def test_r_outside_1_to_n_minus_1_is_refused(r: int) -> None:
    with pytest.raises(AuthError) as err:
        parse_signature(raw_signature(r, 1))
    assert err.value.text == "session signature: malformed signature: r out of range"


def test_s_up_to_half_the_order_parses_and_one_more_does_not() -> None:
    assert parse_signature(raw_signature(1, HALF_N))[32:64] == HALF_N.to_bytes(32, "big")
    for s in (HALF_N + 1, 0):
        with pytest.raises(AuthError) as err:
            parse_signature(raw_signature(1, s))
        assert err.value.text == (
            "session signature: malformed signature: s must be in the lower half (EIP-2)"
        )


def test_v_may_be_written_as_0_or_1() -> None:
    # One signature of each recovery id: v = 27 spelled 0, and v = 28 spelled 1.
    by_v: dict[int, tuple[str, str]] = {}
    for i in range(64):
        message = f"message {i}"
        by_v.setdefault(int(sign(ALICE, message)[-2:], 16), (message, sign(ALICE, message)))
    assert set(by_v) == {27, 28}
    for v, (message, signature) in by_v.items():
        short = signature[:-2] + f"{v - 27:02x}"
        assert parse_signature(short) == parse_signature(signature)
        assert parse_signature(short)[64] == v - 27
        assert recover_address(message, short) == ALICE.address


@pytest.mark.parametrize(
    ("signature", "reason"),
    [
        (raw_signature(1, 1, v=2), "malformed signature: v must be 0, 1, 27 or 28"),
        (raw_signature(0, 1), "malformed signature: r out of range"),
        (raw_signature(1, HALF_N + 1), "malformed signature: s must be in the lower half (EIP-2)"),
        (UNRECOVERABLE, "signature does not recover to a public key"),
    ],
)
def test_a_wallet_signature_fails_in_its_own_schemes_words(signature: str, reason: str) -> None:
    with pytest.raises(AuthError) as err:
        verify_wallet_signature("hello", signature, ALICE.address)
    assert err.value.text == f"{WALLET_PREFIX}: {reason}"
    with pytest.raises(AuthError) as err:
        recover_address("hello", signature)
    assert err.value.text == f"session signature: {reason}"


# -- session-signed requests ---------------------------------------------------------------------


@pytest.fixture
def storage() -> MemoryStorage:
    return MemoryStorage(clock=lambda: NOW)


SETTINGS = Settings(auth_mode="strict", session_key_cap=3, session_key_ttl=3600)


def register(storage: MemoryStorage) -> None:
    public_key = "0x04" + SESSION._key_obj.public_key.to_bytes().hex()
    body = {"ownerAddress": OWNER.address, "publicKey": public_key}
    signed = {**body, "signature": sign(OWNER, public_key)}
    register_pubkey(storage, SETTINGS, read(Registration, signed), now=NOW)


def session_headers(nonce: str, payload: bytes, key: LocalAccount = SESSION) -> dict[str, str]:
    message = f"sess:{nonce}:{hashlib.sha256(payload).hexdigest()}"
    return {"x-session-nonce": nonce, "x-session-signature": sign(key, message)}


def auth(storage: MemoryStorage, headers: dict[str, str], **request: Any) -> Any:
    request = {"method": "POST", "uri": "/invoice", "body": b"{}", "now": NOW + 1, **request}
    return authenticate(storage, SETTINGS, headers=headers, **request)


def auth_error(storage: MemoryStorage, headers: dict[str, str], **request: Any) -> str:
    with pytest.raises(AuthError) as err:
        auth(storage, headers, **request)
    return err.value.text


def test_a_read_signs_its_uri_given_as_text_or_as_bytes(storage: MemoryStorage) -> None:
    register(storage)
    uri = "/invoice/abc?x=%C3%A9"
    key = auth(
        storage, session_headers("1", uri.encode()), method="GET", uri=uri.encode(), body=b""
    )
    assert key.owner == OWNER.address
    key = auth(storage, session_headers("2", uri.encode()), method="HEAD", uri=uri, body=b"")
    assert key.last_seen_nonce == 2


@pytest.mark.parametrize("nonce", ["0", "01", "+1", "-1", "1.0", str(2**63)])
def test_a_malformed_nonce_is_refused_with_the_rule(storage: MemoryStorage, nonce: str) -> None:
    register(storage)
    assert auth_error(storage, session_headers(nonce, b"{}")) == (
        "session signature: x-session-nonce must be a positive decimal integer below 2**63, "
        "without sign or leading zeros"
    )


def test_an_unregistered_key_is_unknown(storage: MemoryStorage) -> None:
    register(storage)
    headers = session_headers("1", b"{}", key=ALICE)
    assert auth_error(storage, headers) == "session signature: unknown session key"


def test_a_key_is_honoured_until_its_expiry_second(storage: MemoryStorage) -> None:
    register(storage)
    assert auth(storage, session_headers("1", b"{}"), now=NOW + 3599) is not None
    expired = auth_error(storage, session_headers("2", b"{}"), now=NOW + 3600)
    assert expired == "session signature: session key expired"


def test_a_replayed_nonce_is_refused(storage: MemoryStorage) -> None:
    register(storage)
    headers = session_headers("5", b"{}")
    assert auth(storage, headers) is not None
    assert auth_error(storage, headers) == (
        "session signature: this nonce was already accepted for this request (a replay)"
    )
    # Window mode (the default): a lower nonce not yet seen passes once, then is a replay.
    lower = session_headers("4", b"{}")
    assert auth(storage, lower) is not None
    assert auth_error(storage, lower).endswith("(a replay)")


# -- salt-signed calls ---------------------------------------------------------------------------


def salted(signer: LocalAccount, salt: Any, **fields: Any) -> dict[str, Any]:
    body = {"newCallbackUrl": "https://shop.example/cb", **fields, "salt": salt}
    body["signature"] = sign(signer, json.dumps(body, separators=(",", ":")))
    return body


def test_a_salt_string_of_up_to_18_digits_is_a_timestamp(storage: MemoryStorage) -> None:
    settings = Settings(salt_window=WINDOW)
    assert verify_salted(storage, settings, salted(OWNER, str(NOW)), now=NOW) == OWNER.address
    with pytest.raises(AuthError) as err:  # read as a number, and far outside the window
        verify_salted(storage, settings, salted(OWNER, "1" + "0" * 17), now=NOW)
    assert err.value.text == (
        "wallet signature: salt is more than 600 seconds away from the server clock"
    )
    with pytest.raises(InvalidInput) as bad:
        verify_salted(storage, settings, salted(OWNER, "1" + "0" * 18), now=NOW)
    assert bad.value.text == "invalid request: salt: must be a unix timestamp in seconds"


def test_an_unrecoverable_salted_signature_says_wallet_signature(storage: MemoryStorage) -> None:
    body = {"newCallbackUrl": "https://shop.example/cb", "salt": NOW, "signature": UNRECOVERABLE}
    with pytest.raises(AuthError) as err:
        verify_salted(storage, Settings(salt_window=WINDOW), body, now=NOW)
    assert err.value.text == "wallet signature: signature does not recover to a public key"


@pytest.mark.parametrize("salt", [NOW, NOW + 0.5, NOW - WINDOW])
def test_a_salted_signature_is_remembered_to_the_windows_last_second(
    storage: MemoryStorage, salt: float
) -> None:
    settings = Settings(salt_window=WINDOW)
    body = salted(OWNER, salt)
    last_second = int(salt) + WINDOW
    assert verify_salted(storage, settings, body, now=NOW) == OWNER.address
    with pytest.raises(AuthError) as err:
        verify_salted(storage, settings, body, now=last_second)
    assert err.value.text == "wallet signature: signature was already used"
    with pytest.raises(AuthError, match="salt is more than 600 seconds away"):
        verify_salted(storage, settings, body, now=last_second + 1)


def test_the_replay_guard_runs_on_the_requests_clock_not_the_storages() -> None:
    # The storage's own clock is far ahead (another process's idea of now): the memory of a
    # signature must still last until the request's clock passes the salt window.
    storage = MemoryStorage(clock=lambda: NOW + 100_000)
    settings = Settings(salt_window=WINDOW)
    body = salted(OWNER, NOW)
    assert verify_salted(storage, settings, body, now=NOW) == OWNER.address
    with pytest.raises(AuthError, match="already used"):
        verify_salted(storage, settings, body, now=NOW + 1)
