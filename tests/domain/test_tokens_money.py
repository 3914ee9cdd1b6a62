"""Edge normalisation: every malformed amount, address or token id is a typed InvalidInput."""

from __future__ import annotations

from decimal import Decimal

import pytest
from eth_utils import to_checksum_address

from paycore.domain.money import from_base_units, parse_amount, to_base_units, to_text
from paycore.domain.tokens import (
    NATIVE,
    TokenId,
    normalize_address,
    to_checksum,
    tron_from_hex,
    tron_to_hex,
)
from paycore.errors import InvalidInput

# Public mainnet pairs: USDT-TRC20 contract and the Tron zero-ish burn address.
TRON_PAIRS = [
    ("TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", "41a614f803b6fd780986a42c78ec9c7f77e6ded13c"),
    ("T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwb", "410000000000000000000000000000000000000000"),
]


@pytest.mark.parametrize(
    "raw",
    ["0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed", "0xFB6916095CA1DF60BB79CE92CE3EA74C37C5D359"],
)
def test_checksum_agrees_with_eth_utils(raw: str) -> None:
    assert to_checksum(raw) == to_checksum_address(raw)


def test_wrong_mixed_case_checksum_is_refused() -> None:
    with pytest.raises(InvalidInput, match="checksum"):
        to_checksum("0x5AAeb6053F3E94C9b9A09f33669435E7Ef1BeAed")


@pytest.mark.parametrize("raw", ["", "0x123", "0x" + "g" * 40, "hello", "0x" + "1" * 41])
def test_malformed_evm_addresses(raw: str) -> None:
    with pytest.raises(InvalidInput):
        normalize_address(1, raw)


@pytest.mark.parametrize(("b58", "hex_"), TRON_PAIRS)
def test_tron_base58_hex_round_trip(b58: str, hex_: str) -> None:
    assert tron_to_hex(b58) == hex_
    assert tron_from_hex(hex_) == b58
    assert normalize_address(728126428, hex_) == b58


def test_tron_bad_checksum_refused() -> None:
    with pytest.raises(InvalidInput):
        normalize_address(728126428, "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6u")


def test_token_ids() -> None:
    assert str(TokenId.parse("1:0xdac17f958d2ee523a2206206994597c13d831ec7")) == (
        "1:0xdAC17F958D2ee523a2206206994597C13D831ec7"
    )
    assert TokenId.parse("728126428:T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwb").address == NATIVE
    assert TokenId.parse(f"56:{NATIVE}").is_native


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "1",
        "x:0x00",
        "1:2:3",
        "-1:" + NATIVE,
        "1:0xZZ",
        None,
        5,
        "99999999999999999999:" + NATIVE,
    ],
)
def test_malformed_token_ids(raw: object) -> None:
    with pytest.raises(InvalidInput):
        TokenId.parse(raw)


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        ("10", "10"),
        ("10.50", "10.5"),
        ("0", "0"),
        ("0.000", "0"),
        ("1e3", "1000"),
        (7, "7"),
        ("0.000000000000000001", "0.000000000000000001"),
        ("-0", "0"),
    ],
)
def test_parse_amount_canonical(raw: object, text: str) -> None:
    assert to_text(parse_amount(raw, "value")) == text


@pytest.mark.parametrize(
    "raw",
    [
        "NaN",
        "nan",
        "Infinity",
        "-inf",
        "1e400",
        "-1",
        "abc",
        "",
        " ",
        1.5,
        True,
        None,
        [],
        "0.0000000000000000001",
        "1" * 31,
    ],
)
def test_parse_amount_refuses(raw: object) -> None:
    with pytest.raises(InvalidInput) as err:
        parse_amount(raw, "value")
    assert err.value.text.startswith("invalid request: value: ")
    assert "\n" not in err.value.text


def test_zero_refused_when_not_allowed() -> None:
    with pytest.raises(InvalidInput, match="greater than 0"):
        parse_amount("0", "amount", allow_zero=False)


def test_base_units_exact() -> None:
    assert from_base_units(1_500_000, 6) == Decimal("1.5")
    assert from_base_units(10**18 + 1, 18) == Decimal("1.000000000000000001")
    assert to_base_units(Decimal("1.000000000000000001"), 18) == 10**18 + 1
    with pytest.raises(InvalidInput):
        to_base_units(Decimal("0.0000001"), 6)


def test_owner_in_tron_hex_is_returned_as_base58() -> None:
    from paycore.domain.tokens import normalize_owner

    b58, hex_ = TRON_PAIRS[0]
    assert normalize_owner(hex_) == b58 == normalize_owner(b58)
    assert normalize_owner("0x" + "ab" * 20).startswith("0x")
