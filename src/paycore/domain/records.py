"""The records of docs/interface.md §Records, and their JSON wire form (camelCase names).

Records are frozen attrs classes: a change is a new record (``attrs.evolve``), so a failed
transition can never leave a half-updated invoice behind. Money is Decimal inside; only
``to_wire`` turns it into the string (or, for ``vsValue``, the number) the interface shows.
"""

from __future__ import annotations

import json
from decimal import Decimal, localcontext
from enum import StrEnum
from typing import Any

import attrs

from .detected import Detected
from .money import MONEY_CONTEXT, to_text

Json = dict[str, Any]


def json_bytes(data: Any) -> bytes:
    """``data`` as the HTTP interface sends JSON: compact, UTF-8, non-ASCII kept as is."""
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()


class Status(StrEnum):
    """An invoice's status; the moves between them are in ``paycore.domain.machine.TRANSITIONS``."""

    INIT = "init"
    PARTIAL_PAID = "partialPaid"
    PAID = "paid"
    EXPIRED = "expired"


def _number(value: Decimal) -> float | int:
    """A JSON number from a Decimal, only at the edge (the interface types vsValue as a number)."""
    if value == value.to_integral_value():
        return int(value)
    return float(value)


@attrs.frozen
class Payment:
    """One deposit attributed to an invoice: an element of ``Invoice.payments``.

    ``amount`` is in token units (``Decimal("0.5")`` ETH, not wei); ``vs_value`` is its
    worth in the invoice's vsCurrency when it was attributed. ``log_index`` is -1 for a
    native-coin transfer, which has no log.
    """

    tx_hash: str
    log_index: int
    chain_id: int
    token: str
    from_: str
    amount: Decimal
    vs_value: Decimal
    timestamp: int

    def to_wire(self) -> Json:
        return {
            "txHash": self.tx_hash,
            "logIndex": self.log_index,
            "chainId": str(self.chain_id),
            "token": self.token,
            "from": self.from_,
            "amount": to_text(self.amount),
            "vsValue": _number(self.vs_value),
            "timestamp": self.timestamp,
        }

    @classmethod
    def from_wire(cls, data: Json) -> Payment:
        return cls(
            tx_hash=data["txHash"],
            log_index=int(data["logIndex"]),
            chain_id=int(data["chainId"]),
            token=data["token"],
            from_=data["from"],
            amount=Decimal(data["amount"]),
            vs_value=Decimal(str(data["vsValue"])),
            timestamp=int(data["timestamp"]),
        )


class RefundStatus(StrEnum):
    """Where a refund stands: built and waiting to be seen on chain, seen paid out of the
    owner's wallet by the watcher, or withdrawn by the merchant before it was sent."""

    PENDING = "pending"
    CONFIRMED = "confirmed"
    CANCELLED = "cancelled"


class RateSource(StrEnum):
    """Which rate turned a refund's token amount into the invoice's vsCurrency (or back):
    the rate its payments were valued at, or the price table in force when it was made."""

    PAYMENT = "payment"
    NOW = "now"


