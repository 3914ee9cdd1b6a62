"""The payment links' part of the storage contract (``paycore.links``).

What storage owes: ``insert_payment_link`` refuses a duplicate id; ``use_payment_link`` is
one atomic step -- the check of the link's limits (disabled, expired, ``max_uses``, its rate
window) and the count of the use -- so that of concurrent uses past a limit exactly as many
succeed as the limit leaves. The caller makes the invoice in the same transaction, so a
failure there takes the use back.
"""

from __future__ import annotations

from typing import Protocol

from ...links.records import LinkUse, PaymentLink


class PaymentLinks(Protocol):
    """``StorageTx``'s payment links: create, read, list, disable and use."""

    def insert_payment_link(self, link: PaymentLink) -> None:
        """Store a new link; a duplicate id raises ``ValueError``."""

    def get_payment_link(self, link_id: str) -> PaymentLink | None:
        """The link ``link_id``, or ``None``."""

    def list_payment_links(
        self, owner: str, *, offset: int = 0, limit: int = 50
    ) -> tuple[list[PaymentLink], int]:
        """A page of ``owner``'s links, newest first (created_at, then id), and the count."""

    def disable_payment_link(self, link_id: str, owner: str, now: int) -> PaymentLink | None:
        """Disable ``owner``'s link (``disabled_at = now``, kept if already set) and return
        it; ``None`` when ``owner`` has no such link."""

    def use_payment_link(
        self, link_id: str, now: int, *, rate_limit: int, rate_window: int
    ) -> tuple[LinkUse, PaymentLink | None]:
        """Count one use of the link, atomically: only while it is not disabled, not expired
        (``now < expires_at``), below ``max_uses``, and its rate window allows it -- at most
        ``rate_limit`` uses in a window of ``rate_window`` seconds that starts at the first
        use after the previous window ended. Returns ``OPENED`` and the link as counted, or
        why not (and the link, ``None`` when unknown), changing nothing then. Of concurrent
        uses past the limit, exactly ``max_uses - uses`` succeed: the check and the count
        are one step (PostgreSQL: the row lock of one ``UPDATE``). The caller makes the
        invoice in the same transaction, so a failure there takes the use back."""
