"""The payment links' statements (``paycore.storage.protocols.links``), mixed into ``SqlTx``:
a use is one ``UPDATE .. WHERE`` the limits allow, so the check and the count are one
step.
"""

from __future__ import annotations

from sqlalchemy import case, func, or_, select, update

from paycore.links.records import LinkUse, PaymentLink

from .rows import link_from_row, link_row
from .statements import SqlTxBase
from .tables import payment_links


class LinkStatements(SqlTxBase):
    """The payment-link methods of ``StorageTx``, on the transaction's connection."""

    def insert_payment_link(self, link: PaymentLink) -> None:
        if not self._insert_new(payment_links, link_row(link), ["id"]):
            raise ValueError(f"payment link {link.id} already exists")

    def get_payment_link(self, link_id: str) -> PaymentLink | None:
        row = self._one(select(payment_links).where(payment_links.c.id == link_id))
        return None if row is None else link_from_row(row)

    def list_payment_links(
        self, owner: str, *, offset: int = 0, limit: int = 50
    ) -> tuple[list[PaymentLink], int]:
        p = payment_links.c
        query = (
            select(payment_links)
            .where(p.owner == owner)
            .order_by(p.created_at.desc(), p.id.desc())
            .offset(offset)
            .limit(limit)
        )
        items = [link_from_row(r) for r in self._all(query)]
        return items, self._count(payment_links, p.owner == owner)

    def disable_payment_link(self, link_id: str, owner: str, now: int) -> PaymentLink | None:
        p = payment_links.c
        row = self._c.execute(
            update(payment_links)
            .where(p.id == link_id, p.owner == owner)
            .values(disabled_at=func.coalesce(p.disabled_at, now))
            .returning(*payment_links.c)
        ).first()
        return None if row is None else link_from_row(row._mapping)

    def use_payment_link(
        self, link_id: str, now: int, *, rate_limit: int, rate_window: int
    ) -> tuple[LinkUse, PaymentLink | None]:
        """One ``UPDATE .. WHERE <every condition> RETURNING``: the check and the count are
        one statement, and on PostgreSQL the row lock queues concurrent uses behind it, each
        re-checking the conditions on the row as the previous one left it."""
        p = payment_links.c
        new_window = p.window_start + rate_window <= now
        used = self._c.execute(
            update(payment_links)
            .where(
                p.id == link_id,
                p.disabled_at.is_(None),
                or_(p.expires_at.is_(None), p.expires_at > now),
                or_(p.max_uses.is_(None), p.uses < p.max_uses),
                or_(new_window, p.window_opens < rate_limit),
            )
            .values(
                uses=p.uses + 1,
                window_start=case((new_window, now), else_=p.window_start),
                window_opens=case((new_window, 1), else_=p.window_opens + 1),
            )
            .returning(*payment_links.c)
        ).first()
        if used is not None:
            return LinkUse.OPENED, link_from_row(used._mapping)
        row = self._one(select(payment_links).where(p.id == link_id))
        if row is None:
            return LinkUse.UNKNOWN, None
        link = link_from_row(row)
        if link.disabled_at is not None:
            return LinkUse.DISABLED, link
        if link.expires_at is not None and now >= link.expires_at:
            return LinkUse.EXPIRED, link
        if link.max_uses is not None and link.uses >= link.max_uses:
            return LinkUse.USED_UP, link
        return LinkUse.BUSY, link
