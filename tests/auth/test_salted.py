"""Salt-signed management calls: the signer of a recent, never-seen signature."""

from __future__ import annotations

import json
from typing import Any

import pytest
from auth_helpers import NOW, account, salted_body, sign

from paycore.auth import signed_text, verify_salted
from paycore.config import Settings
from paycore.errors import AuthError, InvalidInput
from paycore.storage.memory import MemoryStorage

OWNER = account("owner")
SETTINGS = Settings(salt_window=600)
FIELDS = {"newCallbackUrl": "https://shop.example/cb", "chainId": 1}


def _verify(storage: MemoryStorage, body: dict[str, Any], now: int = NOW) -> str:
    # Through JSON text and back, as a request body arrives.
    return verify_salted(storage, SETTINGS, json.loads(json.dumps(body)), now=now)


def test_returns_the_signer(storage: MemoryStorage) -> None:
    assert _verify(storage, salted_body(OWNER, FIELDS, NOW)) == OWNER.address
    app_key = account("app-key")
    assert _verify(storage, salted_body(app_key, FIELDS, NOW)) == app_key.address


def test_signed_text_drops_signature_wherever_it_sits() -> None:
    body = {"signature": "0x00", "salt": 5, "walletIndex": 3, "chainId": 1}
    assert signed_text(body) == '{"salt":5,"walletIndex":3,"chainId":1}'


def test_key_order_is_part_of_the_signed_text(storage: MemoryStorage) -> None:
    body = salted_body(OWNER, FIELDS, NOW)
    reordered = {k: body[k] for k in reversed(list(body)) if k != "signature"}
    reordered["signature"] = body["signature"]
    assert _verify(storage, reordered) != OWNER.address


def test_tampered_field_recovers_someone_else(storage: MemoryStorage) -> None:
    body = salted_body(OWNER, FIELDS, NOW)
    body["newCallbackUrl"] = "https://evil.example/cb"
    assert _verify(storage, body) != OWNER.address


def test_missing_salt_is_invalid_input(storage: MemoryStorage) -> None:
    body = dict(FIELDS)
    body["signature"] = sign(OWNER, json.dumps(body, separators=(",", ":")))
    with pytest.raises(InvalidInput, match="invalid request: salt: required"):
        _verify(storage, body)


def test_missing_signature_is_invalid_input(storage: MemoryStorage) -> None:
    with pytest.raises(InvalidInput, match="signature: required"):
        _verify(storage, {**FIELDS, "salt": NOW})


@pytest.mark.parametrize("salt", ["", "abc", "1.5", True, [NOW], {"t": NOW}, "-5"])
def test_salt_that_is_no_timestamp_is_invalid_input(storage: MemoryStorage, salt: Any) -> None:
    with pytest.raises(InvalidInput, match="salt: must be a unix timestamp"):
        _verify(storage, salted_body(OWNER, FIELDS, salt))


@pytest.mark.parametrize("offset", [-601, 601, -NOW, 10**6])
def test_stale_or_future_salt_is_refused(storage: MemoryStorage, offset: int) -> None:
    with pytest.raises(AuthError) as caught:
        _verify(storage, salted_body(OWNER, FIELDS, NOW + offset))
    assert caught.value.status == 401
    assert caught.value.text.startswith("wallet signature: salt is more than 600 seconds")


@pytest.mark.parametrize("salt", [NOW - 600, NOW + 600, str(NOW), NOW + 0.25])
def test_salt_within_the_window_in_any_numeric_form(storage: MemoryStorage, salt: Any) -> None:
    assert _verify(storage, salted_body(OWNER, FIELDS, salt)) == OWNER.address


def test_milliseconds_are_not_seconds(storage: MemoryStorage) -> None:
    with pytest.raises(AuthError, match="salt"):
        _verify(storage, salted_body(OWNER, FIELDS, NOW * 1000))


def test_reused_signature_is_refused(storage: MemoryStorage) -> None:
    body = salted_body(OWNER, FIELDS, NOW)
    _verify(storage, body)
    with pytest.raises(AuthError, match="wallet signature: signature was already used"):
        _verify(storage, body, now=NOW + 1)


def test_reused_signature_in_another_spelling_is_refused(storage: MemoryStorage) -> None:
    body = salted_body(OWNER, FIELDS, NOW)
    _verify(storage, body)
    hex_body = body["signature"][2:]
    v = int(hex_body[128:], 16) - 27
    for spelling in (hex_body, "0X" + hex_body.upper(), "0x" + hex_body[:128] + f"{v:02x}"):
        with pytest.raises(AuthError, match="already used"):
            _verify(storage, {**body, "signature": spelling})


def test_a_refused_stale_signature_is_not_remembered(storage: MemoryStorage) -> None:
    # Only a signature that passed the window check is recorded; a stale attempt must not
    # poison the record of a later, legitimate verification at another clock reading.
    body = salted_body(OWNER, FIELDS, NOW)
    with pytest.raises(AuthError, match="salt"):
        _verify(storage, body, now=NOW + 601)
    assert _verify(storage, body, now=NOW + 600) == OWNER.address


def test_malformed_signature_is_an_auth_error(storage: MemoryStorage) -> None:
    with pytest.raises(AuthError, match="wallet signature: malformed signature"):
        _verify(storage, {**FIELDS, "salt": NOW, "signature": 12345})


def test_unicode_and_nested_fields_are_signed_as_javascript_writes_them(
    storage: MemoryStorage,
) -> None:
    # The text JSON.stringify gives for this body (proven against Node in test_node_oracle).
    fields = {"emailAddress": "zoë@例え.jp", "meta": {"2": 1, "a": [0.1, 1e21, -0.0]}}
    js_text = '{"emailAddress":"zoë@例え.jp","meta":{"2":1,"a":[0.1,1e+21,0]},"salt":' + f"{NOW}}}"
    body = {**fields, "salt": NOW, "signature": sign(OWNER, js_text)}
    assert signed_text(body) == js_text
    assert _verify(storage, body) == OWNER.address


def test_the_salt_a_signed_text_names_is_in_whole_seconds() -> None:
    """A management text names the call's salt in whole seconds, whatever form it came in:
    a JavaScript client's unrounded ``Date.now() / 1000`` or a digit string."""
    from paycore.auth.salted import salt_seconds

    assert salt_seconds({"salt": 1_700_000_000.987}) == 1_700_000_000
    assert salt_seconds({"salt": "1700000001"}) == 1_700_000_001
    assert salt_seconds({"salt": 7}) == 7
