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
"""

from __future__ import annotations

import copy
import heapq
import logging
import threading
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import attrs

from ..chains.records import ChainCursor
from ..domain.changes import UPDATED
from ..domain.detected import Detected, DetectedKey
from ..domain.machine import OPEN as _OPEN_STATUSES
from ..domain.paging import TxPosition, tx_position
from ..domain.records import (
    Deposit,
    Invoice,
    Json,
    NewEvent,
    OutboxEvent,
    OutboxRead,
    PollToken,
    PowChallenge,
    Refund,
    RefundStatus,
    SessionKey,
    Transaction,
    TxType,
    WebhookConfig,
)
from ..links.records import LinkUse, PaymentLink
from ..management.records import AppKey, AppKeyAdd, EmailSetting
from ..merchant.profile import MerchantProfile
from ..payouts.records import Payout, PayoutBatch
from ..prices.records import LockedQuote, ParkedDeposit, StoredPrice
from ..webhooks.records import (
    DEFAULT_ENDPOINT,
    ClaimedDelivery,
    Delivery,
    DeliveryAttempt,
    DeliveryStatus,
    NewDelivery,
    Settlement,
    WebhookEndpoint,
)
from .contract import PruneBatch, StorageTx, TransferPlace
from .idempotency import IdempotentAnswer
from .invoice_read import InvoiceRead, read_from
from .memory_idempotency import IdemKey, MemoryIdempotency
from .memory_payouts import MemoryPayouts

log = logging.getLogger("paycore.events")

TxKey = tuple[int, str, int, str]  # (chain_id, tx_hash, log_index, token): one transfer


@attrs.frozen
class _Queue:
    owner: str
    cursor: int  # id of the last event this consumer has been handed


@attrs.frozen
class _DeliveryRow:
    """A delivery as stored: the public record plus its lease."""

    delivery: Delivery
    lease_token: str | None = None
    lease_until: int | None = None


@attrs.frozen
class _LinkRow:
    """A payment link as stored: the record plus its rate window."""

    link: PaymentLink
    window_start: int = 0
    window_opens: int = 0


@attrs.define
class _NonceWindow:
    """One key's accepted messages: the payload digests per nonce, and a min-heap of those
    nonces, so that moving the window costs only what it forgets."""

    by_nonce: dict[int, set[str]] = attrs.field(factory=dict)
    heap: list[int] = attrs.field(factory=list)


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
    payout_batches: dict[str, PayoutBatch] = attrs.field(factory=dict)  # revision 0021
    payouts: dict[tuple[str, int], Payout] = attrs.field(factory=dict)  # (batch, line)
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


def _detached(invoice: Invoice) -> Invoice:
    """A copy whose ``data`` dict is not shared with the caller's, without ``refunds``:
    those are rows of their own, as in a database (``StorageTx.insert_refund``)."""
    return attrs.evolve(
        invoice, data=copy.deepcopy(invoice.data), refunds=(), detected=(), change=None
    )


def _detached_event(event: OutboxEvent) -> OutboxEvent:
    return attrs.evolve(event, payload=copy.deepcopy(event.payload))


def _newest_order(tx: Transaction) -> TxPosition:
    return tx_position(tx)


def _place(tx: Transaction) -> TransferPlace:
    return (tx.timestamp, tx.chain_id, tx.tx_hash, tx.log_index, tx.token)


def _detached_link(link: PaymentLink) -> PaymentLink:
    return attrs.evolve(link, data=copy.deepcopy(link.data))


def _page(items: list[Any], offset: int, limit: int | None) -> list[Any]:
    return items[offset:] if limit is None else items[offset : offset + limit]


def _drop(by_nonce: dict[int, set[str]], nonce: int) -> None:
    by_nonce.pop(nonce, None)


def _forget(used: _NonceWindow, nonce: int) -> Callable[[], None]:
    """Drop the messages at ``nonce`` (already popped from the heap); returns the undo."""
    dropped = used.by_nonce.pop(nonce, None)

    def undo() -> None:
        if dropped is not None:
            used.by_nonce[nonce] = dropped
        heapq.heappush(used.heap, nonce)

    return undo


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

    def read_invoice(self, guid: str) -> InvoiceRead | None:
        with self.transaction() as tx:
            return tx.read_invoice(guid)

    def close(self) -> None:
        """Nothing to release; present because the protocol asks for it."""


class _MemoryTx(MemoryIdempotency, MemoryPayouts):
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

    # -- invoices -------------------------------------------------------------------------
    def insert_invoice(self, invoice: Invoice) -> None:
        if invoice.guid in self._t.invoices:
            raise ValueError(f"invoice {invoice.guid} already exists")
        self._t.invoices[invoice.guid] = _detached(invoice)
        self._t.last_invoice_seq += 1
        self._t.invoice_seq[invoice.guid] = self._t.last_invoice_seq

    def get_invoice(self, guid: str, *, for_update: bool = False) -> Invoice | None:
        invoice = self._t.invoices.get(guid)
        return None if invoice is None else _detached(invoice)

    def read_invoice(self, guid: str) -> InvoiceRead | None:
        invoice = self.get_invoice(guid)
        open_ = invoice is not None and invoice.status in _OPEN_STATUSES
        return read_from(
            invoice, self.refunds_of([guid]), self.detected_of([guid]) if open_ else ()
        )

    def update_invoice(self, invoice: Invoice) -> None:
        """Raises ``KeyError`` for an unknown guid: an update that silently did nothing
        would hide a lost invoice."""
        if invoice.guid not in self._t.invoices:
            raise KeyError(invoice.guid)
        self._t.invoices[invoice.guid] = _detached(invoice)

    def invoices_at_address(
        self, chain_id: int, address: str, *, for_update: bool = False
    ) -> list[Invoice]:
        found, _ = self.list_invoices(chain_id=chain_id, address=address)
        return found

    def invoices_at_addresses(
        self, chain_id: int, addresses: Sequence[str], *, for_update: bool = False
    ) -> dict[str, list[Invoice]]:
        wanted = set(addresses)
        found: dict[str, list[Invoice]] = {}
        for inv in self._t.invoices.values():
            if inv.chain_id == chain_id and inv.address in wanted:
                found.setdefault(inv.address, []).append(inv)
        return {
            address: [_detached(inv) for inv in sorted(items, key=self._created_order)]
            for address, items in sorted(found.items())
        }

    def update_invoice_states(self, records: Sequence[Invoice]) -> None:
        stored = self._t.invoices
        for invoice in records:
            if invoice.guid not in stored:
                raise KeyError(invoice.guid)
            stored[invoice.guid] = attrs.evolve(
                stored[invoice.guid],
                status=invoice.status,
                paid_amount=invoice.paid_amount,
                payments=invoice.payments,
            )

    def list_invoices(
        self,
        *,
        owner: str | None = None,
        chain_id: int | None = None,
        address: str | None = None,
        offset: int = 0,
        limit: int | None = None,
        newest_first: bool = False,
    ) -> tuple[list[Invoice], int]:
        matches = self._matching(owner, chain_id, address)
        matches.sort(key=self._created_order, reverse=newest_first)
        return [_detached(inv) for inv in _page(matches, offset, limit)], len(matches)

    def _created_order(self, invoice: Invoice) -> int:
        return self._t.invoice_seq[invoice.guid]

    def _matching(
        self, owner: str | None, chain_id: int | None, address: str | None
    ) -> list[Invoice]:
        return [
            inv
            for inv in self._t.invoices.values()
            if (owner is None or inv.owner == owner)
            and (chain_id is None or inv.chain_id == chain_id)
            and (address is None or inv.address == address)
        ]

    def invoices_after(
        self,
        *,
        owner: str | None = None,
        chain_id: int | None = None,
        address: str | None = None,
        after: str | None = None,
        limit: int,
        newest_first: bool = False,
    ) -> list[Invoice] | None:
        matches = self._matching(owner, chain_id, address)
        if after is not None:
            bound = self._t.invoice_seq.get(after)
            if bound is None:
                return None
            matches = [
                inv
                for inv in matches
                if (
                    self._created_order(inv) < bound
                    if newest_first
                    else self._created_order(inv) > bound
                )
            ]
        matches.sort(key=self._created_order, reverse=newest_first)
        return [_detached(inv) for inv in matches[:limit]]

    def count_invoices(
        self, *, owner: str | None = None, chain_id: int | None = None, address: str | None = None
    ) -> int:
        return len(self._matching(owner, chain_id, address))

    def due_for_expiry(self, now: int, limit: int) -> list[str]:
        due = [
            inv
            for inv in self._t.invoices.values()
            if inv.status in _OPEN_STATUSES and inv.deadline < now
        ]
        due.sort(key=lambda inv: (inv.deadline, inv.guid))
        return [inv.guid for inv in due[:limit]]

    # -- transactions ---------------------------------------------------------------------
    def insert_transaction(self, tx: Transaction) -> bool:
        known = self._t.transactions.get(tx.key)
        if known is not None and not known.reorged:
            return False
        self._t.transactions[tx.key] = tx
        return True

    def insert_transactions(self, records: Sequence[Transaction]) -> list[bool]:
        return [self.insert_transaction(record) for record in records]

    def known_transfers(self, keys: Sequence[TxKey]) -> set[TxKey]:
        rows = self._t.transactions
        return {key for key in keys if key in rows and not rows[key].reorged}

    def recorded_deposits(self, chain_id: int, from_block: int) -> list[Transaction]:
        found = [
            tx
            for tx in self._t.transactions.values()
            if tx.type is TxType.DEPOSIT
            and tx.chain_id == chain_id
            and tx.block_number is not None
            and tx.block_number >= from_block
            and not tx.reorged
        ]
        found.sort(key=lambda tx: (-(tx.block_number or 0), tx.tx_hash, tx.log_index))
        return found

    def mark_reorged(
        self, chain_id: int, tx_hash: str, log_index: int, token: str
    ) -> Transaction | None:
        key = (chain_id, tx_hash, log_index, token)
        known = self._t.transactions.get(key)
        if known is None or known.reorged:
            return None
        flagged = attrs.evolve(known, reorged=True)
        self._t.transactions[key] = flagged
        return flagged

    def list_transactions(
        self, owner: str, *, chain_id: int | None = None, offset: int = 0, limit: int = 200
    ) -> tuple[list[Transaction], int]:
        matches = self._counted_transactions(owner, chain_id)
        matches.sort(key=_newest_order, reverse=True)
        return _page(matches, offset, limit), len(matches)

    def _counted_transactions(self, owner: str, chain_id: int | None) -> list[Transaction]:
        return [
            tx
            for tx in self._t.transactions.values()
            if tx.owner == owner
            and (chain_id is None or tx.chain_id == chain_id)
            and not tx.reorged
        ]

    def transactions_after(
        self,
        owner: str,
        *,
        chain_id: int | None = None,
        after: TxPosition | None = None,
        limit: int,
        newest_first: bool = True,
    ) -> list[Transaction]:
        matches = self._counted_transactions(owner, chain_id)
        if after is not None:
            matches = [
                tx
                for tx in matches
                if (_newest_order(tx) < after if newest_first else _newest_order(tx) > after)
            ]
        matches.sort(key=_newest_order, reverse=newest_first)
        return matches[:limit]

    def count_transactions(self, owner: str, *, chain_id: int | None = None) -> int:
        return len(self._counted_transactions(owner, chain_id))

    # -- session keys ---------------------------------------------------------------------
    def get_session_key(self, address: str) -> SessionKey | None:
        return self._t.session_keys.get(address)

    def session_keys_of(self, owner: str) -> list[SessionKey]:
        keys = [k for k in self._t.session_keys.values() if k.owner == owner]
        keys.sort(key=lambda k: (k.registered_at, k.address))
        return keys

    def put_session_key(self, key: SessionKey) -> None:
        stored = self._t.session_keys.get(key.address)
        if stored is not None:
            key = attrs.evolve(
                key,
                last_seen_nonce=max(key.last_seen_nonce, stored.last_seen_nonce),
                expires_at=0 if stored.expires_at == 0 else key.expires_at,
            )
        self._t.session_keys[key.address] = key

    def delete_session_key(self, address: str) -> bool:
        self._t.used_nonces.pop(address, None)
        return self._t.session_keys.pop(address, None) is not None

    def advance_nonce(self, address: str, nonce: int) -> bool:
        key = self._t.session_keys.get(address)
        if key is None or key.last_seen_nonce >= nonce:
            return False
        self._t.session_keys[address] = attrs.evolve(key, last_seen_nonce=nonce)
        return True

    def accept_nonce(
        self, address: str, nonce: int, digest: str, *, window: int, strict: bool = False
    ) -> bool:
        key = self._t.session_keys.get(address)
        if key is None:
            return False
        highest = key.last_seen_nonce
        if nonce <= highest - window or (strict and nonce <= highest):
            return False
        used = self._t.used_nonces.get(address)
        if used is None:  # a new entry: the snapshot's restore drops it on rollback
            used = self._t.used_nonces[address] = _NonceWindow()
        digests = used.by_nonce.get(nonce)
        if digests is not None and digest in digests:
            return False
        if digests is None:
            digests = used.by_nonce[nonce] = set()
            heapq.heappush(used.heap, nonce)
            # Undone, the heap entry stays behind and is dropped when the window passes it.
            self._undo.append(lambda: _drop(used.by_nonce, nonce))
        digests.add(digest)
        self._undo.append(lambda: digests.discard(digest))
        highest = max(highest, nonce)
        while used.heap and used.heap[0] <= highest - window:
            self._undo.append(_forget(used, heapq.heappop(used.heap)))
        self._t.session_keys[address] = attrs.evolve(key, last_seen_nonce=highest)
        return True

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
        key = self._t.session_keys.get(address)
        if key is None or not now < key.expires_at:
            return None
        if not self.accept_nonce(address, nonce, digest, window=window, strict=strict):
            return None
        return self._t.session_keys[address]

    # -- smart-wallet deposit indexes -------------------------------------------------------
    def allocate_wallet_index(self, owner: str, chain_id: int) -> int:
        index = self._t.wallet_indexes.get((owner, chain_id), 0)
        self._t.wallet_indexes[(owner, chain_id)] = index + 1
        return index

    # -- proof of work --------------------------------------------------------------------
    def put_challenge(self, challenge: PowChallenge) -> None:
        self._t.challenges[challenge.challenge] = challenge

    def take_challenge(self, challenge: str) -> PowChallenge | None:
        return self._t.challenges.pop(challenge, None)

    # -- salt-signed calls ----------------------------------------------------------------
    def remember_signature(self, digest: str, expires_at: int, *, now: int | None = None) -> bool:
        known_until = self._t.signatures.get(digest)
        current = self._clock() if now is None else now
        if known_until is not None and known_until > current:
            return False
        self._t.signatures[digest] = expires_at
        return True

    # -- webhooks -------------------------------------------------------------------------
    def get_webhook(self, owner: str) -> WebhookConfig | None:
        return self._t.webhooks.get(owner)

    def put_webhook(self, config: WebhookConfig) -> None:
        self._t.webhooks[config.owner] = config

    def delete_webhook(self, owner: str) -> bool:
        return self._t.webhooks.pop(owner, None) is not None

    # -- webhook endpoints ------------------------------------------------------------------
    def put_webhook_endpoint(self, endpoint: WebhookEndpoint) -> None:
        self._t.endpoints[(endpoint.owner, endpoint.id)] = endpoint

    def get_webhook_endpoint(self, owner: str, endpoint_id: str) -> WebhookEndpoint | None:
        return self._t.endpoints.get((owner, endpoint_id))

    def webhook_endpoints(self, owners: Sequence[str]) -> list[WebhookEndpoint]:
        wanted = set(owners)
        found = [e for (owner, _id), e in self._t.endpoints.items() if owner in wanted]
        return sorted(found, key=lambda e: (e.owner, e.id))

    def delete_webhook_endpoint(self, owner: str, endpoint_id: str) -> bool:
        return self._t.endpoints.pop((owner, endpoint_id), None) is not None

    # -- merchant profiles ------------------------------------------------------------------
    def get_merchant_profile(self, owner: str) -> MerchantProfile | None:
        return self._t.merchant_profiles.get(owner)

    def put_merchant_profile(self, profile: MerchantProfile) -> None:
        self._t.merchant_profiles[profile.owner] = profile

    # -- events ---------------------------------------------------------------------------
    def add_event(
        self, owner: str, guid: str, payload: Json, created_at: int, type: str = UPDATED
    ) -> int:
        self._t.last_event_id += 1
        event = OutboxEvent(self._t.last_event_id, owner, guid, payload, created_at, type)
        self._t.events.append(_detached_event(event))
        return event.id

    def add_events(self, events: Sequence[NewEvent]) -> list[int]:
        return [self.add_event(e.owner, e.guid, e.payload, e.created_at, e.type) for e in events]

    def open_queue(self, consumer: str, owner: str) -> None:
        if consumer not in self._t.queues:
            self._t.queues[consumer] = _Queue(owner, self._t.last_event_id)

    def drain_queue(self, consumer: str, cap: int) -> list[OutboxEvent]:
        """An unknown consumer has nothing queued, so it drains to ``[]``."""
        if cap < 1:
            raise ValueError("cap must be at least 1")
        queue = self._t.queues.get(consumer)
        if queue is None:
            return []
        pending = [e for e in self._t.events if e.owner == queue.owner and e.id > queue.cursor]
        if not pending:
            return []
        if len(pending) > cap:
            log.warning(
                "event queue %s over its cap of %d: dropped %d oldest events",
                consumer,
                cap,
                len(pending) - cap,
            )
            pending = pending[-cap:]
        self._t.queues[consumer] = attrs.evolve(queue, cursor=pending[-1].id)
        return [_detached_event(e) for e in pending]

    def close_queue(self, consumer: str) -> None:
        self._t.queues.pop(consumer, None)

    def read_outbox(self, consumer: str, cap: int) -> OutboxRead | None:
        if cap < 1:
            raise ValueError("cap must be at least 1")
        queue = self._t.queues.get(consumer)
        if queue is None:
            return None
        after = [e for e in self._t.events if e.id > queue.cursor][:cap]
        upto = after[-1].id if len(after) == cap else self._t.last_event_id
        return OutboxRead(queue.cursor, [_detached_event(e) for e in after], upto)

    def outbox_since(self, after: int | None, cap: int, owner: str | None = None) -> OutboxRead:
        if cap < 1:
            raise ValueError("cap must be at least 1")
        if after is None:
            return OutboxRead(self._t.last_event_id, [], self._t.last_event_id)
        found = [e for e in self._t.events if e.id > after and (owner is None or e.owner == owner)][
            :cap
        ]
        upto = found[-1].id if len(found) == cap else max(after, self._t.last_event_id)
        return OutboxRead(after, [_detached_event(e) for e in found], upto)

    def move_queue(self, consumer: str, start: int, to: int) -> bool:
        queue = self._t.queues.get(consumer)
        if queue is None or queue.cursor != start:
            return False
        self._t.queues[consumer] = attrs.evolve(queue, cursor=to)
        return True

    # -- host-signal leases ----------------------------------------------------------------
    def claim_signal(self, consumer: str, holder: str, now: int, lease_ms: int) -> bool:
        held, until = self._t.signal_leases.get(consumer, (None, 0))
        if held not in (None, holder) and until > now:
            return False
        self._t.signal_leases[consumer] = (holder, now + lease_ms)
        return True

    def move_signal(
        self, consumer: str, holder: str, start: int, to: int, now: int, lease_ms: int
    ) -> bool:
        held, _until = self._t.signal_leases.get(consumer, (None, 0))
        if held != holder:
            return False
        self._t.signal_leases[consumer] = (holder, now + lease_ms)
        return self.move_queue(consumer, start, to)

    def release_signal(self, consumer: str, holder: str) -> None:
        held, _until = self._t.signal_leases.get(consumer, (None, 0))
        if held == holder:
            self._t.signal_leases[consumer] = (None, 0)

    # -- webhook deliveries -----------------------------------------------------------------
    def enqueue_delivery(
        self, event_id: int, owner: str, guid: str, webhook_id: str, body: str, now: int
    ) -> int | None:
        config = self._t.webhooks.get(owner)
        if config is None or not config.url:
            return None
        return self._queue_delivery(NewDelivery(event_id, owner, guid, webhook_id, body, now))

    def _queue_delivery(self, new: NewDelivery) -> int:
        now = new.now
        self._t.last_delivery_id += 1
        delivery = Delivery(
            id=self._t.last_delivery_id,
            webhook_id=new.webhook_id,
            event_id=new.event_id,
            owner=new.owner,
            guid=new.guid,
            body=new.body,
            status=DeliveryStatus.PENDING,
            attempts=0,
            created_at=now,
            next_attempt_at=now,
            retry_from=now,
            endpoint_id=new.endpoint_id,
        )
        self._t.deliveries[delivery.id] = _DeliveryRow(delivery)
        return delivery.id

    def enqueue_deliveries(self, deliveries: Sequence[NewDelivery]) -> int:
        queued = [
            self._queue_delivery(d)
            if d.endpoint_id is not None
            else self.enqueue_delivery(d.event_id, d.owner, d.guid, d.webhook_id, d.body, d.now)
            for d in deliveries
        ]
        return sum(1 for delivery_id in queued if delivery_id is not None)

    def claim_deliveries(
        self,
        now: int,
        lease_ms: int,
        token: str,
        limit: int,
        *,
        skip_owners: Collection[str] = (),
        skip_urls: Collection[str] = (),
    ) -> list[ClaimedDelivery]:
        """The lock held for the whole transaction is what makes the claim exclusive."""
        skipped_owners = set(skip_owners)
        skipped_urls = set(skip_urls)
        earliest_pending: dict[tuple[str, str | None], int] = {}
        for row in self._t.deliveries.values():  # ascending id, so the first seen is lowest
            if row.delivery.status is DeliveryStatus.PENDING:
                key = (row.delivery.guid, row.delivery.endpoint_id)
                earliest_pending.setdefault(key, row.delivery.id)
        due = [
            row
            for row in self._t.deliveries.values()
            if row.delivery.status is DeliveryStatus.PENDING
            and earliest_pending[(row.delivery.guid, row.delivery.endpoint_id)] == row.delivery.id
            and (row.delivery.next_attempt_at or 0) <= now
            and (row.lease_until is None or row.lease_until <= now)
            and row.delivery.owner not in skipped_owners
            and not (skipped_urls and self._target_url(row.delivery) in skipped_urls)
        ]
        due.sort(key=lambda row: (row.delivery.next_attempt_at or 0, row.delivery.id))
        claimed: list[ClaimedDelivery] = []
        for row in due[:limit]:
            delivery = attrs.evolve(row.delivery, attempts=row.delivery.attempts + 1)
            self._t.deliveries[delivery.id] = _DeliveryRow(delivery, token, now + lease_ms)
            config = self._target(delivery)
            claimed.append(
                ClaimedDelivery(
                    id=delivery.id,
                    webhook_id=delivery.webhook_id,
                    owner=delivery.owner,
                    guid=delivery.guid,
                    body=delivery.body,
                    attempts=delivery.attempts,
                    retry_from=delivery.retry_from,
                    lease_token=token,
                    lease_until=now + lease_ms,
                    url=config.url if config else "",
                    secret=config.secret if config else "",
                    endpoint_id=delivery.endpoint_id,
                )
            )
        return claimed

    def _target_url(self, delivery: Delivery) -> str:
        target = self._target(delivery)
        return target.url if target is not None else ""

    def _target(self, delivery: Delivery) -> WebhookConfig | WebhookEndpoint | None:
        """Where ``delivery`` goes now: its endpoint while enabled, else the owner's URL."""
        if delivery.endpoint_id is None:
            return self._t.webhooks.get(delivery.owner)
        endpoint = self._t.endpoints.get((delivery.owner, delivery.endpoint_id))
        return endpoint if endpoint is not None and endpoint.enabled else None

    def finish_delivery(
        self, delivery_id: int, token: str, attempt: DeliveryAttempt, settlement: Settlement
    ) -> bool:
        self._t.attempts.append(attempt)
        row = self._t.deliveries.get(delivery_id)
        if row is None or row.lease_token != token:
            return False
        next_at = settlement.next_at if settlement.status is DeliveryStatus.PENDING else None
        delivery = attrs.evolve(row.delivery, status=settlement.status, next_attempt_at=next_at)
        self._t.deliveries[delivery_id] = _DeliveryRow(delivery)
        return True

    def list_deliveries(
        self,
        owner: str,
        *,
        status: DeliveryStatus | None = None,
        guid: str | None = None,
        offset: int = 0,
        limit: int = 50,
        endpoint_id: str | None = None,
    ) -> tuple[list[Delivery], int]:
        matches = [
            row.delivery
            for row in reversed(self._t.deliveries.values())
            if row.delivery.owner == owner
            and (status is None or row.delivery.status is status)
            and (guid is None or row.delivery.guid == guid)
            and (
                endpoint_id is None or (row.delivery.endpoint_id or DEFAULT_ENDPOINT) == endpoint_id
            )
        ]
        page = _page(matches, offset, limit)
        wanted = {d.id for d in page}
        logs: dict[int, list[DeliveryAttempt]] = {}
        for attempt in self._t.attempts:
            if attempt.delivery_id in wanted:
                logs.setdefault(attempt.delivery_id, []).append(attempt)
        return [attrs.evolve(d, log=tuple(logs.get(d.id, ()))) for d in page], len(matches)

    def redeliver(self, delivery_id: int, owner: str, now: int) -> Delivery | None:
        row = self._t.deliveries.get(delivery_id)
        if row is None or row.delivery.owner != owner:
            return None
        delivery = attrs.evolve(
            row.delivery,
            status=DeliveryStatus.PENDING,
            attempts=0,
            next_attempt_at=now,
            retry_from=now,
        )
        self._t.deliveries[delivery_id] = attrs.evolve(row, delivery=delivery)
        return delivery

    def redeliver_failed(self, owner: str, since: int, now: int) -> int:
        failed = [
            row.delivery.id
            for row in self._t.deliveries.values()
            if row.delivery.owner == owner
            and row.delivery.status is DeliveryStatus.FAILED
            and row.delivery.created_at >= since
        ]
        for delivery_id in failed:
            self.redeliver(delivery_id, owner, now)
        return len(failed)

    # -- accounting export ----------------------------------------------------------------
    def export_invoices(
        self,
        owner: str,
        *,
        start: int,
        end: int | None,
        after: tuple[int, str] | None,
        limit: int,
    ) -> list[Invoice]:
        found = [
            inv
            for inv in self._t.invoices.values()
            if inv.owner == owner
            and inv.created_at >= start
            and (end is None or inv.created_at < end)
            and (after is None or (inv.created_at, inv.guid) > after)
        ]
        found.sort(key=lambda inv: (inv.created_at, inv.guid))
        return [_detached(inv) for inv in found[:limit]]

    def export_transactions(
        self,
        owner: str,
        kind: TxType,
        *,
        start: int,
        end: int | None,
        after: TransferPlace | None,
        limit: int,
    ) -> list[Transaction]:
        found = [
            tx
            for tx in self._t.transactions.values()
            if tx.owner == owner
            and tx.type is kind
            and not tx.reorged
            and tx.timestamp >= start
            and (end is None or tx.timestamp < end)
            and (after is None or _place(tx) > after)
        ]
        found.sort(key=_place)
        return found[:limit]

    # -- retention ------------------------------------------------------------------------
    def prune_events(
        self, created_before: int, queue_cap: int, after: int, limit: int
    ) -> PruneBatch:
        events = self._t.events
        batch = [e for e in events if e.id > after][:limit]
        old = []
        for event in batch:
            if event.created_at >= created_before:
                break
            old.append(event)
        young_met = len(old) < len(batch)
        cursors: dict[str, int] = {}  # owner -> the lowest cursor of its queues
        for queue in self._t.queues.values():
            cursors[queue.owner] = min(queue.cursor, cursors.get(queue.owner, queue.cursor))
        floors: dict[str, int] = {}  # owner -> id of its queue_cap-th newest event

        def still_queued(event: OutboxEvent) -> bool:
            cursor = cursors.get(event.owner)
            if cursor is None or event.id <= cursor:
                return False
            if event.owner not in floors:
                ids = [e.id for e in events if e.owner == event.owner]
                floors[event.owner] = ids[-queue_cap] if len(ids) >= queue_cap else 0
            return event.id >= floors[event.owner]

        doomed = {e.id for e in old if not still_queued(e)}
        if doomed:
            self._t.events = [e for e in events if e.id not in doomed]
        done = young_met or len(batch) < limit
        return PruneBatch(len(doomed), None if done else batch[-1].id)

    def prune_deliveries(self, settled_before: int, after: int, limit: int) -> PruneBatch:
        rows = [row for row in self._t.deliveries.values() if row.delivery.id > after][:limit]
        last_attempt: dict[int, int] = {}
        for attempt in self._t.attempts:
            at = last_attempt.get(attempt.delivery_id, attempt.attempted_at)
            last_attempt[attempt.delivery_id] = max(at, attempt.attempted_at)
        doomed: set[int] = set()
        young_met = False
        for row in rows:
            delivery = row.delivery
            if delivery.created_at >= settled_before:
                young_met = True
                break
            if (
                delivery.status is not DeliveryStatus.PENDING
                and delivery.retry_from < settled_before
                and last_attempt.get(delivery.id, 0) < settled_before
            ):
                doomed.add(delivery.id)
        for delivery_id in doomed:
            del self._t.deliveries[delivery_id]
        if doomed:
            self._t.attempts = [a for a in self._t.attempts if a.delivery_id not in doomed]
        done = young_met or len(rows) < limit
        return PruneBatch(len(doomed), None if done else rows[-1].delivery.id)

    def prune_signatures(self, expired_before: int, limit: int) -> int:
        signatures = self._t.signatures
        doomed = [d for d, expires in signatures.items() if expires < expired_before][:limit]
        for digest in doomed:
            del signatures[digest]
        return len(doomed)

    def prune_challenges(self, expired_before: int, limit: int) -> int:
        challenges = self._t.challenges
        doomed = [k for k, c in challenges.items() if c.expires_at < expired_before][:limit]
        for key in doomed:
            del challenges[key]
        return len(doomed)

    # -- legacy poll tokens ---------------------------------------------------------------
    def put_poll_token(self, token: PollToken) -> None:
        self._t.poll_tokens[token.token] = token

    def get_poll_token(self, token: str) -> PollToken | None:
        return self._t.poll_tokens.get(token)

    # -- chain watchers -------------------------------------------------------------------
    def claim_chain(
        self, chain_id: int, holder: str, now: int, lease_ms: int
    ) -> ChainCursor | None:
        row = self._t.chain_cursors.get(chain_id) or ChainCursor(chain_id, None, None)
        if row.holder not in (None, holder) and row.lease_until > now:
            return None
        row = attrs.evolve(row, holder=holder, lease_until=now + lease_ms)
        self._t.chain_cursors[chain_id] = row
        return row

    def advance_chain(
        self,
        chain_id: int,
        holder: str,
        block_number: int,
        block_hash: str | None,
        now: int,
        lease_ms: int,
    ) -> bool:
        row = self._t.chain_cursors.get(chain_id)
        if row is None or row.holder != holder:
            return False
        self._t.chain_cursors[chain_id] = attrs.evolve(
            row, block_number=block_number, block_hash=block_hash, lease_until=now + lease_ms
        )
        return True

    def release_chain(self, chain_id: int, holder: str) -> None:
        row = self._t.chain_cursors.get(chain_id)
        if row is not None and row.holder == holder:
            self._t.chain_cursors[chain_id] = attrs.evolve(row, holder=None, lease_until=0)

    def get_chain_cursor(self, chain_id: int) -> ChainCursor | None:
        return self._t.chain_cursors.get(chain_id)

    def watched_addresses(self, chain_id: int, deadline_after: int) -> list[str]:
        return sorted(
            {
                inv.address
                for inv in self._t.invoices.values()
                if inv.chain_id == chain_id
                and (inv.status in _OPEN_STATUSES or inv.deadline >= deadline_after)
            }
        )

    def earliest_watched(self, chain_id: int, deadline_after: int) -> int | None:
        return min(
            (
                inv.created_at
                for inv in self._t.invoices.values()
                if inv.chain_id == chain_id
                and (inv.status in _OPEN_STATUSES or inv.deadline >= deadline_after)
            ),
            default=None,
        )

    # -- owner management -----------------------------------------------------------------
    def owner_is_known(self, owner: str) -> bool:
        t = self._t
        return (
            any(inv.owner == owner for inv in t.invoices.values())
            or any(key.owner == owner for key in t.session_keys.values())
            or owner in t.webhooks
            or any(o == owner for o, _id in t.endpoints)
            or owner in t.merchant_profiles
            or any(key.owner == owner for key in t.app_keys.values())
            or any(o == owner for o, _chain in t.emails)
            or any(o == owner for o, _chain in t.wallet_indexes)
        )

    def get_app_key(self, address: str) -> AppKey | None:
        return self._t.app_keys.get(address)

    def app_keys_of(self, owner: str) -> list[AppKey]:
        keys = [k for k in self._t.app_keys.values() if k.owner == owner]
        keys.sort(key=lambda k: (k.added_at, k.address))
        return keys

    def add_app_key(self, key: AppKey, cap: int) -> AppKeyAdd:
        existing = self._t.app_keys.get(key.address)
        if existing is not None:
            return AppKeyAdd.EXISTS if existing.owner == key.owner else AppKeyAdd.TAKEN
        if len(self.app_keys_of(key.owner)) >= cap:
            return AppKeyAdd.FULL
        self._t.app_keys[key.address] = key
        return AppKeyAdd.ADDED

    def remove_app_key(self, owner: str, address: str) -> bool:
        existing = self._t.app_keys.get(address)
        if existing is None or existing.owner != owner:
            return False
        del self._t.app_keys[address]
        return True

    def get_email(self, owner: str, chain_id: int) -> EmailSetting | None:
        return self._t.emails.get((owner, chain_id))

    def emails_of(self, owner: str) -> list[EmailSetting]:
        return sorted(
            (s for (o, _c), s in self._t.emails.items() if o == owner), key=lambda s: s.chain_id
        )

    def put_email(self, setting: EmailSetting) -> None:
        self._t.emails[(setting.owner, setting.chain_id)] = setting

    def delete_email(self, owner: str, chain_id: int) -> bool:
        return self._t.emails.pop((owner, chain_id), None) is not None

    def enable_emails(
        self, owner: str, chain_id: int | None, enabled: bool, now: int
    ) -> list[EmailSetting]:
        changed: list[EmailSetting] = []
        for setting in self.emails_of(owner):
            if chain_id is not None and setting.chain_id != chain_id:
                continue
            stamp = setting.enabled_at if setting.enabled and enabled else now
            updated = attrs.evolve(setting, enabled=enabled, enabled_at=stamp if enabled else None)
            self._t.emails[(owner, setting.chain_id)] = updated
            changed.append(updated)
        return changed

    def set_wallet_index_disabled(
        self, owner: str, chain_id: int, index: int, disabled: bool, now: int
    ) -> bool:
        current = self._t.disabled_indexes.get((owner, chain_id), frozenset())
        wanted = current | {index} if disabled else current - {index}
        if wanted == current:
            return False
        self._t.disabled_indexes[(owner, chain_id)] = wanted
        return True

    def disabled_wallet_indexes(self, owner: str, chain_id: int) -> list[int]:
        return sorted(self._t.disabled_indexes.get((owner, chain_id), ()))

    def claim_notice(self, key: str, now: int) -> bool:
        if key in self._t.notices:
            return False
        self._t.notices.add(key)
        return True

    # -- payment links ------------------------------------------------------------------------
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

    # -- prices -----------------------------------------------------------------------------
    def put_prices(self, rows: Sequence[StoredPrice]) -> None:
        for row in rows:
            self._t.prices[(row.vs_currency, row.token)] = row

    def get_prices(self, vs_currency: str | None = None) -> list[StoredPrice]:
        return [
            row
            for key, row in sorted(self._t.prices.items())
            if vs_currency is None or key[0] == vs_currency
        ]

    def get_price(self, token: str, vs_currency: str) -> StoredPrice | None:
        return self._t.prices.get((vs_currency, token))

    def put_quotes(self, quotes: Sequence[LockedQuote]) -> None:
        for quote in quotes:
            self._t.quotes[(quote.guid, quote.token)] = quote

    def get_quotes(self, guid: str) -> list[LockedQuote]:
        return [q for (g, _t), q in sorted(self._t.quotes.items()) if g == guid]

    def get_quotes_of(self, guids: Sequence[str]) -> list[LockedQuote]:
        wanted = set(guids)
        return [q for (g, _t), q in sorted(self._t.quotes.items()) if g in wanted]

    def park_deposit(self, parked: ParkedDeposit) -> bool:
        d = parked.deposit
        key = (d.chain_id, d.tx_hash, d.log_index, d.token)
        if key in self._t.parked:
            return False
        self._t.parked[key] = parked
        return True

    def parked_deposits(self, chain_id: int, limit: int) -> list[ParkedDeposit]:
        found = [p for key, p in self._t.parked.items() if key[0] == chain_id]
        return found[:limit]

    def unpark_deposit(self, deposit: Deposit) -> bool:
        key = (deposit.chain_id, deposit.tx_hash, deposit.log_index, deposit.token)
        return self._t.parked.pop(key, None) is not None

    def parked_tokens(self) -> list[str]:
        return sorted({f"{key[0]}:{key[3]}" for key in self._t.parked})

    # -- refunds ------------------------------------------------------------------------------
    def insert_refund(self, refund: Refund) -> None:
        if refund.id in self._t.refunds:
            raise ValueError(f"refund {refund.id} already exists")
        self._t.refunds[refund.id] = refund

    def get_refund(self, refund_id: str) -> Refund | None:
        return self._t.refunds.get(refund_id)

    def refunds_of(self, guids: Sequence[str]) -> list[Refund]:
        wanted = set(guids)
        found = [r for r in self._t.refunds.values() if r.guid in wanted]
        order = {guid: n for n, guid in enumerate(sorted(wanted))}
        return sorted(found, key=lambda r: order[r.guid])  # stable: insertion order kept

    def pending_refunds(self, chain_id: int, owners: Sequence[str]) -> list[Refund]:
        wanted = set(owners)
        return [
            r
            for r in self._t.refunds.values()
            if r.chain_id == chain_id and r.status is RefundStatus.PENDING and r.owner in wanted
        ]

    def settle_refund(self, refund: Refund) -> bool:
        stored = self._t.refunds.get(refund.id)
        if stored is None or stored.status is not RefundStatus.PENDING:
            return False
        self._t.refunds[refund.id] = attrs.evolve(
            stored,
            status=refund.status,
            tx_hash=refund.tx_hash,
            log_index=refund.log_index,
            settled_at=refund.settled_at,
        )
        return True

    # -- detected transfers -------------------------------------------------------------------
    def replace_detected(self, chain_id: int, found: Sequence[Detected]) -> None:
        rows = {d.key: d for d in found if d.chain_id == chain_id}
        if rows:
            self._t.detected[chain_id] = rows
        else:
            self._t.detected.pop(chain_id, None)

    def detected_of(self, guids: Sequence[str]) -> list[Detected]:
        wanted = set(guids)
        found = [d for rows in self._t.detected.values() for d in rows.values() if d.guid in wanted]
        return sorted(
            found, key=lambda d: (d.guid, d.block_number, d.tx_hash, d.log_index, d.token)
        )
