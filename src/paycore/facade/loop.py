"""``LoopStorage``: the Gateway's calls for answering a request on an event loop.

An async adapter (Litestar, Flask's ASGI front) answers the hot requests without a hop to
a worker thread: the store's round trip awaited on the loop (the poll's read, a signed
read's spend and read, a signed creation's writes), then the core's sync rules run on what
it returned (``paycore.api.handle_inline_async``). These are the Gateway's own methods,
written apart from the rest of the facade: what the store offers for that, and the contexts
that hand a prefetched result to the rules. The Gateway sets the attributes declared here.
A signed creation's one statement has its sync twin here too (``create_recorded``): a sync
host (Flask under its own WSGI server) makes it the same way on the request's thread.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from ..auth.session import SignedRequest, nonce_terms
from ..config import Settings
from ..domain.records import SessionKey
from ..storage import AsyncInvoiceRead, AsyncSignedCreate, AsyncSignedRead, SignedCreate, Storage
from ..storage.invoice_read import InvoiceRead
from ..storage.request_unit import Recorded, RequestUnits


class LoopStorage:
    """What the Gateway offers an adapter answering on an event loop."""

    settings: Settings
    _given: Storage
    _storage: RequestUnits
    #: The store's poll read on an event loop, if it has one (PostgreSQL).
    _async_read: AsyncInvoiceRead | None
    #: The store's signed read (spend and read) on an event loop, if it has one.
    _async_spend: AsyncSignedRead | None
    #: The store's signed creation (spend, invoice, count) on an event loop, if any.
    _async_create: AsyncSignedCreate | None
    #: The same on the calling thread, if the store has it (a sync host's creation).
    _create: SignedCreate | None

    @property
    def spends_inline(self) -> bool:
        """Whether a signed ``GET /invoice/{guid}`` or ``POST /invoice`` may be answered on
        an event loop: the store makes its storage calls all or nothing there
        (``has_inline_spend``: ``paycore_storage`` on a SQLite file; see
        ``paycore.storage.invoice_read.spending_inline``), unless ``inline_writes`` is off."""
        return self.settings.inline_writes and bool(getattr(self._given, "has_inline_spend", False))

    def inline_turn_free(self) -> bool:
        """Whether a write made on the event loop would find this process's writer free
        now (the store's ``inline_turn_free``; True for a store that does not say): a hint
        for :func:`paycore.api.handle_inline_async`, which waits on the loop while it is
        not. Meaningful where :attr:`spends_inline`."""
        probe = getattr(self._given, "inline_turn_free", None)
        return True if probe is None else bool(probe())

    @property
    def reads_invoices_async(self) -> bool:
        """Whether :meth:`read_invoice_async` is there: the store reads one invoice on an
        event loop (``Storage.read_invoice_async``: ``paycore_storage`` on PostgreSQL)."""
        return self._async_read is not None

    async def read_invoice_async(self, guid: str) -> InvoiceRead | None:
        """(A coroutine.) The store's one-statement read of ``guid``, awaited on the calling loop,
        to hand to :meth:`with_prefetched_read` (``paycore.api.handle_inline_async``).
        Raises ``StorageUnavailable``, or ``WouldBlock`` when it cannot read without
        blocking; ``RuntimeError`` without :attr:`reads_invoices_async`."""
        if self._async_read is None:
            raise RuntimeError("this gateway's storage has no read_invoice_async")
        return await self._async_read.read_invoice_async(guid)

    @property
    def spends_async(self) -> bool:
        """Whether :meth:`spend_and_read_async` is there: the store spends a signed read's
        nonce and reads its invoice on an event loop (``Storage.spend_nonce_then_read_async``:
        ``paycore_storage`` on PostgreSQL)."""
        return self._async_spend is not None

    async def spend_and_read_async(
        self, signed: SignedRequest, guid: str
    ) -> tuple[SessionKey | None, InvoiceRead | None]:
        """(A coroutine.) The nonce of ``signed`` spent, committed, and the invoice ``guid`` read,
        as ``Storage.spend_nonce_then_read`` makes them, awaited on the calling loop, to hand
        to :meth:`with_prefetched_spend` (``paycore.api.handle_inline_async``). Raises
        ``StorageUnavailable`` (the spend may or may not have been made), ``WouldBlock``
        (nothing was sent), ``RuntimeError`` without :attr:`spends_async`."""
        if self._async_spend is None:
            raise RuntimeError("this gateway's storage has no spend_nonce_then_read_async")
        strict, window = nonce_terms(self.settings)
        return await self._async_spend.spend_nonce_then_read_async(
            signed.address, signed.nonce, signed.digest, window=window, strict=strict,
            now=signed.at, guid=guid,
        )  # fmt: skip

    @property
    def creates_async(self) -> bool:
        """Whether :meth:`create_recorded_async` is there: the store makes a signed
        creation's writes as one statement on an event loop
        (``Storage.spend_nonce_then_insert_invoice_async``: ``paycore_storage`` on
        PostgreSQL)."""
        return self._async_create is not None

    def known_session_key(self, address: str) -> SessionKey | None:
        """The session key ``address`` as this process last spent it, if remembered: what
        :meth:`recording` expects the key to be."""
        return self._storage.known_key(address)

    def recording(self, signed: SignedRequest, key: SessionKey) -> AbstractContextManager[Recorded]:
        """Inside, the request's unit records its writes (the spend of ``signed``'s nonce,
        answered with ``key``; one invoice) instead of making them, and any other storage
        call raises ``WouldBlock``; :meth:`create_recorded_async` then makes them."""
        return self._storage.recording((signed.address, signed.nonce, signed.digest), key)

    async def create_recorded_async(
        self, signed: SignedRequest, recorded: Recorded
    ) -> SessionKey | None:
        """(A coroutine.) What :meth:`recording` recorded, made as one statement awaited on
        the calling loop: the key as spent, or None with nothing written (the nonce refused,
        or the key no longer the one recorded against). Raises as
        ``Storage.spend_nonce_then_insert_invoice_async`` does, ``RuntimeError`` without
        :attr:`creates_async`."""
        if self._async_create is None:
            raise RuntimeError("this gateway's storage creates nothing on a loop")
        made = self._async_create.spend_nonce_then_insert_invoice_async
        return self._storage.remember_key(await made(**self._creation(signed, recorded)))

    @property
    def creates_at_once(self) -> bool:
        """Whether :meth:`create_recorded` is there: the store makes a signed creation's
        writes in one call on the calling thread (``Storage.spend_nonce_then_insert_invoice``:
        ``paycore_storage`` on PostgreSQL, one statement)."""
        return self._create is not None

    def create_recorded(self, signed: SignedRequest, recorded: Recorded) -> SessionKey | None:
        """:meth:`create_recorded_async` on the calling thread, for a sync host; raises as
        ``Storage.spend_nonce_then_insert_invoice`` does, ``RuntimeError`` without
        :attr:`creates_at_once`."""
        if self._create is None:
            raise RuntimeError("this gateway's storage creates nothing at once")
        made = self._create.spend_nonce_then_insert_invoice
        return self._storage.remember_key(made(**self._creation(signed, recorded)))

    def _creation(self, signed: SignedRequest, recorded: Recorded) -> dict[str, Any]:
        """The arguments of the store's one-call creation of what ``recorded`` holds."""
        if recorded.invoice is None:
            raise RuntimeError("nothing was recorded to create")
        strict, window = nonce_terms(self.settings)
        return {
            "address": signed.address, "nonce": signed.nonce, "digest": signed.digest,
            "window": window, "strict": strict, "now": signed.at, "expect": recorded.key,
            "invoice": recorded.invoice,
        }  # fmt: skip

    def with_prefetched_spend(
        self, signed: SignedRequest, key: SessionKey | None, guid: str, read: InvoiceRead | None
    ) -> AbstractContextManager[None]:
        """Inside, the spend of ``signed``'s nonce gets ``key`` and the first read of
        ``guid`` gets ``read`` (what :meth:`spend_and_read_async` returned) instead of
        being made again: the request's sync rules run on them, and its nonce is spent
        once, whether they finish on the loop or in a worker thread."""
        message = (signed.address, signed.nonce, signed.digest)
        return self._storage.prefetched_spend(message, key, guid, read)

    def with_prefetched_read(
        self, guid: str, read: InvoiceRead | None
    ) -> AbstractContextManager[None]:
        """Inside, the first read of the invoice ``guid`` gets ``read`` (what
        ``Storage.read_invoice(guid)`` returned just before, awaited on an event loop by
        ``paycore.api.handle_inline_async``) instead of reading: the same rules (lazy
        expiry, ETag, the answer) then run on it, and only the wait moved."""
        return self._storage.prefetched(guid, read)
