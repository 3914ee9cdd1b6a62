"""What the core needs from storage, as a typed Protocol; implementations are plugins.

Every change the core makes goes through one unit of work, ``with storage.transaction() as tx``:
the invoice update, the payment's transaction row and the outbox event commit together or not
at all. Implementations must make each method below safe under concurrent transactions from
several threads and processes (row locks / atomic statements), because the core relies on it:

- ``advance_nonce`` is one compare-and-set: of N parallel calls with the same nonce, one wins.
- ``accept_nonce`` and ``spend_nonce`` record a (key, nonce, digest) once: of N parallel
  calls with the same triple, one wins, and the key's highest nonce only moves up.
- ``insert_transaction`` is idempotent on (chain_id, tx_hash, log_index, token): a deposit seen
  twice, by two threads or after a restart, is counted once; ``mark_reorged`` flags a row
  once, so a deposit a reorg removed is taken back out once.
- ``get_invoice(for_update=True)`` / ``invoices_at_address(for_update=True)`` lock the rows until
  the transaction ends, so two attributions to one invoice serialise.
- ``allocate_wallet_index`` never hands out the same index twice for an (owner, chain).
- ``take_challenge`` and ``remember_signature`` succeed once per value.
- ``claim_deliveries`` hands a due webhook delivery to one claimant at a time, and only the
  earliest pending delivery of an invoice (see the webhook deliveries section below).
- ``claim_chain`` gives a chain's scanning lease to one holder at a time, and
  ``advance_chain`` moves the cursor only while that holder still has it.
- ``settle_refund`` moves a refund out of ``pending`` once: of concurrent settles, one wins.
- ``claim_signal`` gives a host-signal queue's lease to one holder at a time, and
  ``move_signal`` moves that queue's position only while that holder still has it.

Addresses and owners arrive already normalised (checksummed / base58); storage compares them
as plain strings. Exceptions raised inside the ``with`` block roll everything back.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from contextlib import AbstractContextManager
from typing import Protocol, cast, runtime_checkable

import attrs

from ..chains.records import ChainCursor
from ..domain.changes import UPDATED
from ..domain.detected import Detected
from ..domain.paging import TxPosition
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
    SessionKey,
    Transaction,
    TxType,
    WebhookConfig,
)
from ..links.records import LinkUse, PaymentLink
from ..management.records import AppKey, AppKeyAdd, EmailSetting
from ..merchant.profile import MerchantProfile
from ..prices.records import LockedQuote, ParkedDeposit, StoredPrice
from ..webhooks.records import (
    ClaimedDelivery,
    Delivery,
    DeliveryAttempt,
    DeliveryStatus,
    NewDelivery,
    Settlement,
    WebhookEndpoint,
)
from .idempotency import IdempotencyKeys
from .invoice_read import InvoiceRead
from .payouts import PayoutStore

#: (chain_id, tx_hash, log_index, token): one transfer, the transaction rows' unique key.
TransferKey = tuple[int, str, int, str]
#: (timestamp, chain_id, tx_hash, log_index, token): a transaction row's place in the
#: export's order, and where the next batch starts after.
TransferPlace = tuple[int, int, str, int, str]


@attrs.frozen
class PruneBatch:
    """What one batch of ``prune_events`` / ``prune_deliveries`` did.

    ``resume_after`` is the id the next batch starts after, or ``None`` when this round has
    nothing more to look at: the batch reached rows too young to prune (ids follow creation
    time, so everything after them is younger still) or the end of the table.
    """

    deleted: int
    resume_after: int | None


class StorageTx(IdempotencyKeys, PayoutStore, Protocol):
    """One open unit of work: what ``Storage.transaction()`` yields.

    Everything done through one ``StorageTx`` commits together when the ``with`` block ends
    normally, and is rolled back when it raises. Reads see this transaction's own writes.
    The concurrency duties of the module docstring apply to every method below.
    """

    # -- invoices -------------------------------------------------------------------------
    def insert_invoice(self, invoice: Invoice) -> None:
        """Store a new invoice; a duplicate guid raises ``ValueError``."""

    def get_invoice(self, guid: str, *, for_update: bool = False) -> Invoice | None:
        """The invoice ``guid``, or ``None`` if there is none.

        With ``for_update=True`` the invoice's row is locked until this transaction ends
        (PostgreSQL: ``SELECT ... FOR UPDATE``; SQLite and the memory storage run whole
        transactions one at a time, which is stronger): another transaction that asks for
        the same lock waits, so a read, a decision and the ``update_invoice`` that follows
        are one step. The core relies on it
        to attribute two deposits to one invoice, or a deposit and an expiry, one after the
        other, never both from the same stale record. Without it, a plain read.
        """

    def read_invoice(self, guid: str) -> InvoiceRead | None:
        """The invoice ``guid`` with its refunds, as ``Storage.read_invoice`` reads it
        (the same ``version`` for the same stored state), inside this transaction."""

    def update_invoice(self, invoice: Invoice) -> None:
        """Replace the stored invoice with the same guid (status, paid_amount, payments...)."""

    def invoices_at_address(
        self, chain_id: int, address: str, *, for_update: bool = False
    ) -> list[Invoice]:
        """Every invoice whose deposit address is ``address`` on ``chain_id``, oldest first
        (creation order, as ``list_invoices``)."""

    def invoices_at_addresses(
        self, chain_id: int, addresses: Sequence[str], *, for_update: bool = False
    ) -> dict[str, list[Invoice]]:
        """``invoices_at_address`` for many addresses in one read (the watcher's batch):
        each address that has invoices maps to them, oldest first (creation order); the
        others are absent. ``for_update`` locks every row returned, taken in (address,
        creation order) order, so two batches that share addresses queue rather than
        deadlock."""

    def update_invoice_states(self, records: Sequence[Invoice]) -> None:
        """Store the state of each invoice -- ``status``, ``paid_amount``, ``payments``,
        what deposits, reorgs and deadlines change; every other field is fixed at creation
        -- in one round trip where the database allows. Raises ``KeyError`` for an unknown
        guid, as ``update_invoice`` does."""

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
        """A page of matching invoices in creation order (the order ``insert_invoice`` was
        called in, even within one second; newest first when asked) and the match count
        (``count_invoices``). Skipping ``offset`` rows should cost no more than reading
        the index it orders by."""

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
        """A keyset page: up to ``limit`` matching invoices that follow the invoice with guid
        ``after`` in creation order (older ones when ``newest_first``), from either end of
        the order when ``after`` is None; ``None`` when there is no invoice ``after``. Costs
        the rows it returns, not the rows before them."""

    def count_invoices(
        self, *, owner: str | None = None, chain_id: int | None = None, address: str | None = None
    ) -> int:
        """How many invoices match. By owner (and chain), without reading the invoices: from
        counts the inserting transactions keep, which give the same answer as counting."""

    def due_for_expiry(self, now: int, limit: int) -> list[str]:
        """Guids of init/partialPaid invoices whose deadline is before ``now``."""

    # -- transactions (GET /transactions) ------------------------------------------------
    def insert_transaction(self, tx: Transaction) -> bool:
        """Record a deposit or withdrawal; ``False`` (and nothing written) if already known.
        A known row marked ``reorged`` is the one exception: the transfer was mined again,
        and ``tx`` replaces that row (``True``), atomically, so it is counted once more."""

    def insert_transactions(self, records: Sequence[Transaction]) -> list[bool]:
        """``insert_transaction`` for each record, in order (one round trip for the new ones
        where the database allows); returns, per record, whether it was written. The
        counts of ``count_transactions`` follow exactly as for one insert at a time."""

    def known_transfers(self, keys: Sequence[TransferKey]) -> set[TransferKey]:
        """Which of these transfers (chain_id, tx_hash, log_index, token) have a stored row
        not flagged ``reorged``: those ``insert_transaction`` would refuse."""

    def list_transactions(
        self, owner: str, *, chain_id: int | None = None, offset: int = 0, limit: int = 200
    ) -> tuple[list[Transaction], int]:
        """Newest first (timestamp, then tx_hash, log_index, chain_id, token: the
        ``paycore.domain.paging.TxPosition`` order), and the match count
        (``count_transactions``). Rows marked ``reorged`` are left out: their transfers are
        not on the chain."""

    def transactions_after(
        self,
        owner: str,
        *,
        chain_id: int | None = None,
        after: TxPosition | None = None,
        limit: int,
        newest_first: bool = True,
    ) -> list[Transaction]:
        """A keyset page of ``list_transactions``' rows: up to ``limit`` that come after the
        position ``after`` in that order (before it, oldest first, when not
        ``newest_first``), from either end when ``after`` is None."""

    def count_transactions(self, owner: str, *, chain_id: int | None = None) -> int:
        """How many of ``owner``'s transactions ``list_transactions`` shows, from counts the
        recording transactions keep (inserts, reorg flags, revivals), not by counting."""

    def recorded_deposits(self, chain_id: int, from_block: int) -> list[Transaction]:
        """The deposits of ``chain_id`` recorded in blocks ``from_block`` and later (rows with
        a block number, not reorged), newest block first, then tx_hash, log_index."""

    def mark_reorged(
        self, chain_id: int, tx_hash: str, log_index: int, token: str
    ) -> Transaction | None:
        """Flag that transfer's row ``reorged`` and return it as flagged; ``None`` when there
        is no such row or it is flagged already. Atomic: of concurrent calls, one gets it."""

    # -- session keys -------------------------------------------------------------------
    def get_session_key(self, address: str) -> SessionKey | None:
        """The session key whose Ethereum address is ``address`` (expired or deregistered
        ones included: their nonce counter must outlive them), or ``None``."""

    def session_keys_of(self, owner: str) -> list[SessionKey]:
        """All keys of ``owner`` (expired ones included), oldest registration first."""

    def put_session_key(self, key: SessionKey) -> None:
        """Insert, or replace the key with the same ``address`` -- except that a stored
        ``last_seen_nonce`` is never lowered and a deregistered key (``expires_at == 0``)
        stays deregistered, so a write based on a read that a concurrent request or
        deregistration has since overtaken cannot reopen replays or revive the key."""

    def delete_session_key(self, address: str) -> bool:
        """Remove the key with this ``address``; ``False`` if there was none."""

    def advance_nonce(self, address: str, nonce: int) -> bool:
        """Atomically set last_seen_nonce = nonce where last_seen_nonce < nonce."""

    def accept_nonce(
        self, address: str, nonce: int, digest: str, *, window: int, strict: bool = False
    ) -> bool:
        """Accept a signed message once: record (address, nonce, digest) as used and raise
        the key's ``last_seen_nonce`` to ``nonce`` if it is higher, atomically.

        Returns ``False`` and changes nothing when the key is unknown, the triple was
        already recorded, ``nonce <= last_seen_nonce - window``, or (``strict``)
        ``nonce <= last_seen_nonce``. Recorded triples at or below the new
        ``last_seen_nonce - window`` are forgotten, since that bound refuses them anyway;
        what stays is at most what the key signed within the window. A store that starts
        recording while keys already have nonces must also refuse every nonce at or below
        the ``last_seen_nonce`` of that moment (``paycore_storage`` keeps it as a floor),
        because nothing says which of them were used."""

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
        """What a signed request asks of storage, in one step: ``accept_nonce`` for a key
        that is active at ``now`` (``now < expires_at``, so never a deregistered one), and
        the key as it stands afterwards -- owner, encryption key, raised ``last_seen_nonce``.

        ``None`` when the key is unknown or not active, or ``accept_nonce`` would refuse;
        nothing the contract exposes has changed then, and the caller refuses the request
        (it may read the key to say why). The same atomicity as ``accept_nonce``: of N
        parallel calls with one triple, one gets the key. Stores make it as few statements
        as the database allows (``paycore_storage``: one on PostgreSQL), because every
        signed request pays for it."""

    # -- smart-wallet deposit indexes -------------------------------------------------------
    def allocate_wallet_index(self, owner: str, chain_id: int) -> int:
        """The owner's next unused index on the chain: 0, 1, 2, ..."""

    # -- proof of work --------------------------------------------------------------------
    def put_challenge(self, challenge: PowChallenge) -> None:
        """Store a proof-of-work challenge issued by POST /invoice/challenge until it is
        taken or expires."""

    def take_challenge(self, challenge: str) -> PowChallenge | None:
        """Remove and return it; a second take of the same challenge returns ``None``."""

    # -- salt-signed calls ----------------------------------------------------------------
    def remember_signature(self, digest: str, expires_at: int, *, now: int | None = None) -> bool:
        """``True`` the first time ``digest`` is seen, ``False`` ever after (until expiry).

        ``now`` is the caller's clock, the one its ``expires_at`` was computed with; without
        it the storage's own clock decides whether a remembered signature has expired."""

    # -- webhooks -------------------------------------------------------------------------
    def get_webhook(self, owner: str) -> WebhookConfig | None:
        """``owner``'s webhook URL and signing secret, or ``None`` if never set."""

    def put_webhook(self, config: WebhookConfig) -> None:
        """Insert, or replace the configuration of the same owner."""

    def delete_webhook(self, owner: str) -> bool:
        """Remove ``owner``'s webhook; ``False`` if there was none."""

    # -- webhook endpoints (revision 0017) ------------------------------------------------
    # An owner's endpoints besides the ``/webhook/set`` URL, each with its own URL, secret
    # and event types (``paycore.webhooks.endpoints``).

    def put_webhook_endpoint(self, endpoint: WebhookEndpoint) -> None:
        """Insert, or replace every field of the endpoint with the same id and owner."""

    def get_webhook_endpoint(self, owner: str, endpoint_id: str) -> WebhookEndpoint | None:
        """``owner``'s endpoint ``endpoint_id``, or ``None`` (another owner's is ``None``)."""

    def webhook_endpoints(self, owners: Sequence[str]) -> list[WebhookEndpoint]:
        """Every endpoint of ``owners``, enabled or not, by owner then creation (id) order."""

    def delete_webhook_endpoint(self, owner: str, endpoint_id: str) -> bool:
        """Remove ``owner``'s endpoint; ``False`` if there was none. Its deliveries stay in
        the log; pending ones fail at their next try (no URL to deliver to)."""

    # -- merchant profiles ------------------------------------------------------------------
    def get_merchant_profile(self, owner: str) -> MerchantProfile | None:
        """``owner``'s name, logo and support contact for the checkout page, or ``None``."""

    def put_merchant_profile(self, profile: MerchantProfile) -> None:
        """Insert, or replace every field of the same owner's profile."""

    # -- events: outbox and per-consumer queues ---------------------------------------------
    def add_event(
        self, owner: str, guid: str, payload: Json, created_at: int, type: str = UPDATED
    ) -> int:
        """Append to the outbox; returns the event id (strictly increasing: once committed,
        an id is never handed out again, even after its event has been pruned). ``type``
        names the change (``paycore.domain.changes``) and comes back on ``OutboxEvent``."""

    def add_events(self, events: Sequence[NewEvent]) -> list[int]:
        """``add_event`` for each, in order, in one round trip where the database allows;
        returns their ids (strictly increasing, in the order given)."""

    def open_queue(self, consumer: str, owner: str) -> None:
        """Create ``consumer``'s queue of ``owner``'s events if missing. A new queue starts
        after the newest existing event; an existing one is left as it is. Where write
        transactions overlap (PostgreSQL) it starts at the horizon instead (``drain_queue``):
        no event committed after it opened is missed, and events committed just before it
        while an older writer was still open may be handed out as well."""

    def drain_queue(self, consumer: str, cap: int) -> list[OutboxEvent]:
        """Return the queued events (oldest first, at most the newest ``cap``) and mark them
        consumed, atomically: two concurrent drains never return the same event, and no
        event is skipped, however late the transaction that added it commits.

        Order: event id order, the same for every queue, which for one invoice is the
        order its events were added in. Where transactions overlap (PostgreSQL), an
        event may be held back while a transaction that took a lower event id is still
        open, and is handed out once it has ended; the draining transaction's own events
        count as settled. Costs the events returned, not the backlog."""

    def close_queue(self, consumer: str) -> None:
        """Remove ``consumer``'s queue (the events stay in the outbox); a no-op if missing."""

    def read_outbox(self, consumer: str, cap: int) -> OutboxRead | None:
        """Every owner's events after ``consumer``'s position (a queue opened with owner
        ``ALL_OWNERS``), oldest first, at most ``cap``, without moving it: the host-signal
        consumer (``paycore.events.signals``) runs its handlers first, then moves it with
        ``move_queue``. ``upto`` is where the position may go once these are handled: the
        last one's id when ``cap`` cut the read short, else the horizon of ``drain_queue``
        (nothing can still appear at or below it). None for an unknown consumer."""

    def outbox_since(self, after: int | None, cap: int, owner: str | None = None) -> OutboxRead:
        """Events after id ``after`` (``owner``'s only, or every owner's when None), oldest
        first, at most ``cap``, up to the horizon of ``drain_queue``, with no stored
        position: the WebSocket feed of a web process keeps its position in memory
        (``paycore.realtime.outbox_feed``) and a resuming socket passes its last event id.
        ``upto`` is where a reader may go on from (as ``read_outbox``). ``after=None``
        reads nothing and answers the horizon as ``position`` and ``upto``: where a new
        reader starts so that it misses nothing committed from then on."""

    def move_queue(self, consumer: str, start: int, to: int) -> bool:
        """Set ``consumer``'s position to ``to`` if it is still ``start``; False if another
        consumer moved it meanwhile (or it is gone)."""

    # -- host-signal leases -----------------------------------------------------------------
    # One lease per host-signal queue (``signal:<handler name>``, opened with ``open_queue``
    # for ``ALL_OWNERS``), so that one consumer at a time runs a handler, however many
    # processes run consumers (``paycore.events.signals``). Times are unix milliseconds.

    def claim_signal(self, consumer: str, holder: str, now: int, lease_ms: int) -> bool:
        """Take or renew ``consumer``'s lease for ``holder`` -- when nobody holds it, it has
        lapsed (``lease_until <= now``), or it is ``holder``'s already -- until ``now +
        lease_ms``. ``False`` while another holder's lease is live. Atomic against
        concurrent claims: one winner."""

    def move_signal(
        self, consumer: str, holder: str, start: int, to: int, now: int, lease_ms: int
    ) -> bool:
        """``move_queue(consumer, start, to)`` and renew the lease to ``now + lease_ms``,
        only while ``holder`` still holds ``consumer``'s lease (a lapsed lease nobody took
        over is still its own). ``False``, changing nothing, once another holder claimed it
        or the position is no longer ``start``."""

    def release_signal(self, consumer: str, holder: str) -> None:
        """Give up ``holder``'s lease (the position stays), so another consumer need not
        wait for it to lapse. A no-op when ``holder`` does not hold it."""

    # -- webhook deliveries -----------------------------------------------------------------
    # A delivery is one outbox event queued for the owner's webhook. ``enqueue_delivery`` runs
    # inside the invoice change's own transaction, so the change, its event and its delivery
    # commit together or not at all. Dispatchers then take work with ``claim_deliveries`` (a
    # lease, in its own short transaction), POST without any transaction open, and report
    # with ``finish_delivery``. A dispatcher that dies holding a lease simply lets it lapse:
    # the delivery is claimed again, with the same webhook id (at-least-once).

    def enqueue_delivery(
        self, event_id: int, owner: str, guid: str, webhook_id: str, body: str, now: int
    ) -> int | None:
        """Queue ``body`` (event ``event_id``) for ``owner``'s webhook, due at ``now`` (ms),
        if and only if ``owner`` has a non-empty webhook URL as read in this transaction.
        Returns the delivery id (strictly increasing), or ``None`` when nothing was queued."""

    def enqueue_deliveries(self, deliveries: Sequence[NewDelivery]) -> int:
        """``enqueue_delivery`` for each (the same rule: only for an owner with a non-empty
        webhook URL as read in this transaction), ids increasing in the order given;
        returns how many were queued. A delivery with an ``endpoint_id`` is queued for that
        endpoint as it is (its caller read the endpoint in this transaction)."""

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
        """Lease up to ``limit`` deliveries that are pending, due (``next_attempt_at <= now``),
        not under a live lease, and the lowest-id pending delivery of their invoice -- so a
        later event of an invoice waits while an earlier one awaits its retry. Each claimed
        delivery gets ``lease_until = now + lease_ms``, lease ``token`` and one more attempt
        counted. Atomic against concurrent claims from any thread or process: no delivery is
        ever under two live leases (PostgreSQL: ``FOR UPDATE SKIP LOCKED``). Oldest due
        first. The owner's current webhook URL and secret come back with each claim: of its
        endpoint when it has one (empty when the endpoint is gone or disabled). "Of their
        invoice" is per endpoint: one endpoint's retries never hold up another's.
        Deliveries of an owner in ``skip_owners``, or whose target URL (the endpoint's, else
        the owner's webhook URL) is in ``skip_urls``, are passed over as if they were not due
        (the dispatcher's caps on deliveries in flight per owner and per URL,
        ``paycore.webhooks.fairness``): the ones after them are claimed instead, so a capped
        owner holds back no one else."""

    def finish_delivery(
        self, delivery_id: int, token: str, attempt: DeliveryAttempt, settlement: Settlement
    ) -> bool:
        """Append ``attempt`` to the log, and settle the delivery as ``settlement`` says and
        release the lease -- but only while ``token`` still holds it: a dispatcher whose lease
        lapsed and was re-claimed by another must not overwrite the newer claim's outcome.
        Returns whether the delivery was settled (the attempt is logged either way)."""

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
        """A page of ``owner``'s deliveries (of invoice ``guid`` only, when given; of one
        endpoint only when ``endpoint_id`` is given, ``DEFAULT_ENDPOINT`` naming the
        ``/webhook/set`` URL's), newest first, each with its attempt log (oldest attempt
        first), and the match count."""

    def redeliver(self, delivery_id: int, owner: str, now: int) -> Delivery | None:
        """Make ``owner``'s delivery pending again, due at ``now``, with its attempt count
        reset (a new retry schedule) and its webhook id unchanged; a live lease is left to
        finish. ``None`` if there is no such delivery of that owner."""

    def redeliver_failed(self, owner: str, since: int, now: int) -> int:
        """``redeliver`` every failed delivery of ``owner`` created at or after ``since``
        (ms), in one statement: all of them or none; returns how many. Pending and
        delivered ones are left as they are."""

    # -- accounting export (paycore.accounting) -------------------------------------------
    # Keyset batches in a fixed order, each read in a short transaction of its own, so an
    # export of any size holds one batch in memory and no lock between batches.

    def export_invoices(
        self,
        owner: str,
        *,
        start: int,
        end: int | None,
        after: tuple[int, str] | None,
        limit: int,
    ) -> list[Invoice]:
        """Up to ``limit`` of ``owner``'s invoices created in ``[start, end)`` (no upper
        bound when ``end`` is None), ordered by (created_at, guid), after ``after``."""

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
        """Up to ``limit`` of ``owner``'s ``kind`` rows (reorged ones left out) whose block
        time is in ``[start, end)``, ordered by :data:`TransferPlace`, after ``after``."""

    # -- legacy poll tokens ---------------------------------------------------------------
    def put_poll_token(self, token: PollToken) -> None:
        """Store a legacy poll token (POST /poll/register) with the owner it drains for."""

    def get_poll_token(self, token: str) -> PollToken | None:
        """The legacy poll token with this text, or ``None``."""

    # -- retention ----------------------------------------------------------------------------
    # Rows nothing can use any more, deleted in batches of at most ``limit`` so that each
    # batch is a short transaction of its own (``paycore.ops.retention`` runs the rounds).
    # None of them ever deletes a row still needed: an event a queue can still hand out, a
    # pending delivery, a signature or challenge before its expiry.

    def prune_events(
        self, created_before: int, queue_cap: int, after: int, limit: int
    ) -> PruneBatch:
        """Delete outbox events created before ``created_before`` that no queue can hand out
        any more, looking at up to ``limit`` events with ids above ``after``, in id order.

        An event is still needed while some queue of its owner has not drained it (its
        cursor is below the event) and it is among the owner's newest ``queue_cap`` events
        (``drain_queue``'s cap: a queue never hands out an older one). The newest event may
        go as well: an event id is never handed out twice (``add_event``), so the next
        event still comes after every cursor. The batch stops at the first event created at
        or after ``created_before``."""

    def prune_deliveries(self, settled_before: int, after: int, limit: int) -> PruneBatch:
        """Delete webhook deliveries that are settled (delivered or failed), whose retry
        schedule began (``retry_from``) and whose every attempt was before
        ``settled_before`` (ms), with their attempt logs; pending ones are never touched.
        Looks at up to ``limit`` deliveries with ids above ``after``, in id order, and stops
        at the first one created at or after ``settled_before``."""

    def prune_signatures(self, expired_before: int, limit: int) -> int:
        """Forget up to ``limit`` remembered salt signatures whose ``expires_at`` is before
        ``expired_before``; returns how many. A live one refuses a replay: never pass a
        time ahead of the clock ``remember_signature`` is given."""

    def prune_challenges(self, expired_before: int, limit: int) -> int:
        """Delete up to ``limit`` proof-of-work challenges that expired before
        ``expired_before`` without being taken; returns how many."""

    # -- chain watchers ---------------------------------------------------------------------
    # One row per chain: the cursor (last block scanned and its hash) and the lease that lets
    # one watcher at a time scan the chain, across processes. Times are unix milliseconds. A
    # watcher that dies holding the lease lets it lapse; the next one resumes at the cursor.

    def claim_chain(
        self, chain_id: int, holder: str, now: int, lease_ms: int
    ) -> ChainCursor | None:
        """Take or renew ``chain_id``'s lease for ``holder`` -- when nobody holds it, it has
        lapsed (``lease_until <= now``), or it is ``holder``'s already -- until ``now +
        lease_ms``, and return the cursor (``block_number`` None on first use). ``None`` while
        another holder's lease is live. Atomic against concurrent claims: one winner."""

    def advance_chain(
        self,
        chain_id: int,
        holder: str,
        block_number: int,
        block_hash: str | None,
        now: int,
        lease_ms: int,
    ) -> bool:
        """Set the cursor (forward, or back after a reorg) and renew the lease to ``now +
        lease_ms``, only while ``holder`` is still the holder (a lapsed lease nobody took over
        is still its own). ``False``, changing nothing, once another holder has claimed it."""

    def release_chain(self, chain_id: int, holder: str) -> None:
        """Give up ``holder``'s lease (the cursor stays), so another watcher need not wait
        for it to lapse. A no-op when ``holder`` does not hold it."""

    def get_chain_cursor(self, chain_id: int) -> ChainCursor | None:
        """``chain_id``'s cursor and lease as they stand, without claiming anything; ``None``
        before any watcher has claimed the chain."""

    def watched_addresses(self, chain_id: int, deadline_after: int) -> list[str]:
        """The distinct deposit addresses of ``chain_id``'s invoices that are open (init,
        partialPaid) or whose deadline is at or after ``deadline_after`` (late payments and
        overpayments are still recorded for a while), sorted."""

    def earliest_watched(self, chain_id: int, deadline_after: int) -> int | None:
        """The oldest ``created_at`` among the invoices ``watched_addresses`` watches (the
        same condition), or ``None`` when it watches none: where a new watcher must begin."""

    # -- owner management (docs/interface.md: app keys, e-mail notices, wallet indexes) ----
    def owner_is_known(self, owner: str) -> bool:
        """Whether paycore has anything of ``owner``: an invoice, a session key, a webhook,
        an app key, an e-mail setting or an allocated wallet index."""

    def get_app_key(self, address: str) -> AppKey | None:
        """The app key record of ``address`` (whoever's it is), or ``None``."""

    def app_keys_of(self, owner: str) -> list[AppKey]:
        """``owner``'s app keys, oldest first (added_at, then address)."""

    def add_app_key(self, key: AppKey, cap: int) -> AppKeyAdd:
        """Add ``key`` unless its address is already an app key (of this owner: EXISTS; of
        another: TAKEN) or the owner holds ``cap`` keys (FULL). Atomic against concurrent
        adds for the same owner: the cap holds however many race."""

    def remove_app_key(self, owner: str, address: str) -> bool:
        """Remove ``owner``'s app key ``address``; ``False`` if it was not one."""

    def get_email(self, owner: str, chain_id: int) -> EmailSetting | None:
        """``owner``'s e-mail setting for ``chain_id``, or ``None``."""

    def emails_of(self, owner: str) -> list[EmailSetting]:
        """Every e-mail setting of ``owner``, by chain id."""

    def put_email(self, setting: EmailSetting) -> None:
        """Insert, or replace the setting of the same (owner, chain_id)."""

    def delete_email(self, owner: str, chain_id: int) -> bool:
        """Remove ``owner``'s setting for ``chain_id``; ``False`` if there was none."""

    def enable_emails(
        self, owner: str, chain_id: int | None, enabled: bool, now: int
    ) -> list[EmailSetting]:
        """The operator's switch: set ``enabled`` on ``owner``'s setting of ``chain_id``
        (every chain when ``None``); turning one on stamps ``enabled_at = now``, turning on
        one already on leaves its stamp. Returns the settings as they now are."""

    def set_wallet_index_disabled(
        self, owner: str, chain_id: int, index: int, disabled: bool, now: int
    ) -> bool:
        """Record ``index`` as left out of (``disabled``) or back in withdrawal address
        selection; returns whether that changed anything."""

    def disabled_wallet_indexes(self, owner: str, chain_id: int) -> list[int]:
        """``owner``'s disabled indexes on ``chain_id``, ascending."""

    def claim_notice(self, key: str, now: int) -> bool:
        """``True`` the first time ``key`` (one notice, e.g. one deposit's e-mail) is
        claimed, ``False`` ever after, across processes: a notice goes out once."""

    # -- payment links (paycore.links) -------------------------------------------------------
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

    # -- prices (paycore.prices) --------------------------------------------------------------
    # The refresher writes the last good price of each (token, vsCurrency); every process
    # reads the same rows, so the table GET /prices shows is the one that values deposits.

    def put_prices(self, rows: Sequence[StoredPrice]) -> None:
        """Insert each row, or replace the row of the same (token, vs_currency)."""

    def get_prices(self, vs_currency: str | None = None) -> list[StoredPrice]:
        """Every stored price (of ``vs_currency`` only, when given), by currency and token."""

    def get_price(self, token: str, vs_currency: str) -> StoredPrice | None:
        """The last stored price of ``token`` (``{chainId}:{address}``) in ``vs_currency``,
        fresh or not (the caller judges its age), or ``None``."""

    def put_quotes(self, quotes: Sequence[LockedQuote]) -> None:
        """Store rates locked at invoice creation; one per (guid, token), replaced if any."""

    def get_quotes(self, guid: str) -> list[LockedQuote]:
        """The rates locked for invoice ``guid``, by token; empty when none were."""

    def get_quotes_of(self, guids: Sequence[str]) -> list[LockedQuote]:
        """The rates locked for any of these invoices, by guid then token (one read for a
        batch of deposits)."""

    def park_deposit(self, parked: ParkedDeposit) -> bool:
        """Keep a deposit that could not be valued yet; ``False`` (nothing written) when the
        same transfer (chain_id, tx_hash, log_index, token) is parked already."""

    def parked_deposits(self, chain_id: int, limit: int) -> list[ParkedDeposit]:
        """Up to ``limit`` parked deposits of ``chain_id``, in the order they were parked
        (the watcher parks in chain order)."""

    def unpark_deposit(self, deposit: Deposit) -> bool:
        """Forget a parked deposit (valued now, or gone in a reorg); ``False`` if unknown."""

    def parked_tokens(self) -> list[str]:
        """The ``{chainId}:{token}`` ids that parked deposits wait for a price of, sorted."""

    # -- refunds (docs/interface.md, POST /refund) --------------------------------------------
    # A refund is its own row, not part of the invoice's: ``Invoice.refunds`` is neither
    # stored by ``insert_invoice`` / ``update_invoice`` nor returned by invoice reads (they
    # come back with none), and the gateway reads them with ``refunds_of``. The gateway
    # creates and settles refunds with their invoice's row locked (``get_invoice(...,
    # for_update=True)``), so the check "no more than was paid is refunded" and the insert
    # that relies on it are one step.

    def insert_refund(self, refund: Refund) -> None:
        """Store a new refund, every field as given; a duplicate ``id`` raises
        ``ValueError``."""

    def get_refund(self, refund_id: str) -> Refund | None:
        """The refund ``refund_id``, or ``None`` if there is none."""

    def refunds_of(self, guids: Sequence[str]) -> list[Refund]:
        """Every refund of these invoices (any status), by invoice guid, then in the order
        they were inserted: one read for a page of invoices or a batch of events."""

    def pending_refunds(self, chain_id: int, owners: Sequence[str]) -> list[Refund]:
        """The refunds of ``chain_id`` still ``pending`` whose owner is one of ``owners``,
        in the order they were inserted: those a withdrawal the watcher saw may have paid."""

    def settle_refund(self, refund: Refund) -> bool:
        """Store ``refund``'s ``status``, ``tx_hash``, ``log_index`` and ``settled_at`` over
        the refund of the same ``id`` -- only while that one is still ``pending``, as one
        compare-and-set: of concurrent settles (the watcher confirming it, the merchant
        cancelling it) exactly one wins. ``False``, changing nothing, otherwise."""

    # -- detected transfers (docs/chains.md, Detection) ---------------------------------------
    # Transfers mined but not yet ``confirmations`` deep, provisional: rows of their own,
    # never part of an invoice's row. The watcher replaces a chain's whole set each pass; a
    # public read asks for one invoice's (an indexed lookup by guid).

    def replace_detected(self, chain_id: int, found: Sequence[Detected]) -> None:
        """Make ``found`` the detected transfers of ``chain_id``: every row of that chain
        not in it is dropped, every one in it stored with every field as given, keyed by
        (chain_id, tx_hash, log_index, token) -- a key given twice keeps the last. Other
        chains' rows are left alone (and a row of another chain in ``found`` is ignored).
        Doing it twice with the same list changes nothing."""

    def detected_of(self, guids: Sequence[str]) -> list[Detected]:
        """The detected transfers of these invoices, by guid, then oldest first (block
        number, then tx hash, log index and token)."""


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
