"""The edges of money: each bound exactly where it is, each refusal with its own words.

These tests pin what mutation testing (docs/mutation.md) found unguarded: the ceiling of an
amount at 10**30 and of a price below it, the 80-character and 18-place limits, the exact
(not 28-digit) arithmetic, and the canonical form that storage and the wire receive.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Context, Decimal, localcontext

import pytest

from paycore.domain.money import from_base_units, normalize, parse_amount, to_base_units, to_text
from paycore.errors import InvalidInput, PriceUnavailable
from paycore.prices.pricing import (
    PriceTable,
    Quote,
    StaticPriceSource,
    build_table,
    quotes_of,
    value_at,
)
from paycore_storage.decimals import exact, exact_text

ETH = "1:0x0000000000000000000000000000000000000000"
USDT = "1:0xdAC17F958D2ee523a2206206994597C13D831ec7"

#: The largest amount accepted: one unit of the 18th place below 10**30 (48 digits).
LARGEST = "9" * 30 + "." + "9" * 18


def refusal(raw: object, field: str = "value", **kwargs: bool) -> str:
    with pytest.raises(InvalidInput) as err:
        parse_amount(raw, field, **kwargs)
    assert err.value.field == field
    return err.value.text


# -- parse_amount: each refusal and its text ---------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        (True, "invalid request: value: must be a decimal string"),
        (False, "invalid request: value: must be a decimal string"),
        (None, "invalid request: value: must be a decimal string"),
        (1.5, "invalid request: value: must be a decimal string"),
        ([], "invalid request: value: must be a decimal string"),
        ("", "invalid request: value: must be a decimal string"),
        ("   ", "invalid request: value: must be a decimal string"),
        ("1" * 81, "invalid request: value: must be a decimal string"),
        ("ten", "invalid request: value: not a decimal number: 'ten'"),
        ("NaN", "invalid request: value: must be a finite number"),
        ("-Infinity", "invalid request: value: must be a finite number"),
        ("-1", "invalid request: value: must not be negative"),
        ("-0.5", "invalid request: value: must not be negative"),
        ("1" + "0" * 30, "invalid request: value: is too large"),
        ("1e30", "invalid request: value: is too large"),
        ("0." + "0" * 18 + "1", "invalid request: value: has more than 18 decimal places"),
    ],
)
def test_each_refusal_says_what_is_wrong(raw: object, text: str) -> None:
    assert refusal(raw) == text


def test_an_unparsable_numeral_is_quoted_to_forty_characters() -> None:
    raw = "x" * 39 + "yz" + "w" * 9  # 50 characters
    assert refusal(raw) == f"invalid request: value: not a decimal number: {raw[:40]!r}"


def test_eighty_characters_is_the_length_limit() -> None:
    # Leading zeros make long but small numerals: 80 characters pass, 81 do not.
    assert parse_amount("0" * 79 + "7", "value") == Decimal(7)
    assert refusal("0" * 80 + "7") == "invalid request: value: must be a decimal string"


def test_the_ceiling_is_ten_to_the_thirty_exclusive() -> None:
    assert str(parse_amount(LARGEST, "value")) == LARGEST
    assert refusal("1" + "0" * 30) == "invalid request: value: is too large"
    assert refusal("1" + "0" * 30 + ".000000000000000001").endswith("is too large")


def test_eighteen_places_pass_and_nineteen_only_when_the_last_is_zero() -> None:
    assert str(parse_amount("1." + "0" * 17 + "1", "value")) == "1.000000000000000001"
    assert str(parse_amount("1." + "0" * 19, "value")) == "1"
    assert str(parse_amount("2." + "5" + "0" * 18, "value")) == "2.5"
    assert refusal("1." + "0" * 18 + "1").endswith("has more than 18 decimal places")


def test_the_place_limit_holds_for_amounts_beyond_28_digits() -> None:
    # 29 integer digits and 19 places: Python's default 28-digit context cannot even round
    # this to 18 places, so the check must run in the wide money context.
    big = "9" * 29 + "." + "9" * 19
    assert refusal(big).endswith("has more than 18 decimal places")
    assert str(parse_amount("9" * 29 + "." + "9" * 18 + "0", "value")) == "9" * 29 + "." + "9" * 18


def test_zero_can_be_refused_with_the_fields_name() -> None:
    assert (
        refusal("0", "amount", allow_zero=False)
        == "invalid request: amount: must be greater than 0"
    )
    assert refusal("0.000", "amount", allow_zero=False).endswith("must be greater than 0")
    assert parse_amount("0", "amount") == 0


# -- canonical form: what storage and the wire receive -----------------------------------------


@pytest.mark.parametrize(
    ("raw", "stored"),
    [
        ("1E+2", "100"),
        ("1e3", "1000"),
        ("10", "10"),
        ("100.000", "100"),
        ("2.50", "2.5"),
        ("-0", "0"),
        ("0E-8", "0"),
        (LARGEST, LARGEST),
    ],
)
def test_amounts_come_out_in_plain_notation(raw: str, stored: str) -> None:
    # ``str``, not to_text: this is the Decimal a storage backend is handed.
    value = parse_amount(raw, "value")
    assert str(value) == stored
    assert str(normalize(Decimal(raw))) == stored
    assert to_text(Decimal(raw)) == stored


def test_normalising_keeps_every_digit_of_a_48_digit_amount() -> None:
    assert str(normalize(Decimal(LARGEST + "000"))) == LARGEST


def test_base_units_convert_exactly_beyond_28_digits() -> None:
    assert str(from_base_units(10**47 + 1, 18)) == "1" + "0" * 29 + "." + "0" * 17 + "1"
    assert str(from_base_units(10**48 - 1, 18)) == LARGEST
    assert str(from_base_units(5 * 10**20, 18)) == "500"
    assert to_base_units(Decimal(LARGEST), 18) == 10**48 - 1


def test_a_finer_amount_than_the_token_carries_names_the_field() -> None:
    with pytest.raises(InvalidInput) as err:
        to_base_units(Decimal("0.0000001"), 6)
    assert (
        err.value.text == "invalid request: amount: has more than 6 decimal places for this token"
    )
    with pytest.raises(InvalidInput) as err:
        to_base_units(Decimal("0.0000001"), 6, "withdraw.amount")
    assert err.value.field == "withdraw.amount"


# -- prices: which are usable ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("price", "usable"),
    [
        (Decimal(0), False),
        (Decimal("0.000000000000000001"), True),
        (Decimal("9" * 30 + ".99999999"), True),
        (Decimal("1" + "0" * 30), False),
        (Decimal("-1"), False),
        (Decimal("Infinity"), False),
        (Decimal("NaN"), False),
    ],
)
def test_a_usable_price_is_above_zero_and_below_the_ceiling(price: Decimal, usable: bool) -> None:
    table = build_table([StaticPriceSource({ETH: price})], "usd", [ETH], now=1)
    assert (ETH in table.prices) is usable


class AgedSource:
    """A source that knows its prices' ages and answers more than it was asked."""

    name = "aged"

    def __init__(self, quotes: dict[str, Quote]) -> None:
        self.quotes = quotes

    def fetch(self, vs_currency: str, tokens: Sequence[str]) -> dict[str, Decimal]:
        raise AssertionError("a quoting source is asked for quotes")

    def fetch_quotes(self, vs_currency: str, tokens: Sequence[str]) -> dict[str, Quote]:
        return dict(self.quotes)


