"""The payout batches' statements (``paycore.storage.payouts``), mixed into ``SqlTx``.

Kept apart from ``sql.py`` because payouts touch no other table. ``settle_payouts`` is one
``UPDATE .. WHERE status = 'pending' RETURNING``: the row locks make a second confirm of
the same call wait and then match nothing, so each row settles (and is announced) once.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from sqlalchemy import Connection, RowMapping, insert, select, update

from paycore.payouts.records import Payout, PayoutBatch, PayoutStatus

from .tables import payout_batches, payouts

_B = payout_batches.c
_P = payouts.c


def _payout_row(p: Payout) -> dict[str, Any]:
    return {
        "batch_id": p.batch_id,
        "line": p.line,
        "to_address": p.to,
        "token": p.token,
        "amount": p.amount,
        "value": str(p.value),
        "reference": p.reference,
        "call": p.call,
        "status": p.status.value,
        "tx_hash": p.tx_hash,
        "updated_at": p.updated_at,
    }


def _payout(row: RowMapping) -> Payout:
    return Payout(
        batch_id=row["batch_id"],
        line=int(row["line"]),
        to=row["to_address"],
        token=row["token"],
        amount=Decimal(row["amount"]),
        value=int(row["value"]),
        reference=row["reference"],
        call=int(row["call"]),
        status=PayoutStatus(row["status"]),
        tx_hash=row["tx_hash"],
        updated_at=int(row["updated_at"]),
    )


class PayoutStatements:
    """``insert_payout_batch``, ``get_payout_batch``, ``payouts_of`` and ``settle_payouts``
    of ``StorageTx``, on the connection of the transaction they run in."""

    @property
    def _c(self) -> Connection:
        raise NotImplementedError

    def insert_payout_batch(self, batch: PayoutBatch, rows: Sequence[Payout]) -> None:
        if self.get_payout_batch(batch.id) is not None:
            raise ValueError(f"payout batch {batch.id} already exists")
        self._c.execute(
            insert(payout_batches).values(
                id=batch.id,
                owner=batch.owner,
                chain_id=batch.chain_id,
                contract=batch.contract,
                calls=" ".join(batch.calls),
                created_at=batch.created_at,
            )
        )
        if rows:
            self._c.execute(insert(payouts), [_payout_row(p) for p in rows])

    def get_payout_batch(self, batch_id: str) -> PayoutBatch | None:
        row = self._c.execute(select(payout_batches).where(_B.id == batch_id)).first()
        if row is None:
            return None
        m = row._mapping
        return PayoutBatch(
            id=m["id"],
            owner=m["owner"],
            chain_id=int(m["chain_id"]),
            contract=m["contract"],
            calls=tuple(m["calls"].split()),
            created_at=int(m["created_at"]),
        )

    def payouts_of(self, batch_id: str) -> list[Payout]:
        rows = self._c.execute(select(payouts).where(_P.batch_id == batch_id).order_by(_P.line))
        return [_payout(r._mapping) for r in rows]

    def settle_payouts(
        self, batch_id: str, call: int, status: PayoutStatus, tx_hash: str, now: int
    ) -> list[Payout]:
        result = self._c.execute(
            update(payouts)
            .where(
                _P.batch_id == batch_id,
                _P.call == call,
                _P.status == PayoutStatus.PENDING.value,
            )
            .values(status=status.value, tx_hash=tx_hash, updated_at=now)
            .returning(*payouts.c)
        )
        return sorted((_payout(r._mapping) for r in result), key=lambda p: p.line)