@attrs.frozen
class Refund:
    """Money sent back to a payer from the owner's wallet: an element of ``Invoice.refunds``.

    ``token`` is the token's address as in ``Payment.token``; ``amount`` is in token units
    (exactly a whole number of the token's base units), ``vs_value`` its worth in the
    invoice's vsCurrency at ``rate`` (vsCurrency per token, chosen by ``rate_source``).
    ``tx_hash`` and ``log_index`` name the wallet's ``Withdrawn`` event once the watcher has
    seen it (``status`` confirmed); ``settled_at`` is that block's time, or when the merchant
    cancelled it.
    """

    id: str
    guid: str
    owner: str
    chain_id: int
    token: str
    to: str
    amount: Decimal
    vs_value: Decimal
    rate: Decimal
    rate_source: RateSource
    status: RefundStatus
    created_at: int
    tx_hash: str | None = None
    log_index: int | None = None
    settled_at: int | None = None

    @property
    def holds_funds(self) -> bool:
        """Pending or confirmed: counted against what is left to refund."""
        return self.status is not RefundStatus.CANCELLED

    def to_wire(self) -> Json:
        return {
            "id": self.id,
            "guid": self.guid,
            "status": self.status.value,
            "chainId": str(self.chain_id),
            "token": self.token,
            "to": self.to,
            "amount": to_text(self.amount),
            "vsValue": _number(self.vs_value),
            "rate": to_text(self.rate),
            "rateSource": self.rate_source.value,
            "createdAt": self.created_at,
            "txHash": self.tx_hash,
            "logIndex": self.log_index,
            "settledAt": self.settled_at,
        }

    @classmethod
    def from_wire(cls, data: Json, owner: str) -> Refund:
        """The record ``to_wire`` wrote (the wire form leaves out the owner: pass it)."""
        return cls(
            id=data["id"],
            guid=data["guid"],
            owner=owner,
            chain_id=int(data["chainId"]),
            token=data["token"],
            to=data["to"],
            amount=Decimal(data["amount"]),
            vs_value=Decimal(str(data["vsValue"])),
            rate=Decimal(data["rate"]),
            rate_source=RateSource(data["rateSource"]),
            status=RefundStatus(data["status"]),
            created_at=int(data["createdAt"]),
            tx_hash=data.get("txHash"),
            log_index=None if data.get("logIndex") is None else int(data["logIndex"]),
            settled_at=None if data.get("settledAt") is None else int(data["settledAt"]),
        )


