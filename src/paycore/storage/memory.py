"""In-memory ``Storage`` for unit tests and the quickstart: no database, same contract.

One ``threading.RLock`` is held for the whole of a ``transaction()``, so every unit of work is
serial and each compare-and-set in the protocol is trivially atomic. Writes go straight into
the live tables; a snapshot taken at ``begin`` is put back on any exception, so a failed unit
of work leaves nothing half-written, exactly like a database rollback. Snapshots are shallow
copies of the tables: the records are frozen, so sharing them between snapshot and live state
is safe, and only the JSON blobs (mutable dicts) are copied on the way in and out so that a
caller mutating a returned dict cannot reach into storage -- as it could not with a database.
The one table changed in place, the session keys' nonce windows (a copy per request would cost
as much as a window holds), is put back from the transaction's undo log instead.

The tables and the store are here; the transaction's methods are one mixin per concern,
as the contract is one protocol per concern (``paycore.storage.protocols``):
``memory_invoices``, ``memory_transactions``, ``memory_detected``, ``memory_auth``,
``memory_webhooks``, ``memory_outbox``, ``memory_chains``, ``memory_prices``,
``memory_refunds``, ``memory_links``, ``memory_merchant``, ``memory_export``,
``memory_pruning``, ``memory_idempotency``; ``memory_rows`` holds what they share.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import attrs

from ..chains.records import ChainCursor
from ..domain.detected import Detected, DetectedKey
from ..domain.records import (
    Invoice,
    OutboxEvent,
    PollToken,
    PowChallenge,
    Refund,
    SessionKey,
    Transaction,
    WebhookConfig,
)
from ..management.records import AppKey, EmailSetting
from ..merchant.profile import MerchantProfile
from ..payouts.records import Payout, PayoutBatch
from ..prices.records import LockedQuote, ParkedDeposit, StoredPrice
from ..webhooks.records import DeliveryAttempt, WebhookEndpoint
from .contract import StorageTx, spend_then_insert_invoice, spend_then_read
from .idempotency import IdempotentAnswer
from .invoice_read import InvoiceRead
from .memory_auth import MemoryAuth
from .memory_chains import MemoryChains
from .memory_detected import MemoryDetected
from .memory_export import MemoryExport
from .memory_idempotency import IdemKey, MemoryIdempotency
from .memory_invoices import MemoryInvoices
from .memory_links import MemoryLinks
from .memory_merchant import MemoryMerchant
from .memory_outbox import MemoryOutbox
from .memory_payout_watch import MemoryPayoutWatch
from .memory_payouts import MemoryPayouts
from .memory_prices import MemoryPrices
from .memory_pruning import MemoryPruning
from .memory_refunds import MemoryRefunds
from .memory_rows import TxKey, _DeliveryRow, _LinkRow, _NonceWindow, _Queue
from .memory_search import MemorySearch
from .memory_subscriptions import MemorySubscriptions, SubKey
from .memory_transactions import MemoryTransactions
from .memory_webhooks import MemoryWebhooks


@attrs.define
class _Tables:
    """Every table of the store; ``snapshot`` and ``restore`` make rollback possible."""

    invoices: dict[str, Invoice] = attrs.field(factory=dict)
    #: guid -> creation sequence: the order every listing and cursor follows.
    invoice_seq: dict[str, int] = attrs.field(factory=dict)
    transactions: dict[TxKey, Transaction] = attrs.field(factory=dict)
    session_keys: dict[str, SessionKey] = attrs.field(factory=dict)
    #: address -> the messages it had accepted within its window. Mutated in place (copying
    #: a window per request would cost as much as the window holds), so a rollback undoes
    #: those changes from the transaction's undo log rather than from the snapshot.
    used_nonces: dict[str, _NonceWindow] = attrs.field(factory=dict)
    wallet_indexes: dict[tuple[str, int], int] = attrs.field(factory=dict)  # -> next index
    challenges: dict[str, PowChallenge] = attrs.field(factory=dict)
    signatures: dict[str, int] = attrs.field(factory=dict)  # digest -> expires_at
    webhooks: dict[str, WebhookConfig] = attrs.field(factory=dict)
    #: (owner, id) -> endpoint, in creation order (revision 0017).
    endpoints: dict[tuple[str, str], WebhookEndpoint] = attrs.field(factory=dict)
    merchant_profiles: dict[str, MerchantProfile] = attrs.field(factory=dict)
    events: list[OutboxEvent] = attrs.field(factory=list)  # ascending id
    queues: dict[str, _Queue] = attrs.field(factory=dict)
    poll_tokens: dict[str, PollToken] = attrs.field(factory=dict)
    chain_cursors: dict[int, ChainCursor] = attrs.field(factory=dict)
    #: host-signal queue -> (holder, lease_until ms); holder None when released.
    signal_leases: dict[str, tuple[str | None, int]] = attrs.field(factory=dict)
    deliveries: dict[int, _DeliveryRow] = attrs.field(factory=dict)  # ascending id
    attempts: list[DeliveryAttempt] = attrs.field(factory=list)
    app_keys: dict[str, AppKey] = attrs.field(factory=dict)  # by key address
    emails: dict[tuple[str, int], EmailSetting] = attrs.field(factory=dict)
    disabled_indexes: dict[tuple[str, int], frozenset[int]] = attrs.field(factory=dict)
    notices: set[str] = attrs.field(factory=set)
    prices: dict[tuple[str, str], StoredPrice] = attrs.field(factory=dict)  # (vs, token)
    quotes: dict[tuple[str, str], LockedQuote] = attrs.field(factory=dict)  # (guid, token)
    parked: dict[TxKey, ParkedDeposit] = attrs.field(factory=dict)  # in parking order
    payment_links: dict[str, _LinkRow] = attrs.field(factory=dict)
    refunds: dict[str, Refund] = attrs.field(factory=dict)  # by id, in insertion order
    idempotency: dict[IdemKey, IdempotentAnswer] = attrs.field(factory=dict)
    #: chain -> its detected transfers by key; each chain's dict is replaced whole.
    detected: dict[int, dict[DetectedKey, Detected]] = attrs.field(factory=dict)
    subscriptions: dict[SubKey, Any] = attrs.field(factory=dict)  # memory_subscriptions
    payout_batches: dict[str, PayoutBatch] = attrs.field(factory=dict)  # revision 0021
    payouts: dict[tuple[str, int], Payout] = attrs.field(factory=dict)  # (batch, line)
    payout_watch: dict[tuple[str, str], int] = attrs.field(factory=dict)  # revision 0022
    last_event_id: int = 0
    last_invoice_seq: int = 0
    last_delivery_id: int = 0

    def snapshot(self) -> _Tables:
        copied: dict[str, Any] = {}
        for field in attrs.fields(_Tables):
            value = getattr(self, field.name)
            copied[field.name] = value.copy() if hasattr(value, "copy") else value
        return _Tables(**copied)

    def restore(self, snapshot: _Tables) -> None:
        for field in attrs.fields(_Tables):
            setattr(self, field.name, getattr(snapshot, field.name))


class MemoryStorage:
    """A ``paycore.storage.Storage`` that lives in this process and dies with it.

    ``clock`` (unix seconds) decides when a remembered signature has expired; tests inject
    one to move time without sleeping.
    """

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self._lock = threading.RLock()
        self._tables = _Tables()
        self._clock = clock

    @contextmanager
    def transaction(self) -> Iterator[StorageTx]:
        with self._lock:
            snapshot = self._tables.snapshot()
            tx = _MemoryTx(self._tables, self._clock)
            try:
                yield tx
            except BaseException:
                tx._undo_in_place()
                self._tables.restore(snapshot)
                raise
            finally:
                tx._close()

    def spend_nonce(
        self,
        address: str,
        nonce: int,
        digest: str,
        *,
        window: int,
        strict: bool = False,
        now: int,
    ) -> SessionKey | None:
        with self.transaction() as tx:
            return tx.spend_nonce(address, nonce, digest, window=window, strict=strict, now=now)

    def spend_nonce_then_read(
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
        return spend_then_read(
            self, address, nonce, digest, window=window, strict=strict, now=now, guid=guid
        )

    def read_invoice(self, guid: str) -> InvoiceRead | None:
        with self.transaction() as tx:
            return tx.read_invoice(guid)

    #: ``read_invoice_async`` is here, held to the contract like any store's, but not worth
    #: awaiting (``async_read_of`` passes it over): the read is a dict lookup, no round trip.
    has_async_read = False

    async def read_invoice_async(self, guid: str) -> InvoiceRead | None:
        """``read_invoice`` for a caller on an event loop: the reference store offers every
        optional call, so the contract suite runs each of its tests on it."""
        return self.read_invoice(guid)

    #: Likewise ``spend_nonce_then_read_async`` (``async_spend_of`` passes it over).
    has_async_spend = False

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
        return self.spend_nonce_then_read(
            address, nonce, digest, window=window, strict=strict, now=now, guid=guid
        )

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
        """Likewise (``create_of`` passes it over): in one transaction."""
        return spend_then_insert_invoice(
            self, address, nonce, digest, window=window, strict=strict, now=now,
            expect=expect, invoice=invoice,
        )  # fmt: skip

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
        """Likewise (``async_create_of`` passes it over): in one transaction."""
        return self.spend_nonce_then_insert_invoice(
            address, nonce, digest, window=window, strict=strict, now=now,
            expect=expect, invoice=invoice,
        )  # fmt: skip

    def close(self) -> None:
        """Nothing to release; present because the protocol asks for it."""


class _MemoryTx(
    MemoryInvoices,
    MemoryTransactions,
    MemoryDetected,
    MemoryAuth,
    MemoryWebhooks,
    MemoryOutbox,
    MemoryChains,
    MemoryPrices,
    MemoryRefunds,
    MemoryLinks,
    MemoryMerchant,
    MemoryExport,
    MemoryPruning,
    MemorySearch,
    MemoryIdempotency,
    MemorySubscriptions,
    MemoryPayouts,
    MemoryPayoutWatch,
):
    """One unit of work; only valid inside its ``with`` block (the lock is held there)."""

    def __init__(self, tables: _Tables, clock: Callable[[], float]) -> None:
        self._live: _Tables | None = tables
        self._clock = clock
        #: Reverses of the in-place changes the snapshot cannot put back, newest last.
        self._undo: list[Callable[[], None]] = []

    def _close(self) -> None:
        self._live = None

    def _undo_in_place(self) -> None:
        for undo in reversed(self._undo):
            undo()
        self._undo.clear()

    @property
    def _t(self) -> _Tables:
        # A tx kept past its block would write without the lock and outside any rollback.
        if self._live is None:
            raise RuntimeError("storage transaction used after it ended")
        return self._live
