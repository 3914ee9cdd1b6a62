"""The JSON.stringify twin: table cases, plus properties of its number layout."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsjson_cases import CASES

from paycore.auth.jsjson import number, stringify

# Plain floats, plus dense draws around both ends of JavaScript's plain-notation range.
FLOATS = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.floats(min_value=1e-8, max_value=1e-5),
    st.floats(min_value=1e19, max_value=1e23),
)


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_matches_javascript_on_the_table(text: str, expected: str) -> None:
    assert stringify(json.loads(text)) == expected


@given(FLOATS)
def test_number_round_trips_and_keeps_the_shortest_digits(value: float) -> None:
    text = number(value)
    assert float(text) == value or (value == 0 and text == "0")
    digits = repr(abs(value)).split("e")[0].replace(".", "").strip("0")
    assert text.lstrip("-").split("e")[0].replace(".", "").strip("0") == digits


@given(FLOATS)
def test_number_layout_rules(value: float) -> None:
    text = number(value)
    magnitude = abs(value)
    if magnitude == 0:
        assert text == "0"
    elif 1e-6 <= magnitude < 1e21:
        assert "e" not in text  # plain decimal notation in this range
    else:
        mantissa, exponent = text.split("e")
        assert exponent[0] in "+-" and not exponent[1:].startswith("0")
        assert 1 <= abs(float(mantissa)) < 10


@given(st.integers())
def test_integers_behave_as_javascript_doubles(value: int) -> None:
    text = stringify(value)
    try:
        as_double = float(value)
    except OverflowError:
        assert text == "null"
        return
    if abs(value) <= 2**53:
        assert text == str(value)
    else:
        assert float(text) == as_double


def test_non_finite_numbers_are_null() -> None:
    assert [number(math.inf), number(-math.inf), number(math.nan)] == ["null"] * 3


def test_tuples_are_arrays_and_other_objects_are_refused() -> None:
    assert stringify((1, "a")) == '[1,"a"]'
    with pytest.raises(TypeError):
        stringify({1, 2})
    with pytest.raises(TypeError):
        stringify({1: "non-string key"})
