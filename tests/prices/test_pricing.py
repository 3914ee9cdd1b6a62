from __future__ import annotations

from decimal import Decimal

import pytest

from paycore.errors import PriceUnavailable
from paycore.prices.pricing import PriceTable, StaticPriceSource, build_table

ETH = "1:0x0000000000000000000000000000000000000000"
USDT = "1:0xdAC17F958D2ee523a2206206994597C13D831ec7"


def test_value_is_decimal_and_rounded_half_even() -> None:
    table = PriceTable("usd", 10, {ETH: Decimal("3000.123456789")})
    assert table.value(ETH, Decimal("0.1")) == Decimal("300.01234568")
    assert table.value(ETH, Decimal("0.000000000000000001")) == Decimal("0")
    assert isinstance(table.value(ETH, Decimal(1)), Decimal)


def test_lookup_normalises_the_token_id() -> None:
    table = PriceTable("usd", 10, {USDT: Decimal("1")})
    assert table.price("1:0xdac17f958d2ee523a2206206994597c13d831ec7") == Decimal("1")


def test_missing_price_raises_instead_of_valuing_zero() -> None:
    with pytest.raises(PriceUnavailable):
        PriceTable("usd", 10, {}).value(ETH, Decimal(1))


def test_sources_are_tried_in_order_and_first_answer_wins() -> None:
    first = StaticPriceSource({ETH: Decimal("3000")})
    second = StaticPriceSource({ETH: Decimal("1"), USDT: Decimal("0.999")})
    table = build_table([first, second], "usd", [ETH, USDT], now=42)
    assert table.prices == {ETH: Decimal("3000"), USDT: Decimal("0.999")}
    assert table.snapshot().to_wire() == {
        "vsCurrency": "usd",
        "fetchedAt": 42,
        "prices": {ETH: 3000, USDT: 0.999},
    }


def test_non_finite_or_negative_prices_are_ignored() -> None:
    bad = StaticPriceSource({ETH: Decimal("NaN"), USDT: Decimal("-1")})
    assert build_table([bad], "usd", [ETH, USDT], now=1).prices == {}


def test_valuation_keeps_precision_beyond_28_digits() -> None:
    table = PriceTable("usd", 10, {ETH: Decimal("3000.5")})
    amount = Decimal("123456789012345678901.000000000000000001")
    # Exact product by integer arithmetic: 123456789012345678901000000000000000001e-18 * 30005e-1,
    # truncated to 8 places (the digits dropped are below half a unit, so half-even agrees).
    exact = 123456789012345678901000000000000000001 * 30005
    expected = Decimal(exact // 10**11).scaleb(-8)
    assert table.value(ETH, amount) == expected
    assert str(expected).startswith("370432095431543209542450.5")


def test_a_table_values_a_deposit_as_it_values_an_amount() -> None:
    """``PriceTable.value_deposit``: a fixed table values every invoice's deposit alike."""
    table = PriceTable("usd", 10, {ETH: Decimal("3000.123456789")})
    valued = table.value_deposit(None, None, ETH, Decimal("0.1"), 10)  # type: ignore[arg-type]
    assert valued == table.value(ETH, Decimal("0.1")) == Decimal("300.01234568")


def test_a_fixed_table_is_its_own_view_for_a_batch() -> None:
    """``PriceTable.for_batch``: batch attribution asks the pricing for a view of one batch's
    prices; a fixed table has nothing to read, so the view is the table and values alike."""
    table = PriceTable("usd", 10, {ETH: Decimal("3000.123456789")})
    view = table.for_batch(None, [])  # type: ignore[arg-type]
    assert view is table
    assert view.value(ETH, Decimal("0.1")) == Decimal("300.01234568")
