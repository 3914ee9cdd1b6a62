"""The invoice search's contract (``paycore.storage.search``): every store finds the same
invoices, in the same order, counts them the same way up to the cap, and sums the same
exact figures per day, token, status and currency."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import attrs

from paycore.domain.records import Invoice, Status
from paycore.storage import Storage
from paycore.storage.search import InvoiceFilter, StatsRow
from paycore.testing.storage_records import BIG, OTHER_OWNER, OWNER, TINY, invoice

__all__ = [
    "test_search_filters_by_each_field_newest_first",
    "test_search_finds_text_in_description_and_data_literally",
    "test_search_pages_after_a_position_that_no_longer_matches",
    "test_search_counts_up_to_the_cap",
    "test_stats_group_by_day_chain_token_status_currency_exactly",
]

DAY = 86_400
T0 = 1_700_006_400  # a midnight, UTC


def _guid(n: int) -> str:
    return f"00000000-0000-4000-8000-{n:012d}"


def _shop(storage: Storage) -> list[Invoice]:
    """Seven of OWNER's invoices over three days and one of OTHER_OWNER's, inserted in an
    order that is not their creation times' (two in the same second)."""
    specs: list[tuple[int, Status, int, str, dict[str, Any], str, Decimal]] = [
        # (created_at, status, chain, description, data, vs_currency, paid)
        (T0 + 10, Status.PAID, 1, "Blue mug", {"orderId": "ORD-1040"}, "usd", BIG),
        (T0 + 10, Status.INIT, 1, "Red MUG", {"orderId": "ORD-1041"}, "usd", Decimal(0)),
        (T0 + DAY, Status.PAID, 137, "Tea 100%", {"orderId": "ORD-1042", "n": 7}, "usd", TINY),
        (T0 + 5, Status.EXPIRED, 1, "Coffee_beans", {"items": ["mug_x", 12.5]}, "eur", TINY),
        (T0 + 2 * DAY, Status.PARTIAL_PAID, 1, "Plates", {"orderId": "ord-1044"}, "usd", TINY),
        (T0 + 2 * DAY + 1, Status.PAID, 137, "Ünïcode Spoon", {}, "eur", BIG),
        (T0 - 1, Status.PAID, 1, "Yesterday's mug", {"orderId": "ORD-1039"}, "usd", BIG),
    ]
    made = []
    for n, (at, status, chain, desc, data, currency, paid) in enumerate(specs, start=1):
        made.append(
            attrs.evolve(
                invoice(_guid(n), created_at=at, chain_id=chain, status=status),
                description=desc,
                data=data,
                vs_currency=currency,
                paid_amount=paid,
            )
        )
    theirs = attrs.evolve(
        invoice(_guid(99), created_at=T0 + 10, owner=OTHER_OWNER),
        description="Blue mug",
        data={"orderId": "ORD-1040"},
    )
    with storage.transaction() as tx:
        for record in [*made, theirs]:
            tx.insert_invoice(record)
    return made


def _found(storage: Storage, where: InvoiceFilter, **kw: object) -> list[str]:
    with storage.transaction() as tx:
        found = tx.search_invoices(where, after=None, limit=50, **kw)  # type: ignore[arg-type]
    assert found is not None
    return [i.guid for i in found]


def test_search_filters_by_each_field_newest_first(storage: Storage) -> None:
    made = _shop(storage)
    g = [i.guid for i in made]
    # By time, newest first; within one second by creation order (g1 after g0).
    newest = [g[5], g[4], g[2], g[1], g[0], g[3], g[6]]
    assert _found(storage, InvoiceFilter(OWNER)) == newest
    assert _found(storage, InvoiceFilter(OWNER), newest_first=False) == newest[::-1]
    paid = InvoiceFilter(OWNER, statuses=(Status.PAID,))
    assert _found(storage, paid) == [g[5], g[2], g[0], g[6]]
    two = InvoiceFilter(OWNER, statuses=(Status.EXPIRED, Status.PARTIAL_PAID))
    assert _found(storage, two) == [g[4], g[3]]
    day_one = InvoiceFilter(OWNER, created_from=T0, created_to=T0 + DAY)
    assert _found(storage, day_one) == [g[1], g[0], g[3]]
    assert _found(storage, InvoiceFilter(OWNER, chain_id=137)) == [g[5], g[2]]
    token = InvoiceFilter(OWNER, token=made[2].token)
    assert _found(storage, token) == [g[5], g[2]]
    assert _found(storage, InvoiceFilter(OWNER, token="1:0xnothing")) == []
    everything = InvoiceFilter(OWNER, (Status.PAID,), T0, T0 + 3 * DAY, 137, made[5].token, "spoon")
    assert _found(storage, everything) == [g[5]]
    fetched = storage_invoice(storage, everything)
    assert fetched == made[5]  # the whole record, as inserted


