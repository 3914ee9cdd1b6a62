"""EIP-191 hashing and recovery, checked against eth-account's independent implementation."""

from __future__ import annotations

import pytest
from auth_helpers import account, public_key_of, sign
from eth_account.messages import defunct_hash_message

from paycore.auth.signatures import (
    SECP256K1_N,
    WALLET_PREFIX,
    parse_public_key,
    parse_signature,
    personal_message_hash,
    public_key_to_address,
    recover_address,
)
from paycore.errors import AuthError, InvalidInput

ALICE = account("alice")
MESSAGES = ["", "hello", "sess:1:" + "0" * 64, "héllo ✓ 😀", "line\nbreak", "x" * 1000]


@pytest.mark.parametrize("message", MESSAGES)
def test_personal_hash_matches_eth_account(message: str) -> None:
    assert personal_message_hash(message) == defunct_hash_message(text=message)


def test_length_prefix_counts_utf8_bytes_not_characters() -> None:
    # "é" is one character, two bytes: a character count would give a different digest.
    assert personal_message_hash("é") == personal_message_hash("é".encode())
    assert personal_message_hash("é") == defunct_hash_message(text="é")


@pytest.mark.parametrize("message", MESSAGES)
def test_recovers_the_signer(message: str) -> None:
    assert recover_address(message, sign(ALICE, message)) == ALICE.address


def test_a_signature_does_not_recover_the_signer_of_another_message() -> None:
    assert recover_address("hellp", sign(ALICE, "hello")) != ALICE.address


def _spellings(signature: str) -> list[str]:
    body = signature[2:]
    v = int(body[128:], 16)
    return [
        signature,
        body,  # no 0x
        "0X" + body.upper(),
        "0x" + body[:128] + f"{v - 27:02x}",  # v as 0/1
    ]


def test_every_spelling_of_v_and_hex_recovers_and_canonicalises_alike() -> None:
    signature = sign(ALICE, "hello")
    canonical = {parse_signature(s) for s in _spellings(signature)}
    assert len(canonical) == 1
    assert next(iter(canonical))[64] in (0, 1)
    for spelling in _spellings(signature):
        assert recover_address("hello", spelling) == ALICE.address


def test_high_s_twin_is_refused() -> None:
    signature = bytes.fromhex(sign(ALICE, "hello")[2:])
    s = int.from_bytes(signature[32:64], "big")
    flipped_v = 28 if signature[64] == 27 else 27
    twin = signature[:32] + (SECP256K1_N - s).to_bytes(32, "big") + bytes((flipped_v,))
    with pytest.raises(AuthError, match="lower half"):
        recover_address("hello", "0x" + twin.hex())


@pytest.mark.parametrize(
    ("signature", "reason"),
    [
        (None, "hex string"),
        (b"\x00" * 65, "hex string"),
        ("0x" + "ab" * 64, "65 bytes"),  # 64 bytes
        ("0x" + "ab" * 66, "65 bytes"),
        ("0x" + "zz" * 65, "65 bytes"),
        ("0x" + "ab " * 64 + "1b", "65 bytes"),  # bytes.fromhex would skip the spaces
        ("0x" + "11" * 64 + "1d", "v must be"),  # v = 29
        ("0x" + "00" * 32 + "11" * 32 + "1b", "r out of range"),
        ("0x" + "11" * 32 + "00" * 32 + "1b", "lower half"),
    ],
)
def test_malformed_signatures_are_auth_errors(signature: object, reason: str) -> None:
    with pytest.raises(AuthError, match=reason) as caught:
        recover_address("hello", signature)
    assert caught.value.status == 401
    assert caught.value.text.startswith("session signature: malformed signature")


def test_prefix_names_the_scheme() -> None:
    with pytest.raises(AuthError) as caught:
        recover_address("hello", "nope", prefix=WALLET_PREFIX)
    assert caught.value.text.startswith("wallet signature: ")


def test_unrecoverable_signature_is_an_auth_error() -> None:
    # r = 5 is in range, but no curve point has x = 5 (132 is not a square mod p).
    r_no_point = (5).to_bytes(32, "big")
    signature = "0x" + (r_no_point + (1).to_bytes(32, "big") + b"\x1b").hex()
    with pytest.raises(AuthError, match="does not recover"):
        recover_address("hello", signature)


def test_public_key_round_trip_and_address() -> None:
    text = public_key_of(ALICE)
    raw = parse_public_key(text)
    assert len(raw) == 65 and raw[0] == 4
    assert public_key_to_address(raw) == ALICE.address
    assert parse_public_key(text.upper().replace("0X", "0x")) == raw


@pytest.mark.parametrize(
    ("public_key", "reason"),
    [
        (None, "0x04 followed by"),
        ("04" + "11" * 64, "0x04 followed by"),  # docs/interface.md: 0x04 prefix
        ("0x02" + "11" * 32, "0x04 followed by"),  # compressed
        ("0x04" + "11" * 63, "0x04 followed by"),
        ("0x04" + "00" * 64, "not a point"),
        ("0x04" + "11" * 64, "not a point"),
    ],
)
def test_bad_public_keys_are_invalid_input(public_key: object, reason: str) -> None:
    with pytest.raises(InvalidInput, match=reason) as caught:
        parse_public_key(public_key, "publicKey")
    assert caught.value.text.startswith("invalid request: publicKey: ")
