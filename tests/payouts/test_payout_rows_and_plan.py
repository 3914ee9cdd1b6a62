"""A payout batch's rows and plan, chain-neutral (``paycore.payouts.rows`` and ``.plan``):
every bad row reported at once with its line, totals per token, the refusal of a batch the
owner cannot cover, the split into calls and each call's distinct tag. The chains' own
payout tests (tests/chains/evm, tests/chains/tron) build and send what these plan."""

from __future__ import annotations

from decimal import Decimal

import pytest

from paycore import Settings
from paycore.domain.tokens import NATIVE
from paycore.errors import InvalidInput
from paycore.payouts.plan import MAX_ROWS_PER_CALL, call_ref, refuse_short, split, totals
from paycore.payouts.rows import BadRows, PayoutRow, check_rows, csv_rows, json_rows

ALICE = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"
BOB = "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359"


def rows(text: str) -> list[PayoutRow]:
    return check_rows(Settings(), 1, csv_rows(text))


def test_a_csv_upload_becomes_checked_rows_in_base_units() -> None:
    got = rows(
        f"address,token,amount,reference\n{ALICE.lower()},{NATIVE},0.5,June\n\n{BOB},{NATIVE},2,\n"
    )
    assert [(r.line, r.to, r.amount, r.value, r.reference) for r in got] == [
        (2, ALICE, Decimal("0.5"), 5 * 10**17, "June"),
        (4, BOB, Decimal(2), 2 * 10**18, ""),
    ]


def test_every_bad_row_is_named_with_its_line() -> None:
    text = (
        "amount,address,token\n"
        f"-1,{ALICE},{NATIVE}\n"
        f"1,0x0000000000000000000000000000000000000000,{NATIVE}\n"
        f"1,not-an-address,{NATIVE}\n"
        f"1,{BOB},{NATIVE}\n"
    )
    with pytest.raises(BadRows) as refused:
        rows(text)
    lines = str(refused.value).splitlines()
    assert lines[0] == "invalid request: rows: 3 bad row(s)"
    assert [line.split(":")[0] for line in lines[1:]] == ["line 2", "line 3", "line 4"]
    assert "zero address" in lines[2]


def test_more_than_twenty_bad_rows_are_counted_not_listed() -> None:
    with pytest.raises(BadRows) as refused:
        check_rows(Settings(), 1, json_rows([{"address": "x"}] * 25))
    lines = str(refused.value).splitlines()
    assert len(lines) == 1 + 20 + 1 and lines[-1] == "... and 5 more"


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"address": ALICE, "token": NATIVE, "amount": "1", "memo": "x"}, "memo"),
        ({"token": NATIVE, "amount": "1"}, "address"),
        ({"address": ALICE, "token": NATIVE, "amount": "0"}, "amount"),
        ({"address": ALICE, "token": NATIVE, "amount": "1", "reference": 7}, "reference"),
        ({"address": ALICE, "token": NATIVE, "amount": "1", "reference": "a\nb"}, "reference"),
    ],
)
def test_one_bad_field_is_named(raw: dict[str, object], field: str) -> None:
    with pytest.raises(BadRows) as refused:
        check_rows(Settings(), 1, json_rows([raw]))
    assert str(refused.value).splitlines()[1].startswith(f"line 1: {field}:")


def test_no_rows_and_non_objects_are_refused() -> None:
    with pytest.raises(InvalidInput, match="at least one row"):
        check_rows(Settings(), 1, [])
    with pytest.raises(InvalidInput, match="array of objects"):
        json_rows({"address": ALICE})
    with pytest.raises(BadRows, match="line 2: rows: each row must be an object"):
        json_rows([{}, "x"])


def row(to: str, token: str, value: int, line: int = 1) -> PayoutRow:
    return PayoutRow(line, to, token, Decimal(value), value, "")


def test_totals_add_up_per_token_in_first_seen_order() -> None:
    usdc = "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48"
    got = totals([row(ALICE, usdc, 3), row(BOB, NATIVE, 5), row(BOB, usdc, 4)])
    assert list(got.items()) == [(usdc, 7), (NATIVE, 5)]


def test_a_batch_the_owner_cannot_cover_is_refused_before_anything_is_built() -> None:
    refuse_short(ALICE, NATIVE, needed=10, held=10, decimals=0)  # exactly enough
    with pytest.raises(InvalidInput) as refused:
        refuse_short(ALICE, NATIVE, needed=15 * 10**17, held=10**18, decimals=18)
    assert "the rows pay 1.5 of" in str(refused.value)
    assert f"{ALICE} holds 1" in str(refused.value)


def test_rows_split_into_calls_in_order_and_never_over_the_cap() -> None:
    batch = [row(ALICE, NATIVE, n, line=n) for n in range(1, 8)]
    assert [[r.line for r in call] for call in split(batch, 3)] == [[1, 2, 3], [4, 5, 6], [7]]
    assert len(split(batch, 0)) == 7  # at least one row per call
    many = [row(ALICE, NATIVE, 1)] * (MAX_ROWS_PER_CALL + 1)
    assert [len(call) for call in split(many, 10_000)] == [MAX_ROWS_PER_CALL, 1]


def test_each_call_of_a_batch_carries_a_distinct_32_byte_tag() -> None:
    ref = bytes(range(20))
    tags = [call_ref(ref, i) for i in range(3)]
    assert all(len(tag) == 32 and tag[:16] == ref[:16] for tag in tags)
    assert len(set(tags)) == 3
    assert call_ref(b"ab", 1) == b"ab" + b"\0" * 14 + (1).to_bytes(16, "big")
