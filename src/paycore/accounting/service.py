"""``Gateway.accounting``: an owner's records over a time range, read in keyset batches.

Each batch is one short storage transaction of ``export_batch`` rows, ordered so that the
next batch starts strictly after the last row of this one: an export of any size holds one
batch in memory and no lock between batches, and no row is written twice or skipped. It is
not one snapshot: a payment recorded while the export runs may or may not be in it (ask
for a range that has ended, ``to`` in the past, for figures that cannot move). Invoices
are exported as they stand when their batch is read.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence

from ..config import Settings
from ..domain.records import Transaction, TxType
from ..errors import InvalidInput, StreamAborted
from ..ops.redaction import redact
from ..storage import Storage
from ..storage.contract import TransferPlace
from ..storage.protocols.refunds import Refunds
from .export import FORMATS, RECORD_NAMES, RECORDS, Row, csv_header, encode, invoice_row
from .export import transfer_row as _transfer_row

log = logging.getLogger("paycore.accounting")


class Accounting:
    """``Gateway.accounting``: an owner's records as export rows (:meth:`rows`) or as the
    bytes GET /export streams (:meth:`export`), read from storage one batch at a time."""

    def __init__(self, storage: Storage, settings: Settings, clock: Callable[[], float]) -> None:
        self._storage = storage
        self._settings = settings
        self._clock = clock

    def rows(
        self,
        owner: str,
        *,
        start: int = 0,
        end: int | None = None,
        records: Iterable[str] = RECORDS,
    ) -> Iterator[Row]:
        """``owner``'s rows of the kinds in ``records`` (``invoice``, ``payment``,
        ``refund``, ``withdrawal``; plurals too) whose time is in ``[start, end)``, kind by
        kind in that order, each oldest first. The arguments are checked at once; rows are
        read as they are iterated, one batch at a time."""
        kinds = _kinds(records)
        _check_range(start, end)
        return self._rows(owner, start, end, kinds)

    def export(
        self,
        owner: str,
        *,
        start: int = 0,
        end: int | None = None,
        fmt: str = "csv",
        records: Iterable[str] = RECORDS,
    ) -> Iterator[bytes]:
        """:meth:`rows` encoded as ``fmt`` (``csv``, with a header line first, or
        ``jsonl``), one chunk of bytes per batch: what GET /export streams."""
        if fmt not in FORMATS:
            raise InvalidInput("format", f"must be one of {', '.join(FORMATS)}")
        rows = self.rows(owner, start=start, end=end, records=records)
        return self._chunks(rows, fmt)

    def _chunks(self, rows: Iterator[Row], fmt: str) -> Iterator[bytes]:
        """One chunk per ``export_batch`` rows; CSV's header goes with the first, so the
        first chunk is only ready once storage has answered (GET /export waits for it
        before it answers, and a storage outage is then a 503, not a broken file)."""
        pending = csv_header() if fmt == "csv" else b""
        batch: list[Row] = []
        size = self._settings.export_batch
        started = False
        try:
            for row in rows:
                batch.append(row)
                if len(batch) >= size:
                    yield pending + encode(batch, fmt)
                    pending, batch, started = b"", [], True
        except Exception as exc:
            # Once the answer has started, the stream ends without its last chunk, which
            # the client sees as a broken transfer, never as a short file that looks whole
            # (``StreamAborted``, as for every streamed answer). Before that, the error is
            # the answer's own (a 503, a 400) and is reported there.
            if not started:
                raise
            first = redact(str(exc).strip().split("\n", 1)[0])
            log.error("accounting export cut short: %s: %s", type(exc).__name__, first)
            raise StreamAborted(type(exc).__name__) from exc
        if batch or pending:
            yield pending + encode(batch, fmt)

    def _rows(self, owner: str, start: int, end: int | None, kinds: Sequence[str]) -> Iterator[Row]:
        for kind in kinds:
            if kind == "invoice":
                yield from self._invoice_rows(owner, start, end)
            elif kind == "payment":
                yield from self._transfer_rows(owner, TxType.DEPOSIT, start, end)
            elif kind == "refund":
                yield from self.refund_rows(owner, start, end)
            else:
                yield from self._transfer_rows(owner, TxType.WITHDRAW, start, end)

    def _invoice_rows(self, owner: str, start: int, end: int | None) -> Iterator[Row]:
        after: tuple[int, str] | None = None
        size = self._settings.export_batch
        while True:
            with self._storage.transaction() as tx:
                batch = tx.export_invoices(owner, start=start, end=end, after=after, limit=size)
            yield from (invoice_row(invoice) for invoice in batch)
            if len(batch) < size:
                return
            after = (batch[-1].created_at, batch[-1].guid)

    def _transfer_rows(
        self, owner: str, kind: TxType, start: int, end: int | None
    ) -> Iterator[Row]:
        after: TransferPlace | None = None
        size = self._settings.export_batch
        while True:
            with self._storage.transaction() as tx:
                batch = tx.export_transactions(
                    owner, kind, start=start, end=end, after=after, limit=size
                )
                ids = self._refund_ids(tx, batch) if kind is TxType.REFUND else {}
            yield from (_transfer_row(r, ids.get((r.tx_hash, r.log_index))) for r in batch)
            if len(batch) < size:
                return
            last = batch[-1]
            after = (last.timestamp, last.chain_id, last.tx_hash, last.log_index, last.token)

    @staticmethod
    def _refund_ids(tx: Refunds, batch: Sequence[Transaction]) -> dict[tuple[str, int], str]:
        """The id of the refund each of these refund transactions paid, by (tx_hash,
        log_index): one read of the batch's invoices' refunds."""
        guids = sorted({r.guid for r in batch if r.guid is not None})
        refunds = tx.refunds_of(guids) if guids else []
        return {
            (r.tx_hash, r.log_index): r.id
            for r in refunds
            if r.tx_hash is not None and r.log_index is not None
        }

    def refund_rows(self, owner: str, start: int, end: int | None) -> Iterator[Row]:
        """The ``refund`` section: each refund paid out of ``owner``'s wallet whose block
        time is in ``[start, end)`` -- the watcher records its withdrawal as a ``refund``
        transaction -- with the refund's id in ``reference``, valued at the refund's rate."""
        return self._transfer_rows(owner, TxType.REFUND, start, end)


def _kinds(records: Iterable[str]) -> list[str]:
    """The kinds asked for, in export order; plurals accepted, each at most once."""
    wanted: set[str] = set()
    for name in records:
        kind = RECORD_NAMES.get(name, name)
        if kind not in RECORDS:
            names = ", ".join(RECORD_NAMES)
            raise InvalidInput("records", f"must be some of {names}")
        wanted.add(kind)
    if not wanted:
        raise InvalidInput("records", "must name at least one kind of record")
    return [kind for kind in RECORDS if kind in wanted]


def _check_range(start: int, end: int | None) -> None:
    if start < 0:
        raise InvalidInput("from", "must not be negative")
    if end is not None and end <= start:
        raise InvalidInput("to", "must be after from")
