"""paycore's tables in the shop's own SQLite file, as docs/embedding.md describes it: the file
is switched to WAL (the shop's readers never wait for paycore's writer), each side's short
write transactions take turns, and the one way to hang -- calling paycore while the shop's
own write transaction holds the file's lock -- ends as a storage outage after the busy
timeout, not as a half-written invoice."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import paycore_storage.engine
from paycore import NATIVE, Gateway, Settings
from paycore.errors import StorageUnavailable
from paycore_storage import SqlStorage

OWNER = "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359"
FIELDS = {
    "value": "5",
    "chainId": 1,
    "description": "order 1",
    "acceptedTokens": [f"1:{NATIVE}"],
    "address": "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
}


@pytest.fixture
def shop_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(paycore_storage.engine, "SQLITE_BUSY_TIMEOUT", 0.5)
    path = tmp_path / "shop.sqlite3"
    with sqlite3.connect(path) as shop:
        shop.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, invoice_guid TEXT)")
    return path


def gateway_on(path: Path) -> Gateway:
    settings = Settings(database_url=f"sqlite:///{path}", prices={f"1:{NATIVE}": "3000"})
    return Gateway(settings, storage=SqlStorage(settings.database_url), entry_points=False)


def test_invoice_first_then_the_shops_order_share_one_file(shop_file: Path) -> None:
    gateway = gateway_on(shop_file)
    shop = sqlite3.connect(shop_file, timeout=5)
    try:
        invoice = gateway.create_invoice(OWNER, FIELDS)
        assert shop.execute("PRAGMA journal_mode").fetchone() == ("wal",)  # paycore's doing
        with shop:
            shop.execute("INSERT INTO orders (invoice_guid) VALUES (?)", (invoice.guid,))
        # A reader of the shop's mid-transaction does not stop paycore's writer (WAL).
        shop.execute("BEGIN")
        assert shop.execute("SELECT count(*) FROM orders").fetchone() == (1,)
        assert gateway.create_invoice(OWNER, FIELDS).guid != invoice.guid
        shop.execute("COMMIT")
    finally:
        shop.close()
        gateway.close()


def test_calling_paycore_inside_the_shops_write_transaction_times_out(shop_file: Path) -> None:
    gateway = gateway_on(shop_file)
    shop = sqlite3.connect(shop_file, timeout=5)
    try:
        assert gateway.list_invoices(owner=OWNER) == []  # paycore's tables are there
        shop.execute("BEGIN")
        shop.execute("INSERT INTO orders (invoice_guid) VALUES ('pending')")
        with pytest.raises(StorageUnavailable):  # "database is locked", after busy_timeout
            gateway.create_invoice(OWNER, FIELDS)
        shop.execute("ROLLBACK")
        assert gateway.list_invoices(owner=OWNER) == []  # nothing half-written
        assert gateway.create_invoice(OWNER, FIELDS).owner == OWNER
    finally:
        shop.close()
        gateway.close()
