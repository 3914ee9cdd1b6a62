"""Webhook dispatch: queue a delivery with each event, and the loop that POSTs them.

Why it is built this way:

- Nothing is lost. ``enqueue_webhook`` runs inside the transaction of the invoice change
  (``Gateway._emit``), so a committed change always has its delivery row, and the row stays
  until a 2xx answer or the give-up horizon. A crash anywhere leaves it pending.
- Work is shared through storage, not between processes: a dispatcher leases due deliveries
  (``StorageTx.claim_deliveries``), POSTs with no transaction open, then settles them in a
  second short transaction. Any number of dispatchers, in any number of processes, can run
  against one database; a killed one's leases lapse after ``webhook_lease`` seconds and the
  deliveries go out again with the same ``webhook-id`` (at-least-once; receivers dedupe).
- Per-invoice order. Storage only hands out the earliest pending delivery of an invoice,
  so a later event waits while an earlier one is retried; different invoices go in
  parallel, up to ``webhook_concurrency`` POSTs at a time on a thread pool (storage and
  ``http.client`` are blocking, and the core is sync).
- Fair shares. Of those slots, one owner's deliveries hold at most
  ``webhook_owner_concurrency`` and one URL's ``webhook_url_concurrency``; the claim passes
  over an owner or URL at its cap, so a slow or hostile receiver delays only its own
  merchant's events (``fairness``), and each attempt ends by ``webhook_timeout`` in all.
- Few transactions: the loop settles every finished attempt and claims the next work in one
  transaction per round, which matters most on SQLite, where write transactions are serial.
- Prompt without busy polling: the loop sleeps ``worker_poll_interval`` when idle, but a
  finished POST or ``wake()`` (called by the worker's notifier on every change committed in
  this process) starts the next claim at once.
- Patient with storage: while it is unavailable the loop backs off (``paycore.ops.outages``:
  doubling waits with jitter, one log line per interval) and keeps the outcomes of POSTs
  that finished meanwhile, settling them once storage answers -- before their leases lapse,
  for outages shorter than ``webhook_lease``, so no receiver sees them twice.
"""

from __future__ import annotations

import json
import logging
import random
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol
from urllib.parse import urlsplit

from ..config import Settings
from ..domain.changes import STATUS_CHANGES
from ..domain.records import Json, NewEvent
from ..errors import StorageUnavailable
from ..ops.outages import LoopGuard
from ..storage import Storage
from ..storage.protocols.outbox import Outbox
from ..storage.protocols.webhooks import WebhookConfigs, WebhookDeliveries, WebhookEndpoints
from .delivery import Outcome, post, settle, signed_headers
from .fairness import InFlight, claim_fairly
from .records import (
    ClaimedDelivery,
    DeliveryAttempt,
    DeliveryStatus,
    NewDelivery,
    Settlement,
    WebhookEndpoint,
)

log = logging.getLogger("paycore.webhooks")

Sender = Callable[..., Outcome]
#: A finished attempt waiting to be settled: the claim, what happened, what it means.
_Done = tuple[ClaimedDelivery, DeliveryAttempt, Settlement]


def webhook_body(payload: Json, type: str | None = None) -> str:
    """The exact text that is signed and sent: the Invoice JSON as a poll event carries it,
    with ``type`` naming the change (``invoice.paid``, ``invoice.overpaid``, ...) added as
    one more top-level field, serialised the way the HTTP layer serialises responses."""
    body = payload if type is None else {**payload, "type": type}
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False)


def new_webhook_id() -> str:
    """Random rather than derived from the event id, so that ids never repeat across
    databases (a receiver may serve several gateways, or a test database be recreated)."""
    return "msg_" + secrets.token_hex(16)


class WebhookQueueTx(WebhookConfigs, WebhookEndpoints, WebhookDeliveries, Protocol):
    """What queueing an event's webhooks reads and writes: the owner's ``/webhook/set`` URL,
    their endpoints, and the delivery queue."""


class EventTx(Outbox, WebhookQueueTx, Protocol):
    """What announcing a change touches: the outbox event and its webhook deliveries, written
    in one transaction so they commit together."""


def enqueue_webhook(tx: WebhookQueueTx, event_id: int, event: NewEvent, now_ms: int) -> int | None:
    """Queue the event for its owner's webhook targets in the caller's transaction: the
    ``/webhook/set`` URL if set and the event is a status change, and each enabled endpoint
    whose types include it (``targets_of``). Returns the ``/webhook/set`` URL's delivery id."""
    first: int | None = None
    if event.type in STATUS_CHANGES:
        first = tx.enqueue_delivery(
            event_id,
            event.owner,
            event.guid,
            new_webhook_id(),
            webhook_body(event.payload, event.type),
            now_ms,
        )
    enqueue_webhooks(tx, [(event_id, event)], now_ms, endpoints_only=True)
    return first


