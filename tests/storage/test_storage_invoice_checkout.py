"""An invoice's return links (redirectUrl, cancelUrl, redirectAutomatically) and its checkout
page survive storage on every backend, and revision 0012 adds their column to a database
that already holds invoices."""

from __future__ import annotations

import attrs
import pytest
from revisions import downgrade
from sqlalchemy import inspect
from sqlalchemy.engine import URL

from paycore.storage import Storage
from paycore.testing.storage_records import insert_before_0012, invoice
from paycore_storage import SqlStorage, migrate
from paycore_storage.engine import make_engine

BOTH = pytest.mark.parametrize(
    "sql_url",
    ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)],
    indirect=True,
)


def test_return_links_round_trip(storage: Storage) -> None:
    linked = attrs.evolve(
        invoice(),
        redirect_url="https://shop.example/thanks?order=42",
        cancel_url="https://shop.example/cart",
        redirect_automatically=True,
    )
    plain = invoice("00000000-0000-4000-8000-000000000002")
    with storage.transaction() as tx:
        tx.insert_invoice(linked)
        tx.insert_invoice(plain)
    with storage.transaction() as tx:
        assert tx.get_invoice(linked.guid) == linked
        got = tx.get_invoice(plain.guid)
    assert got == plain and got is not None and got.redirect_url is None


def test_the_checkout_page_fixed_at_creation_round_trips(storage: Storage) -> None:
    """The page an invoice's paymentUrl was built on is kept with it (a key of the same
    checkout column), so a worker reading it back sends the buyer the same link."""
    kept = attrs.evolve(invoice(), checkout_url="https://shop.example/pay/checkout")
    with storage.transaction() as tx:
        tx.insert_invoice(kept)
    with storage.transaction() as tx:
        got = tx.get_invoice(kept.guid)
    assert got == kept and got is not None
    assert got.checkout_url == "https://shop.example/pay/checkout"


def columns(url: URL) -> set[str]:
    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            return {c["name"] for c in inspect(connection).get_columns("paycore_invoices")}
    finally:
        engine.dispose()


@BOTH
def test_0012_adds_the_checkout_column_and_keeps_the_rows(sql_url: URL) -> None:
    migrate(sql_url, "0011")
    insert_before_0012(sql_url, invoice())
    assert "checkout" not in columns(sql_url)
    migrate(sql_url, "0012")
    assert "checkout" in columns(sql_url)
    migrate(sql_url)  # today's store reads today's columns (0019 added search_text)
    store = SqlStorage(sql_url, auto_migrate=False)
    try:
        with store.transaction() as tx:
            assert tx.get_invoice(invoice().guid) == invoice()
    finally:
        store.close()
    downgrade(sql_url, "0011")
    assert "checkout" not in columns(sql_url)
