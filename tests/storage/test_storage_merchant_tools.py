"""The merchant tools on the SQL store only: transfers recorded before the rate columns, and
the export's memory held to one batch. Their contract on every backend is part of the shipped
suite (``paycore.testing.storage_contract.merchant_tools``)."""

from __future__ import annotations

import tracemalloc
from decimal import Decimal

import pytest
from sqlalchemy import text
from sqlalchemy.engine import URL

from paycore.domain.records import TxType
from paycore.testing.storage_contract.merchant_tools import guid
from paycore.testing.storage_records import OWNER, invoice, transaction
from paycore_storage import SqlStorage, migrate
from paycore_storage.engine import make_engine

SQL = pytest.mark.parametrize(
    "sql_url",
    ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)],
    indirect=True,
)


@SQL
def test_0011_leaves_older_transfers_without_a_rate(sql_url: URL) -> None:
    """Rows recorded before the rate columns come through with no valuation (none is
    invented from vsValue / amount) and list and export as before."""
    migrate(sql_url, "0010")
    engine = make_engine(sql_url)
    with engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO paycore_transactions (chain_id, tx_hash, log_index, token, type,"
                " from_address, amount, vs_value, timestamp, owner, guid, counted, reorged)"
                " VALUES (1, '0xaa', 0, '0xtoken', 'deposit', '0xfrom', '2', '4', 5, :owner,"
                " 'g', :yes, :no)"
            ),
            {"owner": OWNER, "yes": True, "no": False},
        )
    engine.dispose()
    migrate(sql_url)
    store = SqlStorage(sql_url)
    try:
        with store.transaction() as tx:
            [row] = tx.export_transactions(
                OWNER, TxType.DEPOSIT, start=0, end=None, after=None, limit=10
            )
    finally:
        store.close()
    assert (row.tx_hash, row.vs_value, row.valuation) == ("0xaa", Decimal(4), None)


def _export_peak(url: URL, rows: int) -> tuple[int, int]:
    """(peak bytes allocated while exporting ``rows`` invoices and as many payments, bytes
    exported), on a database filled beforehand."""
    from paycore import Gateway, Settings

    store = SqlStorage(url)
    try:
        with store.transaction() as tx:
            for n in range(rows):
                tx.insert_invoice(invoice(guid(n), created_at=1_000 + n))
            tx.insert_transactions(
                [transaction(f"0x{n:064x}", timestamp=1_000 + n) for n in range(rows)]
            )
        gw = Gateway(
            Settings(database_url="memory://", export_batch=100), storage=store, entry_points=False
        )
        tracemalloc.start()
        try:
            size = sum(len(chunk) for chunk in gw.accounting.export(OWNER))
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        return peak, size
    finally:
        store.close()


@SQL
def test_the_export_holds_one_batch_whatever_the_range(sql_url: URL) -> None:
    """Exporting five times the rows moves five times the bytes, but the memory it takes
    at its peak stays that of one batch (within half again, for allocator noise)."""
    small_peak, small_size = _export_peak(sql_url, 300)
    engine = make_engine(sql_url)
    with engine.begin() as connection:
        connection.execute(text("DELETE FROM paycore_invoices"))
        connection.execute(text("DELETE FROM paycore_transactions"))
    engine.dispose()
    big_peak, big_size = _export_peak(sql_url, 1500)
    assert big_size > 4 * small_size
    assert big_peak < 1.5 * small_peak, (small_peak, big_peak)
