"""What the core needs from storage, as typed Protocols; implementations are plugins.

Every change the core makes goes through one unit of work, ``with storage.transaction() as tx``:
the invoice update, the payment's transaction row and the outbox event commit together or not
at all. ``StorageTx``, what the block gets, is composed of narrow protocols, one per concern,
each in a module of ``paycore.storage.protocols`` whose docstring states what storage owes
for it -- which calls lock, in what order rows come back, what is idempotent, what must be
one atomic step:

- ``invoices.Invoices``: invoice rows; ``for_update`` reads lock them until the end.
- ``transactions.Transactions``: deposits and withdrawals, recorded once per transfer, taken
  back once by a reorg.
- ``detected.DetectedTransfers``: transfers not yet deep enough, replaced per chain.
- ``auth.SessionKeys``, ``auth.Challenges``, ``auth.Signatures``, ``auth.PollTokens``: nonces,
  challenges and signatures, each accepted once.
- ``webhooks.WebhookConfigs``, ``webhooks.WebhookEndpoints``, ``webhooks.WebhookDeliveries``:
  where webhooks go, and deliveries leased to one dispatcher at a time.
- ``outbox.Outbox``, ``outbox.SignalLeases``: events in id order, drained once, and the
  host-signal queues' leases.
- ``chains.ChainLeases``, ``chains.WatchedAddresses``: one watcher per chain, fenced by its
  lease, and what it watches.
- ``prices.Prices``, ``prices.Quotes``, ``prices.ParkedDeposits``: the price table, locked
  rates, deposits waiting for a price.
- ``refunds.Refunds``: refund rows, settled once.
- ``links.PaymentLinks``: payment links, whose use is counted in one step.
- ``merchant.MerchantProfiles``, ``merchant.Owners``, ``merchant.AppKeys``,
  ``merchant.EmailSettings``, ``merchant.WalletIndexes``, ``merchant.Notices``: what paycore
  keeps of a merchant besides invoices.
- ``export.Export``: keyset batches for the accounting export.
- ``pruning.Pruning``: deleting, in batches, rows nothing can use any more.
- ``paycore.storage.idempotency.IdempotencyKeys``: the first answer to a creating write.
- ``paycore.storage.search.InvoiceSearch``: filtered keyset pages of an owner's invoices and
  the dashboard's aggregates.

Implementations must make each method safe under concurrent transactions from several threads
and processes (row locks / atomic statements), because the core relies on it. A service that
needs a few concerns may be typed against the narrow protocols it uses; a store implements
them all. Addresses and owners arrive already normalised (checksummed / base58); storage
compares them as plain strings. Exceptions raised inside the ``with`` block roll everything
back.

The records the protocols name (``PruneBatch``, ``TransferKey``, ``TransferPlace``) live with
their concern and are re-exported here, where plugins have always found them.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Protocol, cast, runtime_checkable

from ..domain.records import Invoice, SessionKey
from .idempotency import IdempotencyKeys
from .invoice_read import InvoiceRead
from .payout_watch import PayoutWatch
from .payouts import PayoutStore
from .protocols.auth import Challenges, PollTokens, SessionKeys, Signatures
from .protocols.chains import ChainLeases, WatchedAddresses
from .protocols.detected import DetectedTransfers
from .protocols.export import Export, TransferPlace
from .protocols.invoices import Invoices
from .protocols.links import PaymentLinks
from .protocols.merchant import (
    AppKeys,
    EmailSettings,
    MerchantProfiles,
    Notices,
    Owners,
    WalletIndexes,
)
from .protocols.outbox import Outbox, SignalLeases
from .protocols.prices import ParkedDeposits, Prices, Quotes
from .protocols.pruning import PruneBatch, Pruning
from .protocols.refunds import Refunds
from .protocols.transactions import Transactions, TransferKey
from .protocols.webhooks import WebhookConfigs, WebhookDeliveries, WebhookEndpoints
from .search import InvoiceSearch
from .subscriptions import SubscriptionStore

__all__ = [
    "OutboxSignal",
    "PruneBatch",
    "SignalledStorage",
    "Storage",
    "StorageTx",
    "TransferKey",
    "TransferPlace",
    "signal_source",
]


class StorageTx(
    Invoices,
    Transactions,
    DetectedTransfers,
    SessionKeys,
    Challenges,
    Signatures,
    PollTokens,
    WebhookConfigs,
    WebhookEndpoints,
    WebhookDeliveries,
    Outbox,
    SignalLeases,
    ChainLeases,
    WatchedAddresses,
    Prices,
    Quotes,
    ParkedDeposits,
    Refunds,
    PaymentLinks,
    MerchantProfiles,
    Owners,
    AppKeys,
    EmailSettings,
    WalletIndexes,
    Notices,
    Export,
    Pruning,
    InvoiceSearch,
    IdempotencyKeys,
    SubscriptionStore,
    PayoutStore,
    PayoutWatch,
    Protocol,
):
    """One open unit of work: what ``Storage.transaction()`` yields, every concern's protocol
    in one (``paycore.storage.protocols``; the module docstring lists them).

    Everything done through one ``StorageTx`` commits together when the ``with`` block ends
    normally, and is rolled back when it raises. Reads see this transaction's own writes.
    The duties each protocol's module states apply to every method of it.
    """


@runtime_checkable
class OutboxSignal(Protocol):
    """A cheap "the outbox may have grown" signal from other processes, on a connection of
    its own: what a store offers through an ``outbox_signal()`` method, which
    ``paycore_storage`` has (PostgreSQL LISTEN/NOTIFY, SQLite's ``data_version``) and the
    in-memory store has not (one process: the Hub hears its changes directly). A store may
    leave the method out; the WebSocket feed (``paycore.realtime.outbox_feed``) looks for it.
    """

    def wait(self, timeout: float) -> bool:
        """Block up to ``timeout`` seconds; True as soon as a commit may have added events
        (a false alarm is allowed, a miss is not while connected). Raises (any exception)
        once the connection is lost: the caller closes it and asks for a new one."""

    def close(self) -> None:
        """Release the connection; never raises."""


class SignalledStorage(Protocol):
    """A store with an ``outbox_signal`` (``paycore_storage``): see :class:`OutboxSignal`."""

    def outbox_signal(self, name: str = ...) -> OutboxSignal | None: ...


def signal_source(storage: object) -> SignalledStorage | None:
    """``storage`` when it offers an outbox signal (``paycore_storage`` on PostgreSQL or a
    SQLite file: ``has_outbox_signal``), else None (the in-memory stores: one process)."""
    if callable(getattr(storage, "outbox_signal", None)) and getattr(
        storage, "has_outbox_signal", True
    ):
        return cast(SignalledStorage, storage)
    return None


class SpendThenRead(Protocol):
    """A store that spends a signed read's nonce and reads its invoice in one call
    (``paycore_storage``, ``paycore.storage.memory``): see :func:`spend_then_read_of`."""

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
        """A signed ``GET /invoice/{guid}``'s storage: ``Storage.spend_nonce``, committed, and
        when it spent, ``Storage.read_invoice`` of ``guid`` (``None`` for no such invoice);
        ``(None, None)`` when the nonce was refused: nothing changed and nothing was read.
        What the two calls would do one after the other; a store may do it in one round
        trip (``paycore_storage``: one statement on PostgreSQL)."""
        ...


def spend_then_read(
    storage: Storage,
    address: str,
    nonce: int,
    digest: str,
    *,
    window: int,
    strict: bool = False,
    now: int,
    guid: str,
) -> tuple[SessionKey | None, InvoiceRead | None]:
    """``SpendThenRead.spend_nonce_then_read`` as the two calls it stands for, one after the
    other: what a store with no one-round-trip way of its own answers with."""
    key = storage.spend_nonce(address, nonce, digest, window=window, strict=strict, now=now)
    return key, (None if key is None else storage.read_invoice(guid))


class _NotSpent(Exception):
    """Rolls back a refused spend, or one made on a key other than the one expected."""


def spend_then_insert_invoice(
    storage: Storage,
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
    """``AsyncSignedCreate.spend_nonce_then_insert_invoice_async`` made in one
    transaction of ``storage``: the spend, rolled back unless the key it returned has
    ``expect``'s owner and encryption key, then the invoice. What a store with no
    one-statement way of its own answers with."""
    try:
        with storage.transaction() as tx:
            key = tx.spend_nonce(address, nonce, digest, window=window, strict=strict, now=now)
            expected = (expect.owner, expect.encryption_public_key)
            if key is None or (key.owner, key.encryption_public_key) != expected:
                raise _NotSpent
            tx.insert_invoice(invoice)
            return key
    except _NotSpent:
        return None


def spend_then_read_of(storage: object) -> SpendThenRead | None:
    """``storage`` when it offers ``spend_nonce_then_read``, else None: optional, so a
    store written before it keeps working (its signed reads make the two calls)."""
    if callable(getattr(storage, "spend_nonce_then_read", None)):
        return cast(SpendThenRead, storage)
    return None


@runtime_checkable
class Storage(Protocol):
    """A storage backend: what the ``paycore_storage`` hook returns for a database URL.

    ``paycore_storage`` (SQLAlchemy: SQLite, PostgreSQL) and ``paycore.storage.memory``
    (``memory://``) implement it. A backend must be safe to share between threads; each
    ``transaction()`` is independent of the others.
    """

    def transaction(self) -> AbstractContextManager[StorageTx]:
        """Open a unit of work: ``with storage.transaction() as tx: ...`` commits when the
        block ends and rolls back everything if it raises."""

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
        """``StorageTx.spend_nonce`` as a unit of work of its own, committed before it
        returns: what a transaction doing only that would do. A store may run it in fewer
        round trips than a transaction (``paycore_storage``: one autocommitted statement on
        PostgreSQL), since it is the one storage call every signed request makes."""

    def read_invoice(self, guid: str) -> InvoiceRead | None:
        """The invoice ``guid`` with its refunds, ``None`` if there is none: the public
        read of ``GET /invoice/{guid}``, which a checkout page repeats every few seconds.
        One statement outside any transaction (an autocommitted ``SELECT``: no ``BEGIN``,
        no ``COMMIT``), taking no write lock; it sees committed state only. Its
        ``version`` changes whenever anything stored about the invoice changes
        (``paycore.storage.invoice_read``)."""

    def close(self) -> None:
        """Release connections and files; the storage is not used afterwards."""