def enqueue_webhooks(
    tx: WebhookQueueTx,
    events: Sequence[tuple[int, NewEvent]],
    now_ms: int,
    *,
    endpoints_only: bool = False,
) -> int:
    """``enqueue_webhook`` for a batch of (event id, event) in the caller's transaction:
    bodies are only built for events some target of their owner wants, and queued at once.
    Each target is sent only the types it asks for: the ``/webhook/set`` URL the status
    changes of the interface (``STATUS_CHANGES``), an endpoint its ``types``."""
    owners = sorted({event.owner for _id, event in events})
    endpoints: dict[str, list[WebhookEndpoint]] = {}
    for endpoint in tx.webhook_endpoints(owners):
        if endpoint.enabled:
            endpoints.setdefault(endpoint.owner, []).append(endpoint)
    hooked = set()
    if not endpoints_only:
        for owner in owners:
            config = tx.get_webhook(owner)
            if config is not None and config.url:
                hooked.add(owner)
    queued: list[NewDelivery] = []
    for event_id, e in events:
        targets: list[str | None] = [None] if e.owner in hooked and e.type in STATUS_CHANGES else []
        targets += [ep.id for ep in endpoints.get(e.owner, ()) if e.type in ep.types]
        if not targets:
            continue
        body = webhook_body(e.payload, e.type)
        queued += [
            NewDelivery(event_id, e.owner, e.guid, new_webhook_id(), body, now_ms, target)
            for target in targets
        ]
    return tx.enqueue_deliveries(queued) if queued else 0


