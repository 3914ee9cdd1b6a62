"""The export's columns, one row per record, and the two encodings of a batch of rows.

Every kind of record is a row of the same columns, told apart by ``record``, so one CSV
file loads into one sheet or table; a column that does not apply to a kind is empty (null
in JSON lines). Money is a decimal string exactly as stored, never a float: a spreadsheet
may round what it shows, the file does not. What each column holds is documented in
docs/interface.md (§GET /export).

The four kinds come in this order, each oldest first: ``invoice`` (by creation time),
``payment`` (every deposit attributed to an invoice, by block time; ``counted`` says
whether it counts towards ``paid_amount``), ``refund`` (every refund the watcher saw paid
out of the owner's wallet, by block time) and ``withdrawal`` (the other withdrawals, by
block time).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from ..domain.money import to_text
from ..domain.records import Invoice, Transaction, TxType

#: The kinds of record, in the order an export writes them.
RECORDS = ("invoice", "payment", "refund", "withdrawal")
#: How a client names them in ``records=`` (the plural, as in "export the payments").
RECORD_NAMES = {"invoices": "invoice", "payments": "payment", "refunds": "refund",
                "withdrawals": "withdrawal"}  # fmt: skip
FORMATS = {"csv": "text/csv; charset=utf-8", "jsonl": "application/x-ndjson"}

COLUMNS = (
    "record",
    "time",
    "time_utc",
    "guid",
    "reference",
    "status",
    "description",
    "vs_currency",
    "value",
    "paid_amount",
    "deadline",
    "chain_id",
    "token",
    "address",
    "amount",
    "fiat_value",
    "rate",
    "rate_source",
    "rate_time",
    "counted",
    "tx_hash",
    "log_index",
    "block_number",
    "block_time",
    "from",
    "to",
)

#: Free-text columns a spreadsheet could take for a formula when they start with one of
#: ``=+-@`` (or a tab, carriage return or line feed: a spreadsheet drops a leading line
#: break and reads what follows): CSV prefixes those with ``'``.
_TEXT_COLUMNS = ("description", "rate_source", "reference")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n")

Row = dict[str, Any]


def utc(seconds: int) -> str:
    """Unix seconds as ISO 8601 in UTC (``2024-01-31T12:00:00Z``), for people reading it."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _money(value: Decimal | None) -> str | None:
    return None if value is None else to_text(value)


def invoice_row(invoice: Invoice) -> Row:
    """An invoice as it stands now: status, value and what has been paid so far."""
    return {
        "record": "invoice",
        "time": invoice.created_at,
        "time_utc": utc(invoice.created_at),
        "guid": invoice.guid,
        "status": invoice.status.value,
        "description": invoice.description,
        "vs_currency": invoice.vs_currency,
        "value": to_text(invoice.value),
        "paid_amount": to_text(invoice.paid_amount),
        "deadline": invoice.deadline,
        "chain_id": invoice.chain_id,
        "token": invoice.token,
        "address": invoice.address,
    }


#: The export's name of each kind of transaction row.
_RECORD_OF = {TxType.DEPOSIT: "payment", TxType.REFUND: "refund", TxType.WITHDRAW: "withdrawal"}


def transfer_row(record: Transaction, reference: str | None = None) -> Row:
    """A deposit (``payment``), a refund paid out, or a withdrawal: the transfer, valued
    when it was recorded (a refund at the refund's own rate, ``refund:payment`` or
    ``refund:now``); ``reference`` is a refund's id.

    ``fiat_value`` is the vsValue stored then; ``rate``, ``rate_source`` and ``rate_time``
    are the price it was computed at, empty for a row recorded without one (an unpriced
    deposit outside ``acceptedTokens``, or a row older than the rate columns)."""
    valuation = record.valuation
    row: Row = {
        "record": _RECORD_OF[record.type],
        "time": record.timestamp,
        "time_utc": utc(record.timestamp),
        "guid": record.guid,
        "reference": reference,
        "chain_id": record.chain_id,
        "token": f"{record.chain_id}:{record.token}",
        "amount": to_text(record.amount),
        "fiat_value": to_text(record.vs_value),
        "tx_hash": record.tx_hash,
        "log_index": record.log_index,
        "block_number": record.block_number,
        "block_time": record.timestamp,
        "from": record.from_,
        "to": record.to,
    }
    if record.type is TxType.DEPOSIT:
        row["counted"] = record.counted
    if valuation is not None:
        row["vs_currency"] = valuation.vs_currency
        row["rate"] = _money(valuation.rate)
        row["rate_source"] = valuation.source
        row["rate_time"] = valuation.as_of
    return row


def csv_header() -> bytes:
    out = io.StringIO()
    csv.writer(out, lineterminator="\r\n").writerow(COLUMNS)
    return out.getvalue().encode("utf-8")


def _csv_cell(column: str, value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)
    if column in _TEXT_COLUMNS and text.startswith(_FORMULA_START):
        return "'" + text
    return text


def csv_rows(rows: Iterable[Mapping[str, Any]]) -> bytes:
    """Rows as CSV (RFC 4180: CRLF line ends, quoted where needed), in ``COLUMNS`` order."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    for row in rows:
        writer.writerow([_csv_cell(c, row.get(c)) for c in COLUMNS])
    return out.getvalue().encode("utf-8")


def jsonl_rows(rows: Iterable[Mapping[str, Any]]) -> bytes:
    """Rows as JSON lines: one object per line, every column present (null when empty)."""
    lines = [
        json.dumps({c: row.get(c) for c in COLUMNS}, separators=(",", ":"), ensure_ascii=False)
        for row in rows
    ]
    return "".join(line + "\n" for line in lines).encode("utf-8")


def encode(rows: Sequence[Mapping[str, Any]], fmt: str) -> bytes:
    return csv_rows(rows) if fmt == "csv" else jsonl_rows(rows)
