"""The checkout page's poll read, and a signed read's spend and read, awaited on an event
loop; a signed creation's writes as one call, awaited or not: optional parts of ``Storage``.

``Storage.read_invoice`` blocks for its round trip. On a database where that is a network
round trip (PostgreSQL), an async adapter answering the poll inline (``paycore.api
.handle_inline_async``) awaits this instead, then hands what it read to the core's sync
rules (``Gateway.with_prefetched_read``): the rules stay in one place, only the wait moves.

Optional, as ``SpendThenRead`` is: a store without it keeps working (its polls are answered
as before, inline when its read does not block, else in a worker thread).
"""

from __future__ import annotations

from typing import Protocol, cast

from ...domain.records import Invoice, SessionKey
from ..invoice_read import InvoiceRead


class AsyncInvoiceRead(Protocol):
    """A store that can read one invoice on an event loop without blocking it
    (``paycore_storage`` on PostgreSQL): see :func:`async_read_of`."""

    async def read_invoice_async(self, guid: str) -> InvoiceRead | None:
        """What ``Storage.read_invoice(guid)`` returns at that moment -- the same
        ``version``, status, deadline, refunds and detected transfers -- awaited on the
        calling event loop, which it never blocks. Raises ``StorageUnavailable`` when the
        database cannot answer, and ``paycore.storage.invoice_read.WouldBlock`` when it
        cannot read without blocking after all (then the caller reads in a thread)."""
        ...


def async_read_of(storage: object) -> AsyncInvoiceRead | None:
    """``storage`` when it offers ``read_invoice_async`` and awaiting it is worth it: not
    when it says ``has_async_read = False`` (``paycore_storage`` on SQLite, whose read
    does not wait and is made inline as it is), else None."""
    if callable(getattr(storage, "read_invoice_async", None)) and getattr(
        storage, "has_async_read", True
    ):
        return cast(AsyncInvoiceRead, storage)
    return None


class AsyncSignedRead(Protocol):
    """A store that spends a signed read's nonce and reads its invoice on an event loop
    (``paycore_storage`` on PostgreSQL): see :func:`async_spend_of`."""

    async def spend_nonce_then_read_async(
        self,
        address: str,
        nonce: int,
        digest: str,
        *,
        window: int,
        strict: bool = False,
        now: int,
        guid: str,
    ) -> tuple[SessionKey | None, InvoiceRead | None]:
        """What ``spend_nonce_then_read`` does and returns -- the spend committed before it
        returns, ``(None, None)`` for a refused nonce with nothing changed -- awaited on the
        calling event loop, which it never blocks. Raises ``StorageUnavailable`` when the
        database cannot answer (the spend then may or may not have been made), and
        ``WouldBlock`` only before anything was sent."""
        ...


def async_spend_of(storage: object) -> AsyncSignedRead | None:
    """``storage`` when it offers ``spend_nonce_then_read_async`` and awaiting it is worth
    it (not when it says ``has_async_spend = False``), else None."""
    if callable(getattr(storage, "spend_nonce_then_read_async", None)) and getattr(
        storage, "has_async_spend", True
    ):
        return cast(AsyncSignedRead, storage)
    return None


class AsyncSignedCreate(Protocol):
    """A store that makes a signed creation's writes -- the nonce's spend, the invoice
    and its count -- as one statement awaited on an event loop (``paycore_storage`` on
    PostgreSQL): see :func:`async_create_of`."""

    async def spend_nonce_then_insert_invoice_async(
        self,
        address: str,
        nonce: int,
        digest: str,
        *,
        window: int,
        strict: bool = False,
        now: int,
        expect: SessionKey,
        invoice: Invoice,
    ) -> SessionKey | None:
        """The nonce spent as ``spend_nonce`` spends it, but only on a key whose
        ``owner`` and ``encryption_public_key`` are ``expect``'s, and ``invoice`` inserted
        (with its owner's count) in the same atomic commit, awaited on the calling loop:
        the key as spent, or None with nothing written (a refused nonce, a changed key).
        Raises ``StorageUnavailable`` when the database cannot answer (the statement may
        or may not have committed), ``WouldBlock`` only before anything was sent, and any
        other error only for a statement the database rolled back whole."""
        ...


def async_create_of(storage: object) -> AsyncSignedCreate | None:
    """``storage`` when it offers ``spend_nonce_then_insert_invoice_async`` and awaiting
    it is worth it (as :func:`async_spend_of`), else None."""
    if callable(getattr(storage, "spend_nonce_then_insert_invoice_async", None)) and getattr(
        storage, "has_async_spend", True
    ):
        return cast(AsyncSignedCreate, storage)
    return None


class SignedCreate(Protocol):
    """A store that makes a signed creation's writes -- the nonce's spend, the invoice and
    its count -- in one call on the calling thread (``paycore_storage``: one statement on
    PostgreSQL): what a sync host (Flask under its own WSGI server) makes a creation with,
    as an async one awaits :class:`AsyncSignedCreate`. See :func:`create_of`."""

    def spend_nonce_then_insert_invoice(
        self,
        address: str,
        nonce: int,
        digest: str,
        *,
        window: int,
        strict: bool = False,
        now: int,
        expect: SessionKey,
        invoice: Invoice,
    ) -> SessionKey | None:
        """What ``AsyncSignedCreate.spend_nonce_then_insert_invoice_async`` makes, made on
        the calling thread, with the same answers and errors (``WouldBlock`` aside: this
        call may wait)."""
        ...


def create_of(storage: object) -> SignedCreate | None:
    """``storage`` when it offers ``spend_nonce_then_insert_invoice`` and one call saves
    round trips there (not when it says ``has_async_spend = False``: a SQLite file, whose
    creation is one local transaction either way), else None."""
    if callable(getattr(storage, "spend_nonce_then_insert_invoice", None)) and getattr(
        storage, "has_async_spend", True
    ):
        return cast(SignedCreate, storage)
    return None
