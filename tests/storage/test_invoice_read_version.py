"""The SQL read's ``version`` (``invoice_read._version``) hashes its rows pickled in fast
mode. Equal rows must give one version however the driver made their values (pickle's
memo, which fast mode turns off, writes an object met twice as a reference), and rows
that differ in any value, or only in a value's type, must give two: a wrong 304 would
show the buyer a stale invoice."""

from __future__ import annotations

import sqlite3
from decimal import Decimal
from typing import Any

import pytest

from paycore_storage.invoice_read import _version


def _fresh(text: str) -> str:
    """``text`` as a new object, as a driver makes each value it returns."""
    return "".join(list(text))


def test_equal_rows_made_apart_give_one_version() -> None:
    made = [("guid-1", "", "x", "x", 7, None, Decimal("1.50"), "a longer text", "a longer text")]
    again = [
        (_fresh("guid-1"), _fresh(""), _fresh("x"), _fresh("x"), 7, None, Decimal("1.50"),
         _fresh("a longer text"), _fresh("a longer text")),
    ]  # fmt: skip
    assert _version(made) == _version(again)  # the literals share objects, `again` does not


def test_rows_read_twice_from_sqlite_give_one_version() -> None:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (a TEXT, b TEXT, c TEXT, d INTEGER, e REAL, f TEXT)")
    db.execute("INSERT INTO t VALUES ('', 'x', 'x', 3, 1.5, NULL)")
    first = db.execute("SELECT * FROM t").fetchall()
    second = db.execute("SELECT * FROM t").fetchall()
    assert _version(first) == _version(second)


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("1", 1),
        (None, "None"),
        (0.0, -0.0),
        (True, 1),
        (Decimal("1.5"), Decimal("1.50")),
        ("paid", "init"),
        ('{"a": 1}', '{"a":1}'),
    ],
)
def test_any_difference_gives_another_version(one: Any, other: Any) -> None:
    assert _version([("guid-1", one)]) != _version([("guid-1", other)])


def test_the_order_of_rows_counts() -> None:
    assert _version([("a",), ("b",)]) != _version([("b",), ("a",)])
