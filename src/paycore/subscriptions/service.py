"""``Gateway.subscriptions``: plans, subscriptions, the worker's period invoices and the status
moves they make.

Two steps run in the worker (``paycore.runtime.worker``), each idempotent, so any number of
workers may run them at once and a restart resumes where they stopped:

- :meth:`Subscriptions.issue_due` makes the invoice of each period whose issue time came
  (``subscription_lead`` seconds before it is due). The subscription's row is locked, the
  invoice made, and the period inserted under its unique key (subscription, index) in one
  transaction; a worker that loses the race finds the key taken and rolls its invoice back.
- :meth:`Subscriptions.settle` reads the invoices of open periods (expiring them lazily as
  any read does) and applies what the status table (``paycore.domain.subscription_machine``)
  makes of them, writing each move's event to the outbox in the same transaction.

Events are outbox events of their own types (``subscription.*``), keyed by the
subscription's id, whose payload is the subscription's record with the period concerned:
webhook endpoints, sockets and host handlers that name those types receive them.
"""

from __future__ import annotations

import logging
import re
import secrets
import threading
from collections.abc import Callable

import attrs

from ..accounting.creation import MakeInvoice
from ..config import Settings
from ..domain.fields import Amount, ChainId, Token, Uint
from ..domain.invoices import NewInvoice, parse_new_invoice
from ..domain.records import Invoice, Json, NewEvent, Status
from ..domain.subscription_machine import SubscriptionEvent, SubscriptionMove, assess, move
from ..domain.subscriptions import (
    DAY,
    MAX_GRACE_DAYS,
    MAX_PERIOD_DAYS,
    MAX_PERIOD_MONTHS,
    MAX_TRIAL_DAYS,
    Period,
    PeriodUnit,
    Plan,
    Subscription,
    SubscriptionStatus,
    invoice_deadline,
    issue_time,
    period_bounds,
)
from ..domain.tokens import normalize_owner
from ..errors import Conflict, InvalidInput, NoAddressDeriver, NotFound, StorageUnavailable
from ..ops.outages import LoopGuard
from ..storage import Storage
from ..webhooks.dispatcher import EventTx, enqueue_webhook
from .requests import NewPlan, NewSubscription

log = logging.getLogger("paycore.subscriptions")

PAGE_MAX = 50
#: Longest id looked up: ours are 20 characters; anything much longer is not one.
MAX_ID = 64
#: Shortest validity of a period's invoice: one issued late (a worker that was down past the
#: due date and grace) still gets this long to be paid before it lapses.
MIN_INVOICE_WINDOW = 3600
#: Subscriptions issued, and open periods read, per transaction batch of a worker pass.
BATCH = 100
#: Keys of a period invoice's ``data``: which subscription and period it bills.
DATA_KEY = "subscription"
#: POST /invoice's field names -> POST /plan's, for the invoice rules' refusals.
_PLAN_FIELDS = {"value": "amount", "vsCurrency": "currency", "description": "name"}
_EMAIL = re.compile(r"^[^@\s]{1,64}@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$")

#: Makes and stores an invoice for an owner inside the caller's transaction
#: (``Gateway._new_invoice``: tx, owner, request, now, checkout page address or None).


class SubscriptionNotFound(NotFound):
    def __init__(self, sub_id: str) -> None:
        super().__init__(f"subscription {sub_id[:MAX_ID]} not found")


class PlanNotFound(NotFound):
    def __init__(self, plan_id: str) -> None:
        super().__init__(f"plan {plan_id[:MAX_ID]} not found")


class _Lost(Exception):
    """Another worker inserted this period first: roll back the invoice made for it."""


@attrs.frozen
class SubscriptionView:
    """A subscription with its plan, its periods and each period's invoice."""

    subscription: Subscription
    plan: Plan
    periods: tuple[Period, ...]
    invoices: dict[str, Invoice]

    @property
    def open_period(self) -> Period | None:
        """The newest period still open, the one the subscriber pays next."""
        live = [p for p in self.periods if p.status.value == "open"]
        return live[-1] if live else None