@attrs.frozen
class Invoice:
    """An invoice as paycore stores it: frozen, so every change is a new record.

    Field names are the wire names in snake case (``created_at`` is ``createdAt``);
    docs/interface.md §Records says what each means. Money (``value``, ``paid_amount``) is
    ``Decimal`` in ``vs_currency``; times are unix seconds. ``to_wire`` gives the JSON record
    the interface shows and ``from_wire`` reads it back. Status moves are made by
    ``paycore.domain.machine`` (the state machine), never by editing a record by hand.

    ``refunds`` are not part of the invoice's stored row: storage keeps them as rows of
    their own and returns invoices without them; the gateway attaches them to every
    invoice it hands out or announces (``Gateway.refund_invoice``). ``detected`` likewise:
    the transfers the watcher saw mined but not yet deep enough (``paycore.domain.detected``),
    provisional, never part of ``paid_amount`` nor of the record's value.
    """

    guid: str
    created_at: int
    deadline: int
    status: Status
    value: Decimal
    token: str
    chain_id: int
    description: str
    address: str
    owner: str
    accepted_tokens: tuple[str, ...]
    data: Json = attrs.field(factory=dict)
    paid_amount: Decimal = Decimal(0)
    payments: tuple[Payment, ...] = ()
    vs_currency: str = "usd"
    refunds: tuple[Refund, ...] = ()
    #: What the state machine just did to make this record (``paycore.domain.changes``),
    #: named for the event that announces it; None on a record read back from storage.
    #: Not part of the record's value (ignored by ``==``) nor of its wire form.
    change: str | None = attrs.field(default=None, eq=False, repr=False, kw_only=True)
    #: Where the checkout page leads the payer: back to the shop once paid or expired
    #: (``redirect_url``, followed by itself after a countdown when ``redirect_automatically``),
    #: and back without paying (``cancel_url``). Checked http(s) URLs, or None.
    redirect_url: str | None = None
    cancel_url: str | None = None
    redirect_automatically: bool = False
    #: The checkout page's address, fixed when the invoice was created (the configured
    #: ``public_url`` or the creating request's address, and the mount prefix): every later
    #: reply, event and webhook builds ``paymentUrl`` from it, whichever process sends it.
    #: None on invoices stored before it was kept; the gateway's default applies to them.
    checkout_url: str | None = None
    #: Where the buyer's receipts go (paid, refunded; ``paycore.notify.receipts``), and the
    #: language they are written in. Private: never part of the wire record, which anyone
    #: holding the invoice's guid may read.
    buyer_email: str | None = None
    language: str | None = None
    #: Transfers mined but not yet ``confirmations`` deep, oldest first: provisional, so
    #: ignored by ``==`` and never stored with the invoice (``StorageTx.detected_of``).
    detected: tuple[Detected, ...] = attrs.field(default=(), eq=False, repr=False, kw_only=True)

    def checkout_json(self) -> Json | None:
        """The checkout fields, and the buyer's receipt address and language, as stored in
        one JSON column (no revision needed); None when none is set."""
        if (
            self.redirect_url is None
            and self.cancel_url is None
            and self.checkout_url is None
            and self.buyer_email is None
            and self.language is None
        ):
            return None
        stored: Json = {
            "redirectUrl": self.redirect_url,
            "cancelUrl": self.cancel_url,
            "redirectAutomatically": self.redirect_automatically,
        }
        if self.checkout_url is not None:
            stored["checkoutUrl"] = self.checkout_url
        if self.buyer_email is not None:
            stored["buyerEmail"] = self.buyer_email
        if self.language is not None:
            stored["language"] = self.language
        return stored

    @property
    def refunded_amount(self) -> Decimal:
        """The sum of the confirmed refunds' ``vs_value``: what went back to payers, in
        vsCurrency, as ``paid_amount`` is what came in. Pending ones are not counted."""
        with localcontext(MONEY_CONTEXT):
            return sum(
                (r.vs_value for r in self.refunds if r.status is RefundStatus.CONFIRMED),
                Decimal(0),
            )

    @property
    def is_tip_jar(self) -> bool:
        """A ``value`` of 0: the first counted deposit pays it, whatever its amount."""
        return self.value == 0

    def to_wire(self, checkout_url: str | None = None) -> Json:
        """The JSON record of the interface; ``paymentUrl`` is added when ``checkout_url``
        is given (the invoice's own ``checkout_url`` wins over it: the link a buyer got
        once stays the link). Decimals become strings, except ``vsValue``, a number."""
        wire: Json = {
            "guid": self.guid,
            "createdAt": self.created_at,
            "deadline": self.deadline,
            "status": self.status.value,
            "value": to_text(self.value),
            "token": self.token,
            "chainId": self.chain_id,
            "data": self.data,
            "description": self.description,
            "address": self.address,
            "owner": self.owner,
            "paidAmount": to_text(self.paid_amount),
            "payments": [p.to_wire() for p in self.payments],
            "refundedAmount": to_text(self.refunded_amount) if self.refunds else "0",
            "refunds": [r.to_wire() for r in self.refunds],
            "acceptedTokens": list(self.accepted_tokens),
            "vsCurrency": self.vs_currency,
            "detected": self.detected_wire(),
        }
        page = self.checkout_url or checkout_url
        if page is not None:
            wire["paymentUrl"] = payment_url(page, self.guid)
        if self.redirect_url is not None:
            wire["redirectUrl"] = self.redirect_url
            wire["redirectAutomatically"] = self.redirect_automatically
        if self.cancel_url is not None:
            wire["cancelUrl"] = self.cancel_url
        return wire

    def detected_wire(self) -> list[Json]:
        """``detected`` as the record shows it: a transfer already among ``payments`` (it
        reached its depth since the list was read) is left out, so it is never shown twice."""
        paid = {(p.chain_id, p.tx_hash, p.log_index, p.token) for p in self.payments}
        return [d.to_wire() for d in self.detected if d.key not in paid]

    @classmethod
    def from_wire(cls, data: Json, vs_currency: str = "usd") -> Invoice:
        """The record ``to_wire`` wrote; ``vs_currency`` applies to a record without its own
        ``vsCurrency`` (one written before the field was sent)."""
        return cls(
            guid=data["guid"],
            created_at=int(data["createdAt"]),
            deadline=int(data["deadline"]),
            status=Status(data["status"]),
            value=Decimal(data["value"]),
            token=data["token"],
            chain_id=int(data["chainId"]),
            description=data["description"],
            address=data["address"],
            owner=data["owner"],
            accepted_tokens=tuple(data["acceptedTokens"]),
            data=dict(data.get("data") or {}),
            paid_amount=Decimal(data["paidAmount"]),
            payments=tuple(Payment.from_wire(p) for p in data.get("payments", [])),
            vs_currency=str(data.get("vsCurrency") or vs_currency),
            refunds=tuple(Refund.from_wire(r, data["owner"]) for r in data.get("refunds", [])),
            redirect_url=data.get("redirectUrl"),
            cancel_url=data.get("cancelUrl"),
            redirect_automatically=bool(data.get("redirectAutomatically", False)),
            detected=tuple(
                Detected.from_wire(d, guid=data["guid"], to=data["address"])
                for d in data.get("detected", [])
            ),
        )


