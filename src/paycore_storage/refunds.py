"""The refund rows' statements (``paycore.storage``: refunds), mixed into ``SqlTx``.

Kept apart from ``sql.py`` because refunds touch no other table: the gateway locks the
refund's invoice row first (``get_invoice(..., for_update=True)``), so these statements need
no locking of their own, except ``settle_refund``, a compare-and-set on ``status`` in one
``UPDATE .. WHERE status = 'pending'``: its row count says who won.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from paycore.domain.records import Refund, RefundStatus

from .rows import refund_from_row, refund_row
from .tables import refunds

#: Values bound in one ``IN (...)``, as in ``sql.py``: well below SQLite's host-parameter cap.
_IN_CHUNK = 500
_PENDING = RefundStatus.PENDING.value


class RefundStatements:
    """``insert_refund``, ``get_refund``, ``refunds_of``, ``pending_refunds`` and
    ``settle_refund`` of ``StorageTx``, on the connection of the transaction they run in."""

    @property
    def _c(self) -> Connection:
        raise NotImplementedError

    def insert_refund(self, refund: Refund) -> None:
        insert_into = pg_insert if self._c.dialect.name == "postgresql" else sqlite_insert
        stmt = (
            insert_into(refunds)
            .values(refund_row(refund))
            .on_conflict_do_nothing(index_elements=["id"])
            .returning(refunds.c.id)
        )
        if self._c.execute(stmt).first() is None:
            raise ValueError(f"refund {refund.id} already exists")

    def get_refund(self, refund_id: str) -> Refund | None:
        row = self._c.execute(select(refunds).where(refunds.c.id == refund_id)).first()
        return None if row is None else refund_from_row(row._mapping)

    def refunds_of(self, guids: Sequence[str]) -> list[Refund]:
        wanted = sorted(set(guids))
        found: list[Refund] = []
        for start in range(0, len(wanted), _IN_CHUNK):
            query = (
                select(refunds)
                .where(refunds.c.guid.in_(wanted[start : start + _IN_CHUNK]))
                .order_by(refunds.c.guid, refunds.c.seq)
            )
            found += [refund_from_row(row._mapping) for row in self._c.execute(query)]
        return found

    def pending_refunds(self, chain_id: int, owners: Sequence[str]) -> list[Refund]:
        wanted = sorted(set(owners))
        found: list[tuple[int, Refund]] = []
        for start in range(0, len(wanted), _IN_CHUNK):
            query = select(refunds).where(
                refunds.c.chain_id == chain_id,
                refunds.c.status == _PENDING,
                refunds.c.owner.in_(wanted[start : start + _IN_CHUNK]),
            )
            found += [(row.seq, refund_from_row(row._mapping)) for row in self._c.execute(query)]
        return [refund for _seq, refund in sorted(found, key=lambda item: item[0])]

    def settle_refund(self, refund: Refund) -> bool:
        result = self._c.execute(
            update(refunds)
            .where(refunds.c.id == refund.id, refunds.c.status == _PENDING)
            .values(
                status=refund.status.value,
                tx_hash=refund.tx_hash,
                log_index=refund.log_index,
                settled_at=refund.settled_at,
            )
        )
        return result.rowcount > 0