def storage_invoice(storage: Storage, where: InvoiceFilter) -> Invoice:
    with storage.transaction() as tx:
        found = tx.search_invoices(where, after=None, limit=1)
    assert found
    return found[0]


def test_search_finds_text_in_description_and_data_literally(storage: Storage) -> None:
    made = _shop(storage)
    g = [i.guid for i in made]

    def text(t: str) -> list[str]:
        return _found(storage, InvoiceFilter(OWNER, text=t))

    assert text("ord-1040") == [g[0]]  # an order id in data, whatever its case
    assert text("ord-104") == [g[4], g[2], g[1], g[0]]
    assert text("mug") == [g[1], g[0], g[3], g[6]]  # description, and a list inside data
    assert text("12.5") == [g[3]] and text("ünïcode") == [g[5]]
    assert text("100%") == [g[2]] and text("0%") == [g[2]]  # % is a character, not a wildcard
    assert text("e_b") == [g[3]] and text("eeb") == []  # so is _
    assert text("orderid") == []  # keys are not searched


def test_search_pages_after_a_position_that_no_longer_matches(storage: Storage) -> None:
    made = _shop(storage)
    g = [i.guid for i in made]
    paid = InvoiceFilter(OWNER, statuses=(Status.PAID,))
    with storage.transaction() as tx:
        after_init = tx.search_invoices(paid, after=g[1], limit=5)
        after_init_up = tx.search_invoices(paid, after=g[1], limit=5, newest_first=False)
        nowhere = tx.search_invoices(paid, after=_guid(12345), limit=5)
        short = tx.search_invoices(paid, after=g[5], limit=1)
        oldest = tx.search_invoices(paid, after=g[6], limit=1)
    # g1 (open) was created in g0's second, after it: older paid ones are g0 and g6.
    assert after_init is not None and [i.guid for i in after_init] == [g[0], g[6]]
    assert after_init_up is not None and [i.guid for i in after_init_up] == [g[2], g[5]]
    assert nowhere is None
    assert short is not None and [i.guid for i in short] == [g[2]]
    assert oldest == []


def test_search_counts_up_to_the_cap(storage: Storage) -> None:
    _shop(storage)
    with storage.transaction() as tx:
        assert tx.count_invoice_matches(InvoiceFilter(OWNER), 100) == 7
        assert tx.count_invoice_matches(InvoiceFilter(OWNER), 3) == 3
        assert tx.count_invoice_matches(InvoiceFilter(OWNER, text="blue"), 100) == 1
        assert tx.count_invoice_matches(InvoiceFilter(OTHER_OWNER, text="mug"), 100) == 1
        assert tx.count_invoice_matches(InvoiceFilter("0xnobody"), 100) == 0


def test_stats_group_by_day_chain_token_status_currency_exactly(storage: Storage) -> None:
    made = _shop(storage)
    d0 = T0 // DAY
    usdt1, usdt137 = made[0].token, made[2].token
    with storage.transaction() as tx:
        rows = tx.invoice_stats(OWNER, start=T0, end=T0 + 3 * DAY)
        shifted = tx.invoice_stats(OWNER, start=T0 - 1, end=T0 + 6, offset=-3600)
        nobody = tx.invoice_stats("0xnobody", start=T0, end=T0 + DAY)
    assert list(rows) == [
        StatsRow(d0, 1, usdt1, Status.EXPIRED, "eur", 1, TINY),
        StatsRow(d0, 1, usdt1, Status.INIT, "usd", 1, Decimal(0)),
        StatsRow(d0, 1, usdt1, Status.PAID, "usd", 1, BIG),
        StatsRow(d0 + 1, 137, usdt137, Status.PAID, "usd", 1, TINY),
        StatsRow(d0 + 2, 1, usdt1, Status.PARTIAL_PAID, "usd", 1, TINY),
        StatsRow(d0 + 2, 137, usdt137, Status.PAID, "eur", 1, BIG),
    ]
    # An hour west of UTC, both the invoice of T0 - 1 and that of T0 + 5 fall on the day
    # before T0's, and their exact sum is kept.
    assert list(shifted) == [
        StatsRow(d0 - 1, 1, usdt1, Status.EXPIRED, "eur", 1, TINY),
        StatsRow(d0 - 1, 1, usdt1, Status.PAID, "usd", 1, BIG),
    ]
    assert list(nobody) == []
    with storage.transaction() as tx:
        tx.insert_invoice(
            attrs.evolve(
                invoice(_guid(50), created_at=T0 + 11, status=Status.PAID),
                paid_amount=BIG,
                vs_currency="usd",
            )
        )
        [*_, paid] = [
            r for r in tx.invoice_stats(OWNER, start=T0, end=T0 + DAY) if r.status is Status.PAID
        ]
    assert (paid.invoices, paid.paid) == (2, BIG + BIG)
