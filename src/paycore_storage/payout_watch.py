"""The payout watch list's statements (``paycore.storage.payout_watch``), mixed into
``SqlTx``. Adding a kept hash again matches the primary key and is skipped, so two
confirms of the same pending hash keep one entry."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, delete, insert, select

from .tables import payout_watch

_W = payout_watch.c


class PayoutWatchStatements:
    """``watch_payout_hashes``, ``watched_payout_hashes`` and ``unwatch_payout_hash``."""

    @property
    def _c(self) -> Connection:
        raise NotImplementedError

    def watch_payout_hashes(self, batch_id: str, tx_hashes: Sequence[str], now: int) -> None:
        for tx_hash in dict.fromkeys(tx_hashes):
            exists = self._c.execute(
                select(_W.tx_hash).where(_W.batch_id == batch_id, _W.tx_hash == tx_hash)
            ).first()
            if exists is None:
                self._c.execute(
                    insert(payout_watch).values(batch_id=batch_id, tx_hash=tx_hash, added_at=now)
                )

    def watched_payout_hashes(self, limit: int) -> list[tuple[str, str]]:
        rows = self._c.execute(
            select(_W.batch_id, _W.tx_hash)
            .order_by(_W.added_at, _W.batch_id, _W.tx_hash)
            .limit(limit)
        )
        return [(r.batch_id, r.tx_hash) for r in rows]

    def unwatch_payout_hash(self, batch_id: str, tx_hash: str) -> None:
        self._c.execute(delete(payout_watch).where(_W.batch_id == batch_id, _W.tx_hash == tx_hash))