def payment_url(checkout_url: str, guid: str) -> str:
    return f"{checkout_url.rstrip('/')}/?invoice={guid}"


@attrs.frozen
class Deposit:
    """A transfer a chain backend saw arrive at a watched address, before attribution."""

    chain_id: int
    tx_hash: str
    log_index: int  # -1 for a native-coin transfer (docs/architecture.md §Chains)
    token: str  # token address, NATIVE for the coin
    from_: str
    to: str
    amount: Decimal
    timestamp: int
    block_number: int = 0
    block_hash: str = ""


@attrs.frozen
class Valuation:
    """How a transfer was valued when it was recorded, kept beside its vsValue so that an
    accountant can see the rate behind each figure (the accounting export's ``rate``,
    ``rate_source`` and ``rate_time`` columns): the price of one whole token in
    ``vs_currency``, the name of the source that gave it (``locked:<source>`` for a rate the
    invoice locked at creation), and the unix time that price describes."""

    rate: Decimal
    source: str
    as_of: int
    vs_currency: str


class TxType(StrEnum):
    DEPOSIT = "deposit"
    WITHDRAW = "withdraw"
    #: A withdrawal from the owner's wallet that paid one of its refunds (its invoice in
    #: ``guid``): recorded by the watcher like any withdrawal, named for what it did.
    REFUND = "refund"


@attrs.frozen
class Transaction:
    type: TxType
    tx_hash: str
    log_index: int
    chain_id: int
    token: str
    from_: str
    amount: Decimal
    vs_value: Decimal
    timestamp: int
    owner: str
    to: str | None = None
    guid: str | None = None
    counted: bool = True  # False: a deposit in a token outside acceptedTokens
    #: The block a deposit was found in, kept so a reorg that replaces it is noticed; None
    #: for withdrawals and for deposits fed in without one.
    block_number: int | None = None
    block_hash: str | None = None
    #: The block was replaced and the deposit taken back out of its invoice; such a row is
    #: kept for the record but listed nowhere, and the same transfer mined again replaces it.
    reorged: bool = False
    #: The rate ``vs_value`` was computed at; None for an unpriced (uncounted) deposit, and
    #: for rows recorded before rates were kept.
    valuation: Valuation | None = None

    @classmethod
    def of_deposit(
        cls,
        payment: Payment,
        *,
        owner: str,
        guid: str,
        counted: bool,
        block_number: int | None = None,
        block_hash: str | None = None,
        valuation: Valuation | None = None,
    ) -> Transaction:
        """The GET /transactions row of a deposit attributed to invoice ``guid``."""
        return cls(
            type=TxType.DEPOSIT,
            tx_hash=payment.tx_hash,
            log_index=payment.log_index,
            chain_id=payment.chain_id,
            token=payment.token,
            from_=payment.from_,
            amount=payment.amount,
            vs_value=payment.vs_value,
            timestamp=payment.timestamp,
            owner=owner,
            guid=guid,
            counted=counted,
            block_number=block_number,
            block_hash=block_hash,
            valuation=valuation,
        )

    @property
    def key(self) -> tuple[int, str, int, str]:
        """The transfer it records: unique among transaction rows."""
        return (self.chain_id, self.tx_hash, self.log_index, self.token)

    def to_wire(self) -> Json:
        wire: Json = {
            "type": self.type.value,
            "txHash": self.tx_hash,
            "logIndex": self.log_index,
            "chainId": str(self.chain_id),
            "token": self.token,
            "from": self.from_,
            "amount": to_text(self.amount),
            "vsValue": _number(self.vs_value),
            "timestamp": self.timestamp,
        }
        if self.type is not TxType.DEPOSIT:
            wire["to"] = self.to
        if self.type is not TxType.WITHDRAW and self.guid is not None:
            wire["guid"] = self.guid
        return wire