def test_quotes_keep_only_usable_prices_of_the_tokens_asked() -> None:
    source = AgedSource(
        {
            ETH: Quote(Decimal("3000"), as_of=5),
            USDT: Quote(Decimal(0), as_of=5),
            "1:0xab": Quote(Decimal(1)),
        }
    )
    assert quotes_of(source, "usd", [ETH, USDT]) == {ETH: Quote(Decimal("3000"), as_of=5)}


class RecordingSource:
    """A source that answers every token at 1 and remembers what it was asked."""

    name = "recording"

    def __init__(self) -> None:
        self.asked: list[list[str]] = []

    def fetch(self, vs_currency: str, tokens: Sequence[str]) -> dict[str, Decimal]:
        self.asked.append(list(tokens))
        return {token: Decimal(1) for token in tokens}


def test_later_sources_are_not_asked_once_every_price_is_found() -> None:
    first = StaticPriceSource({ETH: Decimal("3000"), USDT: Decimal("1")})
    second = RecordingSource()
    table = build_table([first, second], "usd", [ETH, USDT], now=7)
    assert isinstance(table, PriceTable)
    assert (table.prices, table.fetched_at) == ({ETH: Decimal("3000"), USDT: Decimal("1")}, 7)
    assert second.asked == []
    table = build_table([StaticPriceSource({ETH: Decimal("3000")}), second], "usd", [ETH, USDT], 7)
    assert (table.prices, second.asked) == ({ETH: Decimal("3000"), USDT: Decimal(1)}, [[USDT]])


def test_a_missing_price_names_the_currency_and_token() -> None:
    with pytest.raises(
        PriceUnavailable, match=r"^no eur price for 1:0xdAC17F958D2ee523a2206206994597C13D831ec7$"
    ):
        PriceTable("eur", 1, {}).price(USDT.lower())


def test_a_value_is_rounded_half_even_and_stored_without_exponent() -> None:
    assert value_at(Decimal("1"), Decimal("0.000000005")) == 0  # half: to the even 0
    assert value_at(Decimal("1"), Decimal("0.000000015")) == Decimal("0.00000002")
    assert value_at(Decimal("1"), Decimal("0.0000000151")) == Decimal("0.00000002")
    # A deposit worth less than the last place is worth 0, written "0", not "0E-8"; and a
    # whole value carries no trailing zeros that storage would keep on one backend only.
    assert str(value_at(Decimal("3000"), Decimal("0.000000000000000001"))) == "0"
    assert str(value_at(Decimal("2"), Decimal("5"))) == "10"


@pytest.mark.parametrize("text", [LARGEST, "1" + "0" * 29, "0." + "0" * 17 + "1"])
def test_storage_reads_every_digit_back_in_a_narrow_caller_context(text: str) -> None:
    """``paycore_storage.decimals.exact`` enters no context of its own: a caller running
    at 6 digits must still get all 48 back, canonical, from SQLite's text and from a
    driver's NUMERIC Decimal with its fixed 30-place scale alike."""
    numeric = Decimal(text).quantize(Decimal(1).scaleb(-30), context=Context(prec=80))
    with localcontext(Context(prec=6)):
        for stored in (text, numeric):
            value = exact(stored)
            assert exact_text(value) == text
            assert value == Decimal(text)