class Subscriptions:
    """``Gateway.subscriptions``: an owner's plans and subscriptions, and the worker's steps
    that invoice periods and move statuses. ``make_invoice`` is the gateway's creation path (address
    allocation, rate lock); ``read_invoice`` its read with lazy expiry; ``derives(chain_id)``
    says whether a chain backend gives each invoice a fresh deposit address."""

    def __init__(
        self,
        storage: Storage,
        settings: Settings,
        clock: Callable[[], float],
        make_invoice: MakeInvoice,
        read_invoice: Callable[[str], Invoice],
        derives: Callable[[int], bool],
    ) -> None:
        self._storage = storage
        self._settings = settings
        self._clock = clock
        self._make_invoice = make_invoice
        self._read_invoice = read_invoice
        self._derives = derives

    def _now(self) -> int:
        return int(self._clock())

    # -- plans --------------------------------------------------------------------------------
    def create_plan(self, owner: str, request: NewPlan) -> Plan:
        """Store ``owner``'s new plan. Its invoice fields are checked by the rules of POST
        /invoice now, so no period's invoice can fail on them later."""
        owner = normalize_owner(owner, "owner")
        name = request.name.strip()
        if not name:
            raise InvalidInput("name", "must not be empty")
        if request.amount <= 0:
            raise InvalidInput("amount", "must be above 0")
        unit = _unit(request.period_unit)
        count = request.period_count
        most = MAX_PERIOD_MONTHS if unit is PeriodUnit.MONTH else MAX_PERIOD_DAYS
        if not 1 <= count <= most:
            raise InvalidInput("periodCount", f"must be between 1 and {most} {unit.value}s")
        trial = _days(request.trial_days, "trialDays", MAX_TRIAL_DAYS)
        grace = _days(request.grace_days, "graceDays", MAX_GRACE_DAYS)
        now = self._now()
        sample = NewInvoice(
            value=request.amount,
            chain_id=request.chain_id,
            description=name,
            accepted_tokens=request.accepted_tokens,
            vs_currency=request.currency,
        )
        try:
            checked = parse_new_invoice(self._settings, sample, owner, now, lambda _chain: "")
        except InvalidInput as refused:  # named as this request names them
            field = _PLAN_FIELDS.get(refused.field, refused.field)
            raise InvalidInput(field, refused.reason) from None
        if not self._derives(checked.chain_id):
            raise NoAddressDeriver(
                "chainId", checked.chain_id, "every period's invoice needs a deposit address"
            )
        plan = Plan(
            id="plan_" + secrets.token_urlsafe(12),
            owner=owner,
            created_at=now,
            name=name,
            amount=request.amount,
            currency=checked.vs_currency,
            chain_id=checked.chain_id,
            accepted_tokens=checked.accepted_tokens,
            period_unit=unit,
            period_count=count,
            trial_days=trial,
            grace_days=grace,
        )
        with self._storage.transaction() as tx:
            tx.insert_plan(plan)
        return plan

    def list_plans(
        self, owner: str, *, offset: int | None = None, limit: int | None = None
    ) -> tuple[list[Plan], int, int, int]:
        """(items newest first, total, offset, limit) of ``owner``'s plans."""
        off, lim = _page(offset, limit)
        with self._storage.transaction() as tx:
            items, total = tx.list_plans(owner, offset=off, limit=lim)
        return items, total, off, lim

    # -- subscriptions ------------------------------------------------------------------------
    def create(self, owner: str, request: NewSubscription) -> Subscription:
        """Subscribe ``request.reference`` to ``owner``'s plan. With a trial, nothing is owed
        until it ends (``trialing``); without one, the first period is due now and the
        worker issues its invoice at its next pass (``pending``)."""
        reference = request.reference.strip()
        if not reference:
            raise InvalidInput("reference", "must not be empty")
        email = None if request.email is None else request.email.strip()
        if email is not None and not _EMAIL.fullmatch(email):
            raise InvalidInput("email", "not an e-mail address")
        now = self._now()
        with self._storage.transaction() as tx:
            plan = tx.get_plan(request.plan_id[:MAX_ID])
            if plan is None or plan.owner != owner:
                raise PlanNotFound(request.plan_id)
            anchor = now + plan.trial_days * DAY
            status = SubscriptionStatus.TRIALING if plan.trial_days else SubscriptionStatus.PENDING
            sub = Subscription(
                id="sub_" + secrets.token_urlsafe(15),
                owner=owner,
                plan_id=plan.id,
                reference=reference,
                created_at=now,
                anchor=anchor,
                status=status,
                next_index=0,
                next_issue_at=issue_time(plan, anchor, 0, self._settings.subscription_lead),
                email=email,
                updated_at=now,
            )
            tx.insert_subscription(sub)
            self._announce(tx, sub, None, SubscriptionEvent.CREATED, now)
        return sub

    def list(
        self, owner: str, *, offset: int | None = None, limit: int | None = None
    ) -> tuple[list[Subscription], int, int, int]:
        """(items newest first, total, offset, limit) of ``owner``'s subscriptions."""
        off, lim = _page(offset, limit)
        with self._storage.transaction() as tx:
            items, total = tx.list_subscriptions(owner, offset=off, limit=lim)
        return items, total, off, lim

    def view(self, sub_id: str, owner: str | None = None) -> SubscriptionView:
        """The subscription, its plan, its periods and their invoices (each read as GET
        /invoice reads it: expired first when its deadline passed). ``owner``: 404 unless
        it is the subscription's; None: anyone who knows the id (the hosted page)."""
        with self._storage.transaction() as tx:
            sub = tx.get_subscription(sub_id[:MAX_ID]) if len(sub_id) <= MAX_ID else None
            if sub is None or (owner is not None and sub.owner != owner):
                raise SubscriptionNotFound(sub_id)
            plan = tx.get_plan(sub.plan_id)
            periods = tuple(tx.periods_of(sub.id))
        if plan is None:  # a plan is never deleted; a row without one is a broken store
            raise SubscriptionNotFound(sub_id)
        invoices = {p.guid: self._read_invoice(p.guid) for p in periods}
        return SubscriptionView(sub, plan, periods, invoices)

    def cancel(self, owner: str, sub_id: str) -> Subscription:
        """Cancel ``owner``'s subscription: no further period is invoiced. An open period's
        invoice stays payable and is recorded as paid if paid, but moves the subscription no
        more. Cancelling it again is a 409; another owner's subscription is 404."""
        now = self._now()
        with self._storage.transaction() as tx:
            sub = tx.get_subscription(sub_id[:MAX_ID], for_update=True)
            if sub is None or sub.owner != owner or len(sub_id) > MAX_ID:
                raise SubscriptionNotFound(sub_id)
            if sub.status is SubscriptionStatus.CANCELLED:
                raise Conflict(f"subscription {sub.id} is already cancelled")
            sub, event = move(sub, SubscriptionMove.CANCEL, now)
            tx.update_subscription(sub)
            self._announce(tx, sub, None, event, now)
        return sub

    # -- the worker's steps -------------------------------------------------------------------
    def issue_due(self, limit: int = BATCH) -> int:
        """Issue the invoice of every period whose issue time has come, one transaction per
        period; returns how many this call issued (another worker's are not counted)."""
        now = self._now()
        with self._storage.transaction() as tx:
            due = tx.subscriptions_due(now, limit)
        issued = 0
        for sub in due:
            try:
                if self._issue(sub.id, now):
                    issued += 1
            except _Lost:
                continue
        return issued

    def _issue(self, sub_id: str, now: int) -> bool:
        lead = self._settings.subscription_lead
        with self._storage.transaction() as tx:
            sub = tx.get_subscription(sub_id, for_update=True)
            if sub is None or sub.status is SubscriptionStatus.CANCELLED or sub.next_issue_at > now:
                return False  # another worker moved it on, or it was cancelled meanwhile
            plan = tx.get_plan(sub.plan_id)
            if plan is None:
                return False
            index = sub.next_index
            starts, ends = period_bounds(plan, sub.anchor, index)
            window = max(invoice_deadline(plan, starts) - now, MIN_INVOICE_WINDOW)
            request = NewInvoice(
                value=Amount(plan.amount),
                chain_id=ChainId(plan.chain_id),
                description=f"{plan.name}: period {index + 1}",
                accepted_tokens=tuple(Token(t) for t in plan.accepted_tokens),
                deadline_secs=Uint(window),
                data={DATA_KEY: sub.id, "period": index, "reference": sub.reference},
                vs_currency=plan.currency,
            )
            invoice = self._make_invoice(tx, sub.owner, request, now, None)
            period = Period(sub.id, index, starts, ends, invoice.guid, now)
            if not tx.insert_period(period):
                raise _Lost  # the unique key says another worker made it: undo ours
            sub = attrs.evolve(
                sub,
                next_index=index + 1,
                next_issue_at=issue_time(plan, sub.anchor, index + 1, lead),
                updated_at=now,
            )
            tx.update_subscription(sub)
            self._announce(tx, sub, period, SubscriptionEvent.INVOICED, now)
        return True

    def settle(self, limit: int = BATCH) -> int:
        """Move every subscription by what its open periods' invoices did (paid, expired,
        or past their due date); returns how many events this call wrote."""
        written = 0
        after: tuple[str, int] | None = None
        while True:
            with self._storage.transaction() as tx:
                page = tx.open_periods(limit, after)
            if not page:
                return written
            after = (page[-1].subscription_id, page[-1].index)
            for sub_id in dict.fromkeys(p.subscription_id for p in page):
                statuses = {
                    p.guid: self._read_invoice(p.guid).status
                    for p in page
                    if p.subscription_id == sub_id
                }
                written += self._settle_one(sub_id, statuses)
            if len(page) < limit:
                return written

    def _settle_one(self, sub_id: str, statuses: dict[str, Status]) -> int:
        now = self._now()
        with self._storage.transaction() as tx:
            sub = tx.get_subscription(sub_id, for_update=True)
            if sub is None:
                return 0
            periods = [p for p in tx.periods_of(sub_id) if p.guid in statuses]
            written = 0
            for step in assess(sub, periods, statuses, now):
                if step.period is not None:
                    tx.update_period(step.period)
                if step.event is not None:
                    tx.update_subscription(step.subscription)
                    self._announce(tx, step.subscription, step.period, step.event, now)
                    written += 1
        return written

    def tick(self) -> int:
        """One worker pass: issue what is due, then settle; returns the events written."""
        self.issue_due()
        return self.settle()

    def run(self, halt: threading.Event) -> None:
        """The worker's loop: a pass every ``worker_sweep_interval`` until ``halt``; while
        storage is down the passes back off (``paycore.ops.outages``)."""
        settings = self._settings
        guard = LoopGuard.from_settings(
            "subscriptions", log, settings, pace=min(settings.worker_poll_interval, 1.0)
        )
        while not halt.is_set():
            try:
                self.tick()
            except StorageUnavailable as exc:
                halt.wait(guard.failed(exc))
                continue
            except Exception:  # a bug: keep going, the traceback says where
                log.exception("subscriptions pass failed")
            else:
                guard.succeeded()
            halt.wait(settings.worker_sweep_interval)

    # -- events -------------------------------------------------------------------------------
    def _announce(
        self,
        tx: EventTx,
        sub: Subscription,
        period: Period | None,
        event: SubscriptionEvent,
        now: int,
    ) -> None:
        """One outbox event, and its webhook deliveries, in ``tx``: committed with the change."""
        payload: Json = {**sub.to_wire(), "period": None if period is None else period.to_wire()}
        new = NewEvent(sub.owner, sub.id, payload, now, event.value)
        event_id = tx.add_event(new.owner, new.guid, new.payload, now, new.type)
        enqueue_webhook(tx, event_id, new, round(self._clock() * 1000))


def _unit(raw: str) -> PeriodUnit:
    try:
        return PeriodUnit(raw)
    except ValueError:
        raise InvalidInput("periodUnit", "must be day or month") from None


def _days(raw: int | None, field: str, most: int) -> int:
    value = 0 if raw is None else raw
    if value > most:
        raise InvalidInput(field, f"must be at most {most}")
    return value


def _page(offset: int | None, limit: int | None) -> tuple[int, int]:
    off = 0 if offset is None else offset
    lim = PAGE_MAX if limit is None else limit
    if lim < 1:
        raise InvalidInput("limit", "must be at least 1")
    return off, min(lim, PAGE_MAX)


__all__ = [
    "DATA_KEY",
    "PlanNotFound",
    "SubscriptionNotFound",
    "SubscriptionView",
    "Subscriptions",
]