@attrs.frozen
class PriceSnapshot:
    vs_currency: str
    fetched_at: int
    prices: dict[str, Decimal] = attrs.field(factory=dict)

    def to_wire(self) -> Json:
        return {
            "vsCurrency": self.vs_currency,
            "fetchedAt": self.fetched_at,
            "prices": {k: _number(v) for k, v in sorted(self.prices.items())},
        }


@attrs.frozen
class SessionKey:
    """A registered session key. ``address`` (the key's EVM address) is how requests find it."""

    address: str
    public_key: str  # 0x04 + 128 hex, lowercase
    owner: str
    registered_at: int
    expires_at: int
    last_seen_nonce: int = 0
    encryption_public_key: str | None = None

    def to_wire(self) -> Json:
        return {
            "publicKey": self.public_key,
            "registeredAt": self.registered_at,
            "expiresAt": self.expires_at,
            "lastSeenNonce": self.last_seen_nonce,
        }


POW_ALGORITHM = "sha256(challenge || ':' || nonce) must have at least difficulty leading zero bits"


@attrs.frozen
class PowChallenge:
    challenge: str
    address: str
    difficulty: int
    expires_at: int

    def to_wire(self, now: int) -> Json:
        return {
            "challenge": self.challenge,
            "difficulty": self.difficulty,
            "expiresInSecs": max(0, self.expires_at - now),
            "algorithm": POW_ALGORITHM,
        }


@attrs.frozen
class WebhookConfig:
    owner: str
    url: str
    secret: str = attrs.field(repr=False)  # the signing key: never in a log or a traceback

    def to_wire(self) -> Json:
        return {"ownerAddress": self.owner, "url": self.url, "secret": self.secret}


@attrs.frozen
class OutboxEvent:
    """One invoice change, written in the same storage transaction as the change itself."""

    id: int
    owner: str
    guid: str
    payload: Json  # the full Invoice wire record at the time of the change
    created_at: int
    #: What happened (``paycore.domain.changes.EventType``): the payload alone cannot say
    #: whether a paid invoice was just paid or paid again. Older rows read as "invoice.updated".
    type: str = "invoice.updated"


#: The owner of a queue that reads every owner's events (``StorageTx.read_outbox``); no
#: owner is empty, so ``drain_queue`` of such a queue hands out nothing.
ALL_OWNERS = ""


@attrs.frozen
class OutboxRead:
    """What ``StorageTx.read_outbox`` found: the position it read from, the events after
    it, and where the position may move once they are handled."""

    position: int
    events: list[OutboxEvent]
    upto: int


@attrs.frozen
class NewEvent:
    """An outbox event not yet stored (``StorageTx.add_events``): a batch writes many."""

    owner: str
    guid: str
    payload: Json
    created_at: int
    type: str = "invoice.updated"


@attrs.frozen
class PollToken:
    """A legacy polling token from POST /poll/register."""

    token: str
    owner: str
    created_at: int
