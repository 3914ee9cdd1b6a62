"""The Gateway's lists: invoices and transactions, paged by offset or by keyset cursor,
and the unpaged invoice stream read in batches (docs/interface.md §GET /invoices,
§GET /transactions).

Every read is one short storage transaction; an invoice read here carries its refunds and
detected transfers, and one whose deadline has passed is expired first (lazy expiry), as
``Gateway.get_invoice`` does.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import attrs

from ..domain.paging import Page, page_from, read_cursor, tx_position
from ..domain.records import Invoice, Transaction
from ..errors import InvalidInput

if TYPE_CHECKING:
    from .parts import GatewayParts

INVOICE_PAGE_MAX = 50
TRANSACTION_PAGE_MAX = 200
#: Invoices one storage transaction reads for the unpaged GET /invoices stream.
INVOICE_STREAM_BATCH = 500


class InvoiceLists:
    """``Gateway.list_invoices``, ``invoice_page``, ``stream_invoices``,
    ``list_transactions`` and ``transaction_page``."""

    def list_invoices(
        self: GatewayParts,
        *,
        owner: str | None = None,
        address: str | None = None,
        chain_id: int | None = None,
        offset: int | None = None,
        limit: int | None = None,
    ) -> list[Invoice] | tuple[list[Invoice], int, int, int]:
        """A plain list oldest first, or (items, total, offset, limit) newest first when
        either offset or limit is given (docs/interface.md §GET /invoices)."""
        paged = offset is not None or limit is not None
        off, lim = _page(offset, limit, INVOICE_PAGE_MAX)
        with self._storage.transaction() as tx:
            items, total = tx.list_invoices(
                owner=owner,
                address=address,
                chain_id=chain_id,
                offset=off if paged else 0,
                limit=lim if paged else None,
                newest_first=paged,
            )
            items = self._with_refunds(tx, items)
        items = self._expired_if_due(items)
        return (items, total, off, lim) if paged else items

    def invoice_page(
        self: GatewayParts,
        cursor: str,
        *,
        owner: str | None = None,
        address: str | None = None,
        chain_id: int | None = None,
        limit: int | None = None,
    ) -> Page[Invoice]:
        """GET /invoices with ``cursor``: a keyset page, newest first, whose cost does not
        grow with how deep it is (``paycore.domain.paging``; docs/interface.md). The cursor
        ``first`` is the first page, ``last`` the last one."""
        at = read_cursor(cursor, "invoices")
        _, lim = _page(None, limit, INVOICE_PAGE_MAX)
        after = at.position if isinstance(at.position, str) else None
        with self._storage.transaction() as tx:
            if after is not None and not _in_list(tx.get_invoice(after), owner, address, chain_id):
                # Another owner's guid is no position in this list: it must not serve as one
                # (nor tell, by answering, that such an invoice exists).
                raise InvalidInput("cursor", "no such position in this invoices list")
            fetched = tx.invoices_after(
                owner=owner,
                address=address,
                chain_id=chain_id,
                after=after,
                limit=lim + 1,
                newest_first=at.direction == "older",
            )
            total = tx.count_invoices(owner=owner, address=address, chain_id=chain_id)
            if fetched is not None:
                fetched = self._with_refunds(tx, fetched)
        if fetched is None:
            raise InvalidInput("cursor", "no such position in this invoices list")
        page = page_from(at, fetched, limit=lim, total=total, position=lambda inv: inv.guid)
        return attrs.evolve(page, items=self._expired_if_due(page.items))

    def stream_invoices(
        self: GatewayParts,
        *,
        owner: str | None = None,
        address: str | None = None,
        chain_id: int | None = None,
    ) -> Iterator[Invoice]:
        """GET /invoices without paging: every match, oldest first, read in batches of
        ``INVOICE_STREAM_BATCH`` by creation sequence, so memory stays the same whatever
        the count. Checked before the first item: more than ``invoice_list_max`` matches is
        an InvalidInput (400) that says to page. Invoices created while the list is read
        are left for the next request."""
        ceiling = self.settings.invoice_list_max
        with self._storage.transaction() as tx:
            total = tx.count_invoices(owner=owner, address=address, chain_id=chain_id)
            newest = tx.invoices_after(
                owner=owner, address=address, chain_id=chain_id, limit=1, newest_first=True
            )
        if total > ceiling:
            raise InvalidInput(
                "limit",
                f"required: {total} invoices match, more than the {ceiling} a list without"
                " offset, limit or cursor returns",
            )
        return InvoiceLists._invoice_batches(
            self, owner, address, chain_id, newest[0].guid if newest else None
        )

    def _invoice_batches(
        self: GatewayParts,
        owner: str | None,
        address: str | None,
        chain_id: int | None,
        last: str | None,
    ) -> Iterator[Invoice]:
        """The stream's invoices, oldest first, ``INVOICE_STREAM_BATCH`` a storage
        transaction, up to ``last`` (the newest when the stream began)."""
        after: str | None = None
        while last is not None:
            with self._storage.transaction() as tx:
                batch = tx.invoices_after(
                    owner=owner,
                    address=address,
                    chain_id=chain_id,
                    after=after,
                    limit=INVOICE_STREAM_BATCH,
                )
                if batch:
                    batch = self._with_refunds(tx, batch)
            if not batch:
                return
            for invoice in self._expired_if_due(batch):
                yield invoice
                if invoice.guid == last:
                    return
            after = batch[-1].guid

    def list_transactions(
        self: GatewayParts,
        owner: str,
        *,
        chain_id: int | None = None,
        offset: int | None,
        limit: int | None,
    ) -> tuple[list[Transaction], int, int, int]:
        """``owner``'s deposits and withdrawals, newest first, as (items, total, offset, limit).

        ``chain_id`` keeps one chain; ``limit`` is clamped to 200 (GET /transactions).
        """
        off, lim = _page(offset, limit, TRANSACTION_PAGE_MAX)
        with self._storage.transaction() as tx:
            items, total = tx.list_transactions(owner, chain_id=chain_id, offset=off, limit=lim)
        return items, total, off, lim

    def transaction_page(
        self: GatewayParts,
        owner: str,
        cursor: str,
        *,
        chain_id: int | None = None,
        limit: int | None = None,
    ) -> Page[Transaction]:
        """GET /transactions with ``cursor``: a keyset page, newest first, as
        ``invoice_page`` is for invoices."""
        at = read_cursor(cursor, "transactions")
        _, lim = _page(None, limit, TRANSACTION_PAGE_MAX)
        after = at.position if isinstance(at.position, tuple) else None
        with self._storage.transaction() as tx:
            fetched = tx.transactions_after(
                owner,
                chain_id=chain_id,
                after=after,
                limit=lim + 1,
                newest_first=at.direction == "older",
            )
            total = tx.count_transactions(owner, chain_id=chain_id)
        return page_from(at, fetched, limit=lim, total=total, position=tx_position)


def _in_list(
    invoice: Invoice | None, owner: str | None, address: str | None, chain_id: int | None
) -> bool:
    """Whether ``invoice`` is a row of the list these filters select (a cursor's position
    must be one)."""
    return (
        invoice is not None
        and (owner is None or invoice.owner == owner)
        and (address is None or invoice.address == address)
        and (chain_id is None or invoice.chain_id == chain_id)
    )


def _page(offset: int | None, limit: int | None, ceiling: int) -> tuple[int, int]:
    off = 0 if offset is None else offset
    lim = ceiling if limit is None else limit
    if off < 0:
        raise InvalidInput("offset", "must not be negative")
    if lim < 1:
        raise InvalidInput("limit", "must be at least 1")
    return off, min(lim, ceiling)
