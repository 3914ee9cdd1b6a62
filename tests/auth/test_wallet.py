"""Owner wallet signatures over the fixed texts of docs/interface.md §Wallet signatures."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from auth_helpers import account, public_key_of, sign

from paycore.auth import (
    clear_webhook_message,
    deregister_pubkey_message,
    get_webhook_message,
    poll_register_message,
    set_webhook_message,
    verify_wallet_signature,
)
from paycore.errors import AuthError, InvalidInput

OWNER = account("owner")
LOWER = OWNER.address.lower()


def test_texts_are_the_ones_spec_md_gives() -> None:
    url = "https://shop.example/hook?x=1&y=ü"
    assert set_webhook_message(OWNER.address, url) == f"set-webhook:{LOWER}:{url}"
    assert get_webhook_message(OWNER.address) == f"get-webhook:{LOWER}"
    assert clear_webhook_message(OWNER.address) == f"clear-webhook:{LOWER}"
    assert poll_register_message(OWNER.address) == f"poll-register:{LOWER}"
    public_key = public_key_of(account("session"))
    upper = "0x" + public_key[2:].upper()
    assert deregister_pubkey_message(upper) == f"deregister-pubkey:{public_key}"


def test_owner_in_any_case_gives_the_same_text() -> None:
    assert get_webhook_message(OWNER.address.upper().replace("0X", "0x")) == (
        get_webhook_message(OWNER.address)
    )


@pytest.mark.parametrize(
    "build",
    [
        lambda owner: set_webhook_message(owner, "https://a.example/h"),
        get_webhook_message,
        clear_webhook_message,
        poll_register_message,
    ],
)
def test_owner_signature_verifies_and_returns_the_checksummed_owner(
    build: Callable[[str], str],
) -> None:
    message = build(OWNER.address)
    assert verify_wallet_signature(message, sign(OWNER, message), LOWER) == OWNER.address


def test_signature_for_one_operation_does_not_authorise_another() -> None:
    signature = sign(OWNER, get_webhook_message(OWNER.address))
    with pytest.raises(AuthError) as caught:
        verify_wallet_signature(clear_webhook_message(OWNER.address), signature, OWNER.address)
    assert caught.value.text == "wallet signature: signer does not match ownerAddress"


def test_signature_of_another_wallet_is_refused() -> None:
    message = get_webhook_message(OWNER.address)
    with pytest.raises(AuthError, match="signer does not match"):
        verify_wallet_signature(message, sign(account("mallory"), message), OWNER.address)


def test_set_webhook_signature_binds_the_url() -> None:
    signature = sign(OWNER, set_webhook_message(OWNER.address, "https://a.example/h"))
    other = set_webhook_message(OWNER.address, "https://evil.example/h")
    with pytest.raises(AuthError):
        verify_wallet_signature(other, signature, OWNER.address)


def test_missing_or_malformed_parts() -> None:
    message = get_webhook_message(OWNER.address)
    with pytest.raises(InvalidInput, match="signature: required"):
        verify_wallet_signature(message, None, OWNER.address)
    with pytest.raises(InvalidInput, match="ownerAddress: required"):
        verify_wallet_signature(message, sign(OWNER, message), None)
    with pytest.raises(InvalidInput, match="ownerAddress"):
        verify_wallet_signature(message, sign(OWNER, message), "0xnotanaddress")
    with pytest.raises(AuthError, match="wallet signature: malformed signature"):
        verify_wallet_signature(message, "0x1234", OWNER.address)


def test_a_tron_owner_is_the_same_key_spelled_in_base58() -> None:
    from paycore.domain.tokens import tron_from_hex

    tron_owner = tron_from_hex(OWNER.address)
    message = poll_register_message(tron_owner)
    assert message == f"poll-register:{tron_owner.lower()}"
    assert verify_wallet_signature(message, sign(OWNER, message), tron_owner) == tron_owner
    with pytest.raises(AuthError):
        verify_wallet_signature(message, sign(account("mallory"), message), tron_owner)
