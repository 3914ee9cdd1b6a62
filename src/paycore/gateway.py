"""The Gateway: settings + plugins + storage wired once; the one object adapters call.

Every public method is a complete operation: it opens its own storage transaction, commits the
state change together with its outbox events, and only then tells notifiers. Adapters
translate HTTP to these calls and nothing more.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, TypeVar
from urllib.parse import urlsplit

import attrs

from .accounting.attribution import (
    AttributionRace,
    attribute_deposits,
    detected_transfers,
    refunds_paid,
    reorg_deposit,
    transfer_key,
)
from .accounting.creation import NewInvoiceTx
from .accounting.search import AttachTx, InvoiceSearchService
from .accounting.service import Accounting
from .auth.service import ProofOfWork, Sessions
from .chains import ChainBackend
from .chains.ledger import ChainLedger
from .chains.records import DepositBatch, Ingested, LeaseLost
from .config import Settings
from .domain import machine
from .domain.changes import EventPayload, EventType
from .domain.detected import STALE_AFTER, Detected
from .domain.invoices import CreateInvoice, NewInvoice, checked_deposit, parse_new_invoice
from .domain.reading import read
from .domain.records import (
    Deposit,
    Invoice,
    Json,
    NewEvent,
    OutboxEvent,
    PriceSnapshot,
    Refund,
    Transaction,
)
from .domain.registry import token_info_wire
from .domain.tokens import normalize_owner
from .errors import (
    Forbidden,
    InvoiceNotFound,
    NoAddressDeriver,
    PaycoreError,
)
from .events.queues import EventQueues
from .events.signals import Handler, SignalConsumer, Signals, default_signals, register_gateway
from .facade.lists import INVOICE_PAGE_MAX, INVOICE_STREAM_BATCH, TRANSACTION_PAGE_MAX, InvoiceLists
from .facade.loop import LoopStorage
from .facade.parts import AnnounceTx
from .facade.refunds import RefundOperations
from .invoice_views import InvoiceView, InvoiceViews, salt_of
from .links.service import Links
from .management.service import Management
from .merchant.service import MerchantProfiles
from .notify import Notifier
from .notify.receipts import Receipts
from .ops.idempotency import Idempotency
from .ops.limits import client_limits
from .ops.outages import OutageLog
from .ops.redaction import remember_secrets
from .ops.retention import Retention
from .payouts.service import Payouts
from .plugins.manager import collect, plugin_manager
from .prices.parking import ParkedDeposits, park_in
from .prices.pricing import PriceSource, PriceTable
from .prices.records import ParkedDeposit
from .prices.refresher import PriceRefresher
from .prices.service import PriceService
from .storage import (
    Storage,
    async_create_of,
    async_read_of,
    async_spend_of,
    create_of,
    signal_source,
)
from .storage.invoice_read import refuse_inline
from .storage.protocols.merchant import WalletIndexes
from .storage.request_unit import RequestUnits
from .subscriptions.service import Subscriptions
from .webhooks.dispatcher import enqueue_webhook, enqueue_webhooks
from .webhooks.service import Webhooks

log = logging.getLogger("paycore")

T = TypeVar("T")

#: The app's address when neither ``public_url`` nor a request names one (``paycore serve``'s).
LOCAL_ADDRESS = "http://127.0.0.1:8000"


class Gateway(InvoiceLists, RefundOperations, LoopStorage):
    """The one object a caller holds: settings, plugins and storage wired together once.

    Adapters, the worker, the CLI and a merchant's own code all go through it. Build it with
    the ``Settings`` to use (``Settings.from_env()`` when left out); plugins are found
    through the ``paycore`` entry points unless ``entry_points=False``, and ``plugins`` adds
    more (objects with ``paycore_*`` hook implementations). ``storage`` bypasses the storage
    hook, and ``clock`` (unix seconds) replaces the wall clock, which is how tests move
    time. Call ``close()`` when done.

    Every public method is one complete operation: it opens its own storage transaction,
    commits the change together with its events, and only then tells the notifiers. Bad
    input raises ``paycore.errors.InvalidInput`` (or another ``PaycoreError``, which carries
    its HTTP status and one-line text) and changes nothing.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        storage: Storage | None = None,
        plugins: Iterable[object] = (),
        entry_points: bool = True,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings or Settings.from_env()
        #: Where the host mounted paycore's routes: the Flask extension and the Litestar
        #: plugin set it, so an invoice created outside a request (host code, a script)
        #: still gets a ``paymentUrl`` under the prefix the page is served at.
        self.mount_prefix = "/paycore"
        # Before anything can fail: an error text or log line quoting a configured secret
        # (an RPC key a library put in its message) shows it masked from here on.
        remember_secrets(self.settings.secret_values())
        self.clock = clock
        #: The HTTP layer's storage-outage lines: one per kind per ``outage_log_interval``.
        self.storage_outages = OutageLog(
            logging.getLogger("paycore.api"), self.settings.outage_log_interval
        )
        self.pm = plugin_manager(self.settings, plugins, entry_points=entry_points)
        found = storage or self.pm.hook.paycore_storage(settings=self.settings)
        if found is None:
            raise PaycoreError(f"no storage plugin handles {self.settings.database_url!r}")
        self._given: Storage = found
        self._async_read = async_read_of(found)
        self._async_spend = async_spend_of(found)
        self._async_create = async_create_of(found)
        self._create = create_of(found)
        # Every service holds the same wrapper, so that inside ``one_transaction()`` all
        # their units of work join the request's one transaction.
        self._storage = units = RequestUnits(found)
        # The sub-services: every operation a caller needs, over the storage held here.
        self.sessions = Sessions(units, self.settings, self.now)
        self.pow = ProofOfWork(units, self.settings, self.now)
        #: Per-client-IP limits on unauthenticated writes (routes with ``ip_limit``).
        self.client_limits = client_limits(self.settings, self.clock)
        self.events = EventQueues(units, self.settings, signal_source(found))
        #: Host handlers of invoice events (``paycore.events.signals``): ``gateway.on``.
        self.signals = Signals()
        if storage is None:  # on settings.database_url: a worker on that database serves it
            register_gateway(self.signals, self.settings.database_url)
        self.webhooks = Webhooks(units, self.settings, self.clock)
        #: The chain backends by chain id, filled from the plugins below; the services
        #: that reach a wallet hold this mapping and read it at each call.
        self.chains: dict[int, ChainBackend] = {}
        self.management = Management(units, self.settings, self.chains, self.now)
        self.payouts = Payouts(units, self.settings, self.chains, self.now)
        self.receipts = Receipts(units, self.settings, self.now)
        self.chain_ledger = ChainLedger(units)
        self.parking = ParkedDeposits(units, self.now, self.revalue_parked)
        self.retention = Retention(units, self.settings, self.clock)
        #: The accounting export (GET /export): invoices, payments, refunds, withdrawals.
        self.accounting = Accounting(units, self.settings, self.clock)
        #: The owner's invoices by filters and text, and the chart's figures (GET /stats).
        self.search = InvoiceSearchService(
            units, self.settings, self._with_refunds, self._expired_if_due
        )
        #: GET /invoice/{guid}: one statement a read, ETag / 304, a body per version.
        self.invoice_views = InvoiceViews(
            units.read_invoice, self._expire, self.now, self.invoice_wire, self._view_salt
        )
        from . import __version__  # here: the package has finished importing by now

        self._token_salt = salt_of(
            __version__,
            sorted(
                (chain_id, c.native_symbol, c.native_decimals, sorted(c.token_info.items()))
                for chain_id, c in self.settings.chains.items()
            ),
        )
        #: Payment links (POST /link, GET /links, POST /link/disable, GET /link/{id}).
        self.links = Links(
            units,
            self.settings,
            self.now,
            self._new_invoice,
            lambda c: c in self.chains,
            self.checkout_url_for,
        )
        #: Subscriptions (docs/subscriptions.md): plans, subscribers, period invoices.
        self.subscriptions = Subscriptions(
            units,
            self.settings,
            self.clock,
            self._new_invoice,
            self.get_invoice,
            lambda c: c in self.chains,
        )
        #: The merchant's identity on the checkout page (POST/GET /merchant/profile).
        self.merchant = MerchantProfiles(units, self.now)
        #: Idempotency keys of creating writes (``Idempotency-Key``; docs/decisions.md).
        self.idempotency = Idempotency(units, self.now)
        for backend in collect(self.pm.hook.paycore_chain_backends, self.settings):
            for chain_id in backend.chain_ids:
                self.chains.setdefault(chain_id, backend)
        self.price_sources: list[PriceSource] = collect(
            self.pm.hook.paycore_price_sources, self.settings
        )
        # A tuple replaced whole (copy on write): a change told while the worker adds or
        # removes a notifier iterates one consistent set with no lock; the lock only keeps
        # two concurrent edits from losing one.
        self._notifiers: tuple[Notifier, ...] = ()
        self._notifiers_edit = threading.Lock()
        for notifier in collect(self.pm.hook.paycore_notifiers, self.settings):
            self.add_notifier(notifier)
        # Prices live in storage, written by the worker's refresher (paycore.prices): no
        # source is asked here, so starting a web process costs no request to a price API.
        self.pricing = PriceService(
            storage=self._storage,
            sources=self.price_sources,
            vs_currency=self.settings.vs_currency,
            vs_currencies=self.settings.vs_currencies,
            max_price_age=self.settings.max_price_age,
            source_order=self.settings.price_sources,
            overrides=dict(self.settings.price_source_overrides),
            clock=self.clock,
        )
        self.price_refresher = PriceRefresher(self.pricing, self.settings)

    def now(self) -> int:
        """The gateway's clock in whole unix seconds: the time every record is stamped with."""
        return int(self.clock())

    @property
    def storage(self) -> Storage:
        """The storage this gateway was built with, read-only: for storage plugin authors
        and tests. Core code outside the gateway and its services never uses it (a test
        guards this); callers use the sub-services and the methods here."""
        return self._given

    def one_transaction(self) -> AbstractContextManager[None]:
        """Make the calls inside one storage transaction, committed when the block ends and
        rolled back whole if it raises; notifiers hear of changes after that commit.

        The HTTP dispatcher wraps a session-signed request in it for the routes marked
        ``one_transaction`` (docs/decisions.md, "One transaction per request"), so the
        spent nonce and the request's work cost one commit. Keep slow work (network calls)
        out of it: the session key's row stays locked until the block ends.
        """
        return self._storage.unit()

    def reading_along(self, guid: str) -> AbstractContextManager[None]:
        """Inside, a nonce spent on its own also reads the invoice ``guid``, in the same
        round trip (``Storage.spend_nonce_then_read``), and the first read of that invoice
        gets what it read. The HTTP dispatcher wraps a signed ``GET /invoice/{guid}`` in it:
        the same spend, then the same read, in one storage call instead of two."""
        return self._storage.reading_along(guid)

    @property
    def notifiers(self) -> tuple[Notifier, ...]:
        """The notifiers told of each committed change, in the order they are told."""
        return self._notifiers

    def add_notifier(self, notifier: Notifier, *, first: bool = False) -> None:
        """Bind ``notifier`` to this gateway and tell it of every change committed from
        now on, after the others (or before them, ``first``). Adding it again does nothing."""
        with self._notifiers_edit:
            if notifier in self._notifiers:
                return
            notifier.bind(self)
            if first:
                self._notifiers = (notifier, *self._notifiers)
            else:
                self._notifiers = (*self._notifiers, notifier)

    def remove_notifier(self, notifier: Notifier) -> None:
        """Stop telling ``notifier``; its owner closes it. Absent: nothing happens."""
        with self._notifiers_edit:
            self._notifiers = tuple(n for n in self._notifiers if n is not notifier)

    def close(self) -> None:
        """Let notifiers finish what they hold (queued e-mail, the Redis listener), then
        release storage. A failing notifier never keeps storage open."""
        for notifier in self._notifiers:
            try:
                notifier.close()
            except Exception:
                log.exception("closing notifier %s failed", notifier.name)
        self._storage.close()

    @property
    def prices(self) -> PriceTable:
        """The table in force in the default vsCurrency: fresh prices only."""
        return self.pricing.table()

    def refresh_prices(self, tokens: Iterable[str] | None = None) -> PriceTable:
        """Ask the sources now (one refresher round, ``tokens`` added to its list) and
        return the default currency's table; the worker does this every interval."""
        self.price_refresher.refresh(force=True, tokens=tokens or ())
        return self.prices

    def price_snapshot(self, vs_currency: str | None = None) -> PriceSnapshot:
        """GET /prices: the table in force in ``vs_currency`` (default: ``vs_currency``)."""
        return self.pricing.snapshot(vs_currency)

    def checkout_url_for(self, root_url: str | None = None, prefix: str | None = None) -> str:
        """The checkout page's address for an invoice created now: ``checkout_url`` if
        configured; else ``{public_url}{prefix}/checkout``, ``public_url`` being the
        configured one, or ``root_url`` (the app's address as the request that creates the
        invoice reached it), or ``http://127.0.0.1:8000`` when neither is known."""
        if self.settings.checkout_url is not None:
            return self.settings.checkout_url
        base = self.settings.public_url or _plain_root(root_url) or LOCAL_ADDRESS
        return f"{base}{self.mount_prefix if prefix is None else prefix}/checkout"

    def create_invoice(
        self,
        owner: str,
        request: NewInvoice | Mapping[str, Any],
        *,
        checkout_url: str | None = None,
    ) -> Invoice:
        """Create and store an invoice for ``owner``, the already authenticated merchant.

        ``request`` is a :class:`~paycore.domain.invoices.NewInvoice`, or for a host app's
        convenience the JSON fields of POST /invoice (``value``, ``chainId``,
        ``description``, ``acceptedTokens``, optional ``deadlineSecs``, ``data``,
        ``address``, ``token``, ``vsCurrency``, ``owner``), read by the same typed request
        layer as the endpoint. Without an ``address``, the owner's next deposit index on the
        chain is allocated and its address derived by the chain's backend. With
        ``rate_lock`` on, the accepted tokens' prices are locked in the same transaction.
        Raises InvalidInput for any bad field, Forbidden for a claimed owner that is not
        ``owner``. The invoice keeps ``checkout_url`` (default: :meth:`checkout_url_for`),
        so its ``paymentUrl`` is the same in this answer and every later event.
        """
        if not isinstance(request, NewInvoice):
            request = self._read_fields(CreateInvoice, request)
        claimed = getattr(request, "owner", None)
        if claimed is not None and normalize_owner(claimed, "owner") != owner:
            raise Forbidden("owner does not match the session key's owner")
        now = self.now()
        with self._storage.transaction() as tx:
            return self._new_invoice(tx, owner, request, now, checkout_url)

    @staticmethod
    def _read_fields(cls: type[T], fields: Mapping[str, Any]) -> T:
        """A host's JSON fields (a POST body's, as a ``Mapping``) read into the typed request
        ``cls`` by the same reader as the endpoint, so a host's call is held to the
        endpoint's rules and errors."""
        return read(cls, fields)

    def _new_invoice(
        self,
        tx: NewInvoiceTx,
        owner: str,
        request: NewInvoice,
        now: int,
        checkout_url: str | None = None,
    ) -> Invoice:
        """Check, store and (``rate_lock``) price-lock a new invoice inside ``tx``: the one
        creation path, which payment links take too."""
        derive = self._deriver(tx, owner)
        invoice = parse_new_invoice(self.settings, request, owner, now, derive)
        invoice = attrs.evolve(invoice, checkout_url=checkout_url or self.checkout_url_for())
        tx.insert_invoice(invoice)
        if self.settings.rate_lock:
            self.pricing.lock_quotes(tx, invoice)
        return invoice

    def _deriver(self, tx: WalletIndexes, owner: str) -> Callable[[int], str] | None:
        def derive(chain_id: int) -> str:
            backend = self.chains.get(chain_id)
            if backend is None:
                raise NoAddressDeriver("address", chain_id, "required")
            refuse_inline()  # a backend may ask its node: not on an event loop
            return backend.deposit_address(
                owner, chain_id, tx.allocate_wallet_index(owner, chain_id)
            )

        return derive

    def get_invoice(self, guid: str) -> Invoice:
        """The invoice, expired first if its deadline has passed (lazy expiry), with its
        refunds."""
        with self._storage.transaction() as tx:
            invoice = tx.get_invoice(guid)
            if invoice is not None:
                invoice = self._with_refunds(tx, [invoice])[0]
        if invoice is None:
            raise InvoiceNotFound(guid)
        if machine.is_due(invoice, self.now()):
            invoice = self._expire(guid) or invoice
        return invoice

    def invoice_view(self, guid: str) -> InvoiceView:
        """The invoice as ``GET /invoice/{guid}`` answers it: one storage statement (none
        of them a write unless the invoice is due to expire: then lazy expiry, as
        :meth:`get_invoice` does it), an entity tag of the stored version, the body
        encoded once per version (``paycore.invoice_views``)."""
        return self.invoice_views.view(guid)

    def detected_of(self, guids: Iterable[str]) -> list[Detected]:
        """The stored detected transfers of these invoices, stale ones included, in one
        read: what the open checkout streams' board compares with what it last read, so
        that 10,000 open invoices cost a few statements every few seconds and not one read
        each (``paycore.realtime.stream_board``)."""
        with self.storage.transaction() as tx:
            return tx.detected_of(list(guids))

    def _view_salt(self) -> str:
        return f"{self._token_salt}:{self.checkout_url_for()}"

    def _expire(self, guid: str) -> Invoice | None:
        """Expire under a row lock, re-checking, so a racing read or sweep emits one event."""
        payloads: list[Json] = []
        with self._storage.transaction() as tx:
            invoice = tx.get_invoice(guid, for_update=True)
            if invoice is None or not machine.is_due(invoice, self.now()):
                return invoice
            invoice = machine.expire(invoice)
            tx.update_invoice(invoice)
            [invoice], payloads = self._announce(tx, [invoice])
        self._notify(invoice.owner, payloads)
        return invoice

    def expire_due(self, limit: int = 500) -> int:
        """The sweeper's pass: expire every overdue invoice so its event need not wait a read."""
        with self._storage.transaction() as tx:
            due = tx.due_for_expiry(self.now(), limit)
        return sum(1 for guid in due if self._expire(guid) is not None)

    def _expired_if_due(self, items: list[Invoice]) -> list[Invoice]:
        now = self.now()
        return [self.get_invoice(i.guid) if machine.is_due(i, now) else i for i in items]

    def record_deposit(self, deposit: Deposit) -> list[Invoice]:
        """Attribute one confirmed deposit by the rules of the watchers' ``ingest``; returns
        the invoice changes it made. Safe to call again for the same deposit.

        A counted deposit with no fresh price (``max_price_age``) is parked, as ingest
        parks it (``paycore.prices.parking``), and so is one to an address where a deposit
        is parked already (each address's deposits count in order); it then returns ``[]``.
        The deposits parked at the address are tried first, every time, so recording one
        again once a price is fresh values it (the chain's watcher retries them too, and
        ``parking.retry_parked`` does for a chain without one). Every error raised is a
        ``PaycoreError`` with a one-line text: ``InvalidInput`` for a malformed deposit,
        ``StorageUnavailable`` while storage is down."""
        deposit = checked_deposit(deposit)
        try:
            return self._record_deposit(deposit)
        except AttributionRace:  # recorded meanwhile by another writer: now it is known
            return self._record_deposit(deposit)

    def _record_deposit(self, deposit: Deposit) -> list[Invoice]:
        with self._storage.transaction() as tx:
            parked = [
                p.deposit
                for p in tx.parked_deposits(deposit.chain_id, 10**9)
                if p.deposit.to == deposit.to
            ]
            was_parked = {transfer_key(p) for p in parked}
            if transfer_key(deposit) not in was_parked:
                parked.append(deposit)  # after the ones parked before it: chain order
            done = attribute_deposits(
                tx, parked, self.pricing, self.settings.underpayment_tolerance
            )
            for settled in done.done:
                if transfer_key(settled) in was_parked:
                    tx.unpark_deposit(settled)
            now = self.now()
            for waiting, reason in done.waiting:
                park_in(tx, ParkedDeposit(waiting, reason, now))
            payloads = self._emit(tx, done.changes)
        self._notify_each(done.changes, payloads)
        return done.changes

    def ingest(self, batch: DepositBatch) -> Ingested:
        """Attribute a batch of one chain's deposits (chain order) in one storage
        transaction: every invoice change with its events and webhook deliveries, the
        deposits parked for want of a price, the range's withdrawals and the cursor move
        (which proves the watcher's lease) commit together or not at all. Raises
        ``LeaseLost`` (nothing written) when another watcher holds the chain now.
        Idempotent like ``record_deposit``: a batch retried counts nothing twice.
        A new withdrawal that pays a pending refund is recorded as that refund's
        transaction, and the refund is confirmed with its invoice's event, in the same
        transaction (``paycore.domain.refunds``)."""
        with self._storage.transaction() as tx:
            done = attribute_deposits(
                tx,
                batch.deposits,
                self.pricing,
                self.settings.underpayment_tolerance,
                waiting=batch.waiting,
                hold=batch.hold,
            )
            now = self.now()
            for deposit, reason in done.waiting:
                park_in(tx, ParkedDeposit(deposit, reason, now))
            finished = done.held is None
            withdrawals: list[Transaction] = []
            changes = done.changes
            if finished and batch.withdrawals:
                records, refunded = refunds_paid(
                    tx, batch.chain_id, batch.withdrawals, self.settings.vs_currency
                )
                written = tx.insert_transactions(records)
                withdrawals = [r for r, new in zip(records, written, strict=True) if new]
                changes = changes + refunded
            payloads = self._emit(tx, changes)
            move = batch.cursor
            if move is not None:
                number, block_hash = move.to if finished and move.to is not None else move.at
                if not tx.advance_chain(
                    batch.chain_id, move.holder, number, block_hash, move.now_ms, move.lease_ms
                ):
                    raise LeaseLost(f"chain {batch.chain_id}: lease lost to another watcher")
        self._notify_each(changes, payloads)
        # After the commit, and only the newly recorded ones: a re-scan mails nobody twice.
        self.notify_transactions(withdrawals)
        return Ingested(
            attributed=len(done.done),
            parked=len(done.waiting),
            held=None if done.held is None else done.held[1],
            withdrawals=len(withdrawals),
            parked_at=frozenset(d.to for d, _reason in done.waiting),
        )

    def revalue_parked(self, alive: Sequence[Deposit], gone: Sequence[Deposit]) -> Ingested:
        """Attribute parked deposits (oldest first) that can be valued now and unpark them,
        and unpark ``gone`` (a reorg removed them), in one transaction; a deposit still
        without a price stays parked, and so does every later one at its address."""
        with self._storage.transaction() as tx:
            for deposit in gone:
                tx.unpark_deposit(deposit)
            done = attribute_deposits(tx, alive, self.pricing, self.settings.underpayment_tolerance)
            for deposit in done.done:
                tx.unpark_deposit(deposit)
            payloads = self._emit(tx, done.changes)
        self._notify_each(done.changes, payloads)
        return Ingested(attributed=len(done.done), parked=len(done.waiting))

    def reorg_deposit(self, record: Transaction) -> list[Invoice]:
        """Take back a recorded deposit whose block a reorg replaced: the invoice's
        paidAmount and status are recomputed and the change goes out as events, in the same
        transaction. Safe to call again for the same deposit (nothing changes)."""
        return self.reorg_deposits([record])

    def reorg_deposits(self, records: Sequence[Transaction]) -> list[Invoice]:
        """``reorg_deposit`` for each record, in one transaction (a deep reorg takes back
        every deposit of the replaced blocks together)."""
        now, tolerance = self.now(), self.settings.underpayment_tolerance
        with self._storage.transaction() as tx:
            changes = [c for record in records for c in reorg_deposit(tx, record, now, tolerance)]
            payloads = self._emit(tx, changes)
        self._notify_each(changes, payloads)
        return changes

    def invoice_wire(self, invoice: Invoice) -> Json:
        """The invoice's JSON record as the interface shows it, ``paymentUrl`` included, and
        ``tokenInfo``: symbol and decimals of the accepted tokens paycore knows without a
        node (``paycore.domain.registry``), so a client shows "25 USDT", not an address."""
        wire = invoice.to_wire(self.checkout_url_for())
        wire["tokenInfo"] = token_info_wire(self.settings, invoice.accepted_tokens)
        return wire

    def _emit(self, tx: AnnounceTx, changes: list[Invoice]) -> list[Json]:
        return self._announce(tx, changes)[1]

    def _announce(
        self, tx: AnnounceTx, changes: list[Invoice], type: EventType | None = None
    ) -> tuple[list[Invoice], list[Json]]:
        """Write one event (and its webhook delivery) per change, in ``tx``; returns the
        changes with their refunds attached, as announced, and the payloads. Each event is
        named ``type``, else by the change the state machine recorded on the invoice
        (``paycore.domain.changes``); the webhook body carries that name as ``type``."""
        named = [str(type or inv.change or EventType.UPDATED) for inv in changes]
        changes = self._with_refunds(tx, changes)
        now = self.now()
        payloads: list[Json] = [
            EventPayload(self.invoice_wire(inv), t) for inv, t in zip(changes, named, strict=True)
        ]
        events = [
            NewEvent(i.owner, i.guid, p, now, t)
            for i, p, t in zip(changes, payloads, named, strict=True)
        ]
        if len(changes) > 1:  # a batch (the watcher's): every event, then every delivery
            ids = tx.add_events(events)
            enqueue_webhooks(tx, list(zip(ids, events, strict=True)), round(self.clock() * 1000))
            return changes, payloads
        for event in events:
            event_id = tx.add_event(event.owner, event.guid, event.payload, now, event.type)
            # Same transaction: the change and its webhook delivery commit together.
            enqueue_webhook(tx, event_id, event, round(self.clock() * 1000))
        return changes, payloads

    def _with_refunds(self, tx: AttachTx, invoices: list[Invoice]) -> list[Invoice]:
        """``invoices`` with their refunds and their detected transfers, read in ``tx`` at
        once. Only an invoice with payments can have been refunded, so the others cost no
        refunds read; the detected transfers are one indexed read by guid."""
        if not invoices:
            return invoices
        wanted = [i.guid for i in invoices if i.payments]
        found: dict[str, list[Refund]] = {}
        if wanted:
            for refund in tx.refunds_of(wanted):
                found.setdefault(refund.guid, []).append(refund)
        detected: dict[str, list[Detected]] = {}
        fresh = self.now() - STALE_AFTER  # older: no watcher keeps it current any more
        for transfer in tx.detected_of([i.guid for i in invoices]):
            if transfer.seen_at >= fresh:
                detected.setdefault(transfer.guid, []).append(transfer)
        return [
            attrs.evolve(
                i,
                refunds=tuple(found.get(i.guid, ())),
                detected=tuple(detected.get(i.guid, ())),
            )
            if i.guid in found or i.refunds or i.guid in detected or i.detected
            else i
            for i in invoices
        ]

    # -- detection (docs/chains.md, Detection) ---------------------------------------------
    def record_detected(
        self, chain_id: int, transfers: Sequence[Deposit], depth: Mapping[int, int], required: int
    ) -> list[Detected]:
        """Make ``transfers`` -- what a watcher's pass found mined in the chain's blocks
        not yet ``required`` deep, ``depth`` giving each block's confirmations -- the
        chain's detected transfers, replacing the last pass's (a transfer a reorg dropped
        or that reached its depth leaves the list). Provisional: no invoice changes, no
        event is written (docs/decisions.md, Detected transfers). Returns what was stored."""
        with self._storage.transaction() as tx:
            found = detected_transfers(tx, chain_id, transfers, depth, required, self.now())
            tx.replace_detected(chain_id, found)
        return found

    def _notify_each(self, changes: list[Invoice], payloads: list[Json]) -> None:
        for inv, payload in zip(changes, payloads, strict=True):
            self._notify(inv.owner, [payload])

    def notify_transactions(self, records: Iterable[Transaction]) -> None:
        """Tell notifiers of transactions recorded outside an invoice change (withdrawals
        the watcher saw), after their commit (``Notifier.transaction_recorded``)."""
        records = list(records)
        if records and self._storage.after_commit(lambda: self.notify_transactions(records)):
            return
        for record in records:
            item = record.to_wire()
            for notifier in self._notifiers:
                try:
                    notifier.transaction_recorded(record.owner, item)
                except Exception:  # the transaction is recorded; a notice is a courtesy
                    log.exception("notifier %s failed", notifier.name)

    def _notify(self, owner: str, payloads: list[Json]) -> None:
        if payloads and self._storage.after_commit(lambda: self._notify(owner, payloads)):
            return  # inside one_transaction(): told once it has committed
        for payload in payloads:
            for notifier in self._notifiers:
                try:
                    notifier.invoice_changed(owner, payload)
                except Exception:  # the outbox still holds the event; never fail the change
                    log.exception("notifier %s failed", notifier.name)

    def on(self, *types: str, name: str | None = None) -> Callable[[Handler], Handler]:
        """Decorator: call the handler after commit for each invoice event of ``types``
        (``invoice.paid``, ``invoice.overpaid``, ...; all when none), at least once, from
        the consumer that ``signal_consumer`` returns (the worker runs one). See
        ``paycore.events.signals``."""
        return self.signals.on(*types, name=name)

    def signal_consumer(self, *more: Signals, **kwargs: Any) -> SignalConsumer:
        """The consumer that calls this gateway's handlers, those of ``paycore.on`` and
        those of ``more`` registries, under leases of ``signal_lease`` seconds."""
        kwargs.setdefault("lease", self.settings.signal_lease)
        return SignalConsumer(self._storage, [self.signals, default_signals, *more], **kwargs)

    def open_queue(self, consumer: str, owner: str) -> None:
        """``Gateway.events.open``, kept for callers that know it here."""
        self.events.open(consumer, owner)

    def close_queue(self, consumer: str) -> None:
        """``Gateway.events.close``, kept for callers that know it here."""
        self.events.close(consumer)

    def drain_events(self, consumer: str) -> list[OutboxEvent]:
        """``Gateway.events.drain``, kept for callers that know it here."""
        return self.events.drain(consumer)


@functools.lru_cache(maxsize=256)
def _plain_root(root_url: str | None) -> str | None:
    """A request's address as a base for links, or None when it is not a plain http(s)
    address (a Host header with a query, spaces or quotes in it does not make links).
    Remembered for the last few addresses: a created invoice asks twice (its checkout
    link, its answer), and every request of a server comes in at the same few."""
    if not root_url:
        return None
    parts = urlsplit(root_url)
    if (
        parts.scheme not in ("http", "https")
        or not parts.netloc
        or parts.query
        or parts.fragment
        or any(c.isspace() or c in "\"'<>\\" for c in root_url)
    ):
        return None
    return root_url.rstrip("/")


__all__ = ["INVOICE_PAGE_MAX", "INVOICE_STREAM_BATCH", "TRANSACTION_PAGE_MAX", "Gateway"]
