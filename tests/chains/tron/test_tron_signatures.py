"""TIP-191 owner signatures (TronLink / TronWeb ``signMessageV2``) for Tron owners.

Signatures are made with tronpy's ``PrivateKey.sign_msg`` -- tronpy's own TIP-191 code, not
paycore's -- and one published vector pins the digest to what TronWeb produces.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import pytest
from eth_account import Account
from eth_account.messages import encode_defunct
from tronpy.keys import PrivateKey

from paycore.auth import (
    clear_webhook_message,
    deregister_pubkey_message,
    get_webhook_message,
    poll_register_message,
    set_webhook_message,
    verify_wallet_signature,
)
from paycore.auth.tron import recover_tron_address, tron_message_hash
from paycore.errors import AuthError

#: A ``signMessageV2("hello world")`` vector published by a wallet's test suite as equal to
#: TronWeb's output; recovering it needs no key, so it checks the digest rule by itself.
VECTOR_ADDRESS = "TFwRqwWNov6cPN531NnhAKnLHPa6V1JtVu"
VECTOR_SIGNATURE = (
    "0xffbda635290d2bb871fab8400c92011b923f907476bd37471f5a21962a6ae86b"
    "638f766709234fa175ca3369cc350781521b8720b77bec1935c6c112e911f3e51c"
)


def tron_key(label: str) -> PrivateKey:
    return PrivateKey(hashlib.sha256(f"tron-sig:{label}".encode()).digest())


def tronlink_sign(key: PrivateKey, message: str) -> str:
    """What TronLink returns: r || s || v with v as 27/28, 0x hex."""
    raw = key.sign_msg(message.encode("utf-8")).to_bytes()
    return "0x" + (raw[:64] + bytes([raw[64] + 27])).hex()


OWNER = tron_key("owner")
OWNER_T = OWNER.public_key.to_base58check_address()
MESSAGES: list[Callable[[str], str]] = [
    lambda owner: set_webhook_message(owner, "https://shop.example/hook?ü=1"),
    get_webhook_message,
    clear_webhook_message,
    poll_register_message,
]


def test_the_published_vector_recovers_its_address() -> None:
    assert recover_tron_address("hello world", VECTOR_SIGNATURE) == VECTOR_ADDRESS
    assert verify_wallet_signature("hello world", VECTOR_SIGNATURE, VECTOR_ADDRESS) == (
        VECTOR_ADDRESS
    )


def test_digest_counts_utf8_bytes_like_tronweb() -> None:
    from tronpy.keys import hash_message

    for text in ("hello world", "ü€ – set-webhook", ""):
        assert tron_message_hash(text) == hash_message(text.encode("utf-8"))


@pytest.mark.parametrize("build", MESSAGES)
def test_tronlink_signature_authorises_a_tron_owner(build: Callable[[str], str]) -> None:
    message = build(OWNER_T)
    assert verify_wallet_signature(message, tronlink_sign(OWNER, message), OWNER_T) == OWNER_T
    # v as 0/1 (tronpy's raw form) is the same signature.
    raw = "0x" + OWNER.sign_msg(message.encode()).hex()
    assert verify_wallet_signature(message, raw, OWNER_T) == OWNER_T


def test_deregister_text_signed_by_a_tron_owner() -> None:
    message = deregister_pubkey_message("0x04" + OWNER.public_key.hex())
    assert verify_wallet_signature(message, tronlink_sign(OWNER, message), OWNER_T) == OWNER_T


def test_an_eip191_signature_by_the_same_key_still_works() -> None:
    acct = Account.from_key(OWNER.hex())
    message = get_webhook_message(OWNER_T)
    signature = acct.sign_message(encode_defunct(text=message)).signature
    assert verify_wallet_signature(message, "0x" + bytes(signature).hex(), OWNER_T) == OWNER_T


def test_a_tip191_signature_does_not_authorise_an_evm_owner() -> None:
    """The TRON prefix is tried for base58 owners only: an EVM owner signs EIP-191."""
    evm_owner = Account.from_key(OWNER.hex()).address
    message = get_webhook_message(evm_owner)
    with pytest.raises(AuthError, match="signer does not match"):
        verify_wallet_signature(message, tronlink_sign(OWNER, message), evm_owner)


def test_another_key_or_another_text_is_refused() -> None:
    message = get_webhook_message(OWNER_T)
    with pytest.raises(AuthError, match="^wallet signature: signer does not match"):
        verify_wallet_signature(message, tronlink_sign(tron_key("mallory"), message), OWNER_T)
    with pytest.raises(AuthError):
        other = clear_webhook_message(OWNER_T)
        verify_wallet_signature(other, tronlink_sign(OWNER, message), OWNER_T)


def test_high_s_is_refused_under_tip191_too() -> None:
    from paycore.auth.signatures import SECP256K1_N

    message = get_webhook_message(OWNER_T)
    raw = bytes.fromhex(tronlink_sign(OWNER, message)[2:])
    s = SECP256K1_N - int.from_bytes(raw[32:64], "big")
    flipped = raw[:32] + s.to_bytes(32, "big") + bytes([55 - raw[64]])  # 27 <-> 28
    with pytest.raises(AuthError, match="lower half"):
        verify_wallet_signature(message, "0x" + flipped.hex(), OWNER_T)