class Dispatcher:
    """Delivers due webhook deliveries from ``storage`` until ``stop()``.

    ``clock`` gives unix seconds (scheduling and the ``webhook-timestamp`` header); ``send``
    is the POST (``delivery.post``), replaceable in tests; ``rng`` draws the jitter.
    """

    def __init__(
        self,
        storage: Storage,
        settings: Settings,
        *,
        clock: Callable[[], float] = time.time,
        send: Sender = post,
        rng: Callable[[], float] = random.random,
    ) -> None:
        self._storage = storage
        self.settings = settings
        self.clock = clock
        self.send = send
        self.rng = rng
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._busy = 0
        self._busy_lock = threading.Lock()  # guards _busy and _done
        self._done: list[_Done] = []  # finished attempts the loop has yet to settle
        self.in_flight = InFlight.from_settings(settings)  # POSTs under way, by owner and URL
        self.guard = LoopGuard.from_settings(
            "webhook dispatcher", log, settings, pace=settings.worker_poll_interval
        )

    def now_ms(self) -> int:
        return round(self.clock() * 1000)

    # -- control --------------------------------------------------------------------------
    def wake(self) -> None:
        """Look for due work now instead of at the end of the idle wait. Thread-safe."""
        self._wake.set()

    def stop(self) -> None:
        """Stop claiming; ``run`` returns once the POSTs in flight have finished."""
        self._stopping.set()
        self._wake.set()

    # -- the loop -------------------------------------------------------------------------
    def run(self) -> None:
        """Claim, POST on the pool, settle; until ``stop()``.

        Finished attempts are settled by this loop, together with the next claim, in one
        transaction, rather than one transaction each from the pool threads: on SQLite every
        write transaction is serial and costs a sync, so batching is what keeps one
        dispatcher ahead of the changes being committed.
        """
        concurrency = self.settings.webhook_concurrency
        with ThreadPoolExecutor(concurrency, thread_name_prefix="paycore-webhook") as pool:
            while not self._stopping.is_set():
                self._wake.clear()
                done = self._take_done()
                with self._busy_lock:
                    free = concurrency - self._busy
                try:
                    claimed = self._settle_and_claim(done, free)
                except StorageUnavailable as exc:
                    self._put_back(done)  # settled once storage answers again
                    self._stopping.wait(self.guard.failed(exc))
                    continue
                for delivery in claimed:
                    self._start(pool, delivery)
                if free > 0 and len(claimed) == free:
                    continue  # the pool is full now; more may be due once a slot frees
                if done:
                    continue  # settling may have released an invoice's next event
                self._wake.wait(self.settings.worker_poll_interval)
        self._settle_or_log(self._take_done(), 0)  # the POSTs that finished while stopping

    def run_once(self, limit: int | None = None) -> int:
        """Claim what is due now and deliver it, one after another; for tests and scripts
        that want a deterministic step rather than a loop."""
        claimed = self._settle_or_log([], limit or self.settings.webhook_concurrency)
        for delivery in claimed:
            self.deliver(delivery)
        return len(claimed)

    def _start(self, pool: ThreadPoolExecutor, delivery: ClaimedDelivery) -> None:
        with self._busy_lock:
            self._busy += 1
        self.in_flight.started(delivery)
        pool.submit(self._attempt_for_loop, delivery)

    def _attempt_for_loop(self, delivery: ClaimedDelivery) -> None:
        try:
            result = self.attempt(delivery)
        except Exception:  # a bug, not a receiver's failure: let the lease lapse and retry
            log.exception("webhook delivery %d: attempt crashed", delivery.id)
            result = None
        self.in_flight.finished(delivery)
        with self._busy_lock:
            self._busy -= 1
            if result is not None:
                self._done.append((delivery, *result))
        self._wake.set()  # a slot is free, and an outcome waits to be settled

    def _take_done(self) -> list[_Done]:
        with self._busy_lock:
            done, self._done = self._done, []
        return done

    def _put_back(self, done: list[_Done]) -> None:
        with self._busy_lock:
            self._done[:0] = done

    def _settle_or_log(self, done: list[_Done], limit: int) -> list[ClaimedDelivery]:
        """``_settle_and_claim`` outside the loop: storage being down is logged (rate
        limited) and the leases lapse, so the deliveries go out again later."""
        try:
            return self._settle_and_claim(done, limit)
        except StorageUnavailable as exc:
            self.guard.failed(exc)
            return []

    def _settle_and_claim(self, done: list[_Done], limit: int) -> list[ClaimedDelivery]:
        """One transaction: record finished attempts, then lease up to ``limit`` more.
        Raises ``StorageUnavailable``; any other failure is logged and lets the leases
        lapse, so the deliveries go out again."""
        if not done and limit <= 0:
            return []
        lease_ms = round(self.settings.webhook_lease * 1000)
        try:
            with self._storage.transaction() as tx:
                settled = [
                    tx.finish_delivery(d.id, d.lease_token, attempt, settlement)
                    for d, attempt, settlement in done
                ]
                claimed = self._claim(tx, lease_ms, limit) if limit > 0 else []
        except StorageUnavailable:
            raise
        except Exception:  # a bug: the leases lapse and the deliveries go out again
            log.exception("settling or claiming webhook deliveries failed")
            return []
        self.guard.succeeded()
        for (delivery, attempt, settlement), ok in zip(done, settled, strict=True):
            self._report(delivery, attempt, settlement, ok)
        return claimed

    def _claim(self, tx: WebhookDeliveries, lease_ms: int, limit: int) -> list[ClaimedDelivery]:
        """Up to ``limit`` due deliveries, none taking its owner or URL past its cap."""
        token = secrets.token_hex(16)
        return claim_fairly(tx, self.in_flight, self.now_ms(), lease_ms, token, limit)

    # -- one attempt ----------------------------------------------------------------------
    def attempt(self, delivery: ClaimedDelivery) -> tuple[DeliveryAttempt, Settlement]:
        """POST one claimed delivery; what happened and what it means for the delivery."""
        started = self.now_ms()
        if not delivery.url:
            outcome = Outcome(None, "webhook cleared: no URL to deliver to", 0)
            settlement = Settlement(DeliveryStatus.FAILED)
        else:
            headers = signed_headers(
                delivery.secret, delivery.webhook_id, int(self.clock()), delivery.body
            )
            outcome = self.send(
                delivery.url,
                delivery.body.encode(),
                headers,
                timeout=self.settings.webhook_timeout,
                allow_private=self.settings.webhook_allow_private,
            )
            settlement = settle(delivery, outcome, self.now_ms(), self.settings, self.rng)
        attempt = DeliveryAttempt(
            delivery.id,
            started,
            delivery.url,
            outcome.status_code,
            outcome.error,
            outcome.latency_ms,
        )
        return attempt, settlement

    def deliver(self, delivery: ClaimedDelivery) -> DeliveryAttempt:
        """POST one claimed delivery and settle it in its own transaction. Never raises: a
        failure to record the outcome leaves the lease to lapse, and it goes out again."""
        attempt, settlement = self.attempt(delivery)
        self._settle_or_log([(delivery, attempt, settlement)], 0)
        return attempt

    def _report(
        self,
        delivery: ClaimedDelivery,
        attempt: DeliveryAttempt,
        settlement: Settlement,
        settled: bool,
    ) -> None:
        host = urlsplit(delivery.url).hostname or "-"  # the host only: a query may hold a token
        if not settled:
            log.warning(
                "webhook delivery %d: lease lapsed before the attempt finished; "
                "another claim settles it",
                delivery.id,
            )
        elif attempt.ok:
            log.debug(
                "webhook delivery %d (%s) delivered to %s", delivery.id, delivery.webhook_id, host
            )
        else:
            log.warning(
                "webhook delivery %d (%s) to %s failed (attempt %d): %s; %s",
                delivery.id,
                delivery.webhook_id,
                host,
                delivery.attempts,
                attempt.error,
                "gave up" if settlement.status is DeliveryStatus.FAILED else "will retry",
            )
