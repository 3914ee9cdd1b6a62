"""The detected transfers' statements (``paycore.storage``: detected transfers), mixed
into ``SqlTx``.

Kept apart from ``sql.py`` because they touch one table of their own
(``tables.detected_transfers``), which no other statement reads: a chain's rows are
replaced whole in the watcher's transaction (one DELETE by the primary key's first column,
one multi-row INSERT), and an invoice's are read by the ``(guid, block_number)`` index.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, delete, insert, select

from paycore.domain.detected import Detected

from .tables import detected_transfers

#: Values bound in one ``IN (...)``, as in ``sql.py``: well below SQLite's host-parameter cap.
_IN_CHUNK = 500
#: Rows per INSERT: 14 columns each stays under SQLite's 32766 host parameters.
_ROWS_PER_INSERT = 1000


def detected_row(found: Detected) -> dict[str, Any]:
    return {
        "chain_id": found.chain_id,
        "tx_hash": found.tx_hash,
        "log_index": found.log_index,
        "token": found.token,
        "guid": found.guid,
        "from_address": found.from_,
        "to_address": found.to,
        "amount": found.amount,
        "block_number": found.block_number,
        "block_hash": found.block_hash,
        "timestamp": found.timestamp,
        "confirmations": found.confirmations,
        "required": found.required,
        "seen_at": found.seen_at,
    }


def detected_from_row(row: Any) -> Detected:
    return Detected(
        chain_id=row["chain_id"],
        tx_hash=row["tx_hash"],
        log_index=row["log_index"],
        token=row["token"],
        from_=row["from_address"],
        to=row["to_address"],
        amount=row["amount"],
        block_number=row["block_number"],
        block_hash=row["block_hash"],
        timestamp=row["timestamp"],
        confirmations=row["confirmations"],
        required=row["required"],
        guid=row["guid"],
        seen_at=row["seen_at"],
    )


class DetectedStatements:
    """``replace_detected`` and ``detected_of`` of ``StorageTx``, on the connection of the
    transaction they run in."""

    @property
    def _c(self) -> Connection:
        raise NotImplementedError

    def replace_detected(self, chain_id: int, found: Sequence[Detected]) -> None:
        rows = list({d.key: detected_row(d) for d in found if d.chain_id == chain_id}.values())
        self._c.execute(delete(detected_transfers).where(detected_transfers.c.chain_id == chain_id))
        for start in range(0, len(rows), _ROWS_PER_INSERT):
            self._c.execute(insert(detected_transfers), rows[start : start + _ROWS_PER_INSERT])

    def detected_of(self, guids: Sequence[str]) -> list[Detected]:
        wanted = sorted(set(guids))
        table = detected_transfers
        found: list[Detected] = []
        for start in range(0, len(wanted), _IN_CHUNK):
            chunk = wanted[start : start + _IN_CHUNK]
            where = table.c.guid == chunk[0] if len(chunk) == 1 else table.c.guid.in_(chunk)
            query = (
                select(table)
                .where(where)
                .order_by(
                    table.c.guid,
                    table.c.block_number,
                    table.c.tx_hash,
                    table.c.log_index,
                    table.c.token,
                )
            )
            found += [detected_from_row(row._mapping) for row in self._c.execute(query)]
        return found
