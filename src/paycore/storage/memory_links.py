"""The memory store's payment links (``paycore.storage.protocols.links``), mixed into its
transaction class. A link's rate window is part of its row (``memory_rows._LinkRow``).
"""

from __future__ import annotations

import copy

import attrs

from ..links.records import LinkUse, PaymentLink
from .memory_rows import MemoryTxBase, _LinkRow, _page


def _detached_link(link: PaymentLink) -> PaymentLink:
    return attrs.evolve(link, data=copy.deepcopy(link.data))


class MemoryLinks(MemoryTxBase):
    """The payment-link methods over the store's ``payment_links`` table."""

    def insert_payment_link(self, link: PaymentLink) -> None:
        if link.id in self._t.payment_links:
            raise ValueError(f"payment link {link.id} already exists")
        self._t.payment_links[link.id] = _LinkRow(_detached_link(link))

    def get_payment_link(self, link_id: str) -> PaymentLink | None:
        row = self._t.payment_links.get(link_id)
        return None if row is None else _detached_link(row.link)

    def list_payment_links(
        self, owner: str, *, offset: int = 0, limit: int = 50
    ) -> tuple[list[PaymentLink], int]:
        found = [row.link for row in self._t.payment_links.values() if row.link.owner == owner]
        found.sort(key=lambda link: (link.created_at, link.id), reverse=True)
        return [_detached_link(link) for link in _page(found, offset, limit)], len(found)

    def disable_payment_link(self, link_id: str, owner: str, now: int) -> PaymentLink | None:
        row = self._t.payment_links.get(link_id)
        if row is None or row.link.owner != owner:
            return None
        if row.link.disabled_at is None:
            row = attrs.evolve(row, link=attrs.evolve(row.link, disabled_at=now))
            self._t.payment_links[link_id] = row
        return _detached_link(row.link)

    def use_payment_link(
        self, link_id: str, now: int, *, rate_limit: int, rate_window: int
    ) -> tuple[LinkUse, PaymentLink | None]:
        row = self._t.payment_links.get(link_id)
        if row is None:
            return LinkUse.UNKNOWN, None
        link = row.link
        new_window = row.window_start + rate_window <= now
        if link.disabled_at is not None:
            outcome = LinkUse.DISABLED
        elif link.expires_at is not None and now >= link.expires_at:
            outcome = LinkUse.EXPIRED
        elif link.max_uses is not None and link.uses >= link.max_uses:
            outcome = LinkUse.USED_UP
        elif not new_window and row.window_opens >= rate_limit:
            outcome = LinkUse.BUSY
        else:
            used = attrs.evolve(link, uses=link.uses + 1)
            self._t.payment_links[link_id] = _LinkRow(
                used,
                now if new_window else row.window_start,
                1 if new_window else row.window_opens + 1,
            )
            return LinkUse.OPENED, _detached_link(used)
        return outcome, _detached_link(link)
