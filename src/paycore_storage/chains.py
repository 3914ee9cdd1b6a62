"""The chain cursors' and leases' statements (``paycore.storage.protocols.chains``), mixed
into ``SqlTx``: ``claim_chain`` is an upsert whose ``DO UPDATE .. WHERE`` only takes a free,
lapsed or own lease; ``advance_chain`` is ``UPDATE .. WHERE holder = :holder``.
"""

from __future__ import annotations

from sqlalchemy import func, or_, select, update

from paycore.chains.records import ChainCursor

from .statements import _OPEN_STATUSES, SqlTxBase
from .tables import chain_cursors, invoices


class ChainStatements(SqlTxBase):
    """The chain watcher methods of ``StorageTx``, on the transaction's connection."""

    def claim_chain(
        self, chain_id: int, holder: str, now: int, lease_ms: int
    ) -> ChainCursor | None:
        first = self._insert(chain_cursors).values(
            chain_id=chain_id, holder=holder, lease_until=now + lease_ms
        )
        claimed = first.on_conflict_do_update(
            index_elements=["chain_id"],
            set_={"holder": holder, "lease_until": now + lease_ms},
            where=or_(
                chain_cursors.c.holder.is_(None),
                chain_cursors.c.holder == holder,
                chain_cursors.c.lease_until <= now,
            ),
        ).returning(*chain_cursors.c)
        row = self._c.execute(claimed).first()
        return None if row is None else ChainCursor(**row._mapping)

    def advance_chain(
        self,
        chain_id: int,
        holder: str,
        block_number: int,
        block_hash: str | None,
        now: int,
        lease_ms: int,
    ) -> bool:
        result = self._c.execute(
            update(chain_cursors)
            .where(chain_cursors.c.chain_id == chain_id, chain_cursors.c.holder == holder)
            .values(block_number=block_number, block_hash=block_hash, lease_until=now + lease_ms)
        )
        return result.rowcount == 1

    def release_chain(self, chain_id: int, holder: str) -> None:
        self._c.execute(
            update(chain_cursors)
            .where(chain_cursors.c.chain_id == chain_id, chain_cursors.c.holder == holder)
            .values(holder=None, lease_until=0)
        )

    def get_chain_cursor(self, chain_id: int) -> ChainCursor | None:
        row = self._one(select(chain_cursors).where(chain_cursors.c.chain_id == chain_id))
        return None if row is None else ChainCursor(**row)

    def watched_addresses(self, chain_id: int, deadline_after: int) -> list[str]:
        query = (
            select(invoices.c.address)
            .where(
                invoices.c.chain_id == chain_id,
                or_(
                    invoices.c.status.in_(_OPEN_STATUSES),
                    invoices.c.deadline >= deadline_after,
                ),
            )
            .distinct()
            .order_by(invoices.c.address)
        )
        return list(self._c.execute(query).scalars())

    def earliest_watched(self, chain_id: int, deadline_after: int) -> int | None:
        query = select(func.min(invoices.c.created_at)).where(
            invoices.c.chain_id == chain_id,
            or_(invoices.c.status.in_(_OPEN_STATUSES), invoices.c.deadline >= deadline_after),
        )
        found = self._c.execute(query).scalar()
        return None if found is None else int(found)
