"""Turning a POST /invoice body into an Invoice, attributing deposits to invoices -- one at
a time, or a watcher's batch at once -- and taking back a deposit a reorg removed.

All run inside the caller's storage transaction; none knows about HTTP. Validation
reports the first bad field as ``InvalidInput`` so a merchant sees exactly what to fix.
A batch decides deposit by deposit exactly as single attribution does (one shared
``_valued``), and only its reads and writes are gathered, so the two cannot drift apart.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence, Set
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

import attrs

from ..config import Settings
from ..errors import InvalidInput, NoAddressDeriver, PriceUnavailable
from ..prices.pricing import DepositValuer
from ..storage import StorageTx
from ..storage.contract import TransferKey
from . import machine
from .aliases import resolve_token
from .detected import Detected
from .fields import Address, Amount, ChainId, Token, Uint
from .money import MAX_AMOUNT, parse_amount, value_at
from .records import Deposit, Invoice, Payment, Status, Transaction, Valuation
from .tokens import normalize_address, normalize_token_address

MAX_ACCEPTED_TOKENS = 20
MAX_DESCRIPTION = 2000
#: Longest redirectUrl or cancelUrl: browsers and proxies handle URLs up to about this length.
MAX_URL = 2000
MAX_DEADLINE_SECS = 366 * 24 * 3600
#: RFC 5321's longest forward path less its angle brackets.
MAX_EMAIL = 254
#: The languages receipts are written in (``paycore.notify.receipts``); the first is the default.
RECEIPT_LANGUAGES = ("en", "de", "fr", "es")


@attrs.frozen
class NewInvoice:
    """What a merchant asks for when creating an invoice (POST /invoice), each value already
    of its type (``paycore.api.wire`` reads it from the wire). The rules that need more
    than one field or the settings are :func:`parse_new_invoice`'s."""

    value: Amount = attrs.field(metadata={"doc": "fiat value, a decimal string"})
    chain_id: ChainId = attrs.field(metadata={"doc": "the chain the invoice is paid on"})
    description: str = attrs.field(
        metadata={"doc": "shown to the payer", "schema": {"maxLength": MAX_DESCRIPTION}}
    )
    accepted_tokens: tuple[Token, ...] = attrs.field(
        metadata={
            "doc": "tokens the invoice may be paid in, on chainId",
            "schema": {"minItems": 1, "maxItems": MAX_ACCEPTED_TOKENS},
        }
    )
    deadline_secs: Uint | None = attrs.field(default=None, metadata={"doc": "seconds until expiry"})
    data: dict[str, Any] | None = attrs.field(
        default=None, metadata={"doc": "the merchant's own data, returned as given"}
    )
    address: Address | None = attrs.field(
        default=None, metadata={"doc": "deposit address; derived when absent"}
    )
    token: Token | None = attrs.field(
        default=None, metadata={"doc": "the token shown first; one of acceptedTokens"}
    )
    vs_currency: str | None = attrs.field(
        default=None, metadata={"doc": "a configured fiat currency"}
    )
    redirect_url: str | None = attrs.field(
        default=None,
        metadata={
            "doc": "http(s) URL of the shop the checkout page leads back to once paid",
            "schema": {"maxLength": MAX_URL},
        },
    )
    cancel_url: str | None = attrs.field(
        default=None,
        metadata={
            "doc": "http(s) URL the checkout page offers to a payer who gives up",
            "schema": {"maxLength": MAX_URL},
        },
    )
    redirect_automatically: bool | None = attrs.field(
        default=None,
        metadata={"doc": "the checkout page follows redirectUrl by itself, after a countdown"},
    )
    buyer_email: str | None = attrs.field(
        default=None,
        metadata={
            "doc": "the buyer's e-mail: a receipt is mailed when paid and when refunded; "
            "never shown in the invoice record",
            "schema": {"maxLength": MAX_EMAIL},
        },
    )
    language: str | None = attrs.field(
        default=None,
        metadata={
            "doc": "the language of the buyer's receipts (default en)",
            "schema": {"enum": list(RECEIPT_LANGUAGES)},
        },
    )


@attrs.frozen
class CreateInvoice(NewInvoice):
    """POST /invoice: the invoice's fields, plus who claims to create it and the optional
    proof of work."""

    owner: Address | None = attrs.field(
        default=None, metadata={"doc": "merchant address; must match the session key's owner"}
    )
    challenge: str | None = attrs.field(default=None, metadata={"doc": "proof-of-work challenge"})
    nonce: Uint | None = attrs.field(default=None, metadata={"doc": "proof-of-work nonce"})


def parse_new_invoice(
    settings: Settings,
    request: NewInvoice,
    owner: str,
    now: int,
    derive_address: Callable[[int], str] | None,
) -> Invoice:
    """Validate a creation request. ``derive_address(chain_id)`` allocates a deposit address
    when the request carries none; ``None`` means no chain backend can."""
    value = parse_amount(request.value, "value")
    chain_id = request.chain_id
    settings.chain(chain_id)

    description = request.description
    if len(description) > MAX_DESCRIPTION:
        raise InvalidInput("description", f"longer than {MAX_DESCRIPTION} characters")

    raw_tokens = request.accepted_tokens
    if not raw_tokens:
        raise InvalidInput("acceptedTokens", "must be a non-empty array")
    if len(raw_tokens) > MAX_ACCEPTED_TOKENS:
        raise InvalidInput("acceptedTokens", f"at most {MAX_ACCEPTED_TOKENS} entries")
    accepted: list[str] = []
    for i, raw in enumerate(raw_tokens):
        token = resolve_token(settings, raw, f"acceptedTokens[{i}]", chain_id=chain_id)
        if token.chain_id != chain_id:
            raise InvalidInput(
                f"acceptedTokens[{i}]", f"is on chain {token.chain_id}, the invoice on {chain_id}"
            )
        if str(token) not in accepted:
            accepted.append(str(token))

    if request.token is None:
        display_token = accepted[0]
    else:
        display_token = str(resolve_token(settings, request.token, "token", chain_id=chain_id))
        if display_token not in accepted:
            raise InvalidInput("token", "must be one of acceptedTokens")

    deadline_secs: int = (
        settings.default_deadline_secs if request.deadline_secs is None else request.deadline_secs
    )
    if not 0 < deadline_secs <= MAX_DEADLINE_SECS:
        raise InvalidInput("deadlineSecs", f"must be between 1 and {MAX_DEADLINE_SECS}")

    data = request.data or {}

    address: str
    if request.address is not None:
        address = normalize_address(chain_id, request.address, "address")
    elif derive_address is None:
        raise NoAddressDeriver("address", chain_id, "required")
    else:
        address = derive_address(chain_id)

    vs_currency = _vs_currency(settings, request.vs_currency)
    redirect_url = shop_url(request.redirect_url, "redirectUrl")
    cancel_url = shop_url(request.cancel_url, "cancelUrl")
    if request.redirect_automatically and redirect_url is None:
        raise InvalidInput("redirectAutomatically", "needs a redirectUrl")

    buyer_email = checked_email(request.buyer_email, "buyerEmail")
    if request.language is not None and request.language not in RECEIPT_LANGUAGES:
        raise InvalidInput("language", f"must be one of {', '.join(RECEIPT_LANGUAGES)}")

    return Invoice(
        guid=str(uuid.uuid4()),
        created_at=now,
        deadline=now + deadline_secs,
        status=Status.INIT,
        value=value,
        token=display_token,
        chain_id=chain_id,
        description=description,
        address=address,
        owner=owner,
        accepted_tokens=tuple(accepted),
        data=data,
        vs_currency=vs_currency,
        redirect_url=redirect_url,
        cancel_url=cancel_url,
        redirect_automatically=bool(request.redirect_automatically),
        buyer_email=buyer_email,
        language=request.language,
    )


def checked_email(raw: str | None, field: str) -> str | None:
    """A mailbox a receipt can go to: ``local@domain``, printable ASCII without spaces, at
    most ``MAX_EMAIL`` characters. Strict on what breaks a mail header (CR, LF,
    commas, angle brackets: a second recipient smuggled in), lenient on the rest -- the
    mail server is the judge of whether the mailbox exists."""
    if raw is None or not raw.strip():
        return None
    text = raw.strip()
    if len(text) > MAX_EMAIL:
        raise InvalidInput(field, f"longer than {MAX_EMAIL} characters")
    local, at, domain = text.rpartition("@")
    bad = any(c.isspace() or ord(c) < 32 or c in ',;<>()[]\\"' for c in text)
    if not at or not local or "." not in domain or bad or domain.startswith("."):
        raise InvalidInput(field, "must be an e-mail address such as buyer@example.com")
    if not text.isascii():
        # The mail notifier speaks plain SMTP, without SMTPUTF8: such a mailbox would fail
        # at every send, so it is refused here, where the merchant can still fix it.
        raise InvalidInput(field, "must be ASCII (an international domain in its xn-- form)")
    return text


def shop_url(raw: str | None, field: str) -> str | None:
    """A URL the checkout page may send a payer to: absolute http or https with a host, no
    credentials, no spaces or control characters. Why so strict: the page puts it in a link
    and may follow it by itself, so ``javascript:`` or ``data:`` would run in the payer's
    browser, and ``user:pass@`` hides the real host from a glance."""
    if raw is None:
        return None
    text = raw.strip()
    if not text:
        return None
    if len(text) > MAX_URL:
        raise InvalidInput(field, f"longer than {MAX_URL} characters")
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in text):
        raise InvalidInput(field, "must be an http or https URL without spaces")
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 -- raises on a port that is not a number
    except ValueError:
        raise InvalidInput(field, "must be an http or https URL") from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise InvalidInput(field, "must be an http or https URL")
    if parts.username is not None or parts.password is not None:
        raise InvalidInput(field, "must not carry a user name or password")
    return text


def _vs_currency(settings: Settings, raw: object) -> str:
    """The invoice's vsCurrency: the default one, or another of ``vs_currencies``, whose
    price table then values its deposits."""
    default = settings.vs_currency.lower()
    if raw is None:
        return default
    allowed = (default, *settings.vs_currencies)
    if not isinstance(raw, str) or raw.strip().lower() not in allowed:
        raise InvalidInput("vsCurrency", f"must be one of {', '.join(allowed)}")
    return raw.strip().lower()


def pick_invoice(candidates: list[Invoice], deposit: Deposit) -> Invoice | None:
    """Which invoice at an address a deposit pays: the oldest still open one created before
    the deposit; failing that, the newest created before it (a late or extra payment)."""
    before = [i for i in candidates if i.created_at <= deposit.timestamp] or candidates
    for invoice in before:
        if invoice.status in machine.OPEN:
            return invoice
    return before[-1] if before else None


def checked_deposit(deposit: Deposit) -> Deposit:
    """A deposit a host hands to ``Gateway.record_deposit``, checked and normalised at the
    edge (the watchers build theirs from chain data): ``InvalidInput`` with a one-line text
    for a field of the wrong type or out of range; the deposit address and token in their
    canonical form."""
    for field, value in (
        ("chain_id", deposit.chain_id),
        ("log_index", deposit.log_index),
        ("timestamp", deposit.timestamp),
        ("block_number", deposit.block_number),
    ):
        if not isinstance(value, int) or isinstance(value, bool):
            raise InvalidInput(f"deposit.{field}", "must be an integer")
    if deposit.chain_id < 1 or deposit.timestamp < 0 or deposit.log_index < -1:
        raise InvalidInput("deposit", "chain_id, timestamp or log_index out of range")
    for field, text in (("tx_hash", deposit.tx_hash), ("from_", deposit.from_)):
        if not isinstance(text, str) or not text or len(text) > 128:
            raise InvalidInput(f"deposit.{field}", "must be a non-empty string")
    amount = deposit.amount
    if not isinstance(amount, Decimal) or not amount.is_finite():
        raise InvalidInput("deposit.amount", "must be a finite Decimal")
    if amount < 0 or amount >= MAX_AMOUNT:
        raise InvalidInput("deposit.amount", "must be at least 0 and below 10^30")
    return attrs.evolve(
        deposit,
        to=normalize_address(deposit.chain_id, deposit.to, "deposit.to"),
        token=normalize_token_address(deposit.chain_id, deposit.token, "deposit.token"),
    )


def attribute_deposit(
    tx: StorageTx, deposit: Deposit, prices: DepositValuer, tolerance: Decimal
) -> list[Invoice]:
    """Record a deposit once and apply it; returns the invoice records to emit as events.

    Idempotent: the transaction row's unique key (chain, txHash, logIndex, token) makes a
    second attribution of the same deposit a no-op. Raises ``PriceUnavailable`` (or its
    ``StalePrice``) for a counted deposit with no fresh price in the invoice's vsCurrency,
    leaving nothing written (the watcher parks it and retries later).
    """
    candidates = tx.invoices_at_address(deposit.chain_id, deposit.to, for_update=True)
    valued = _valued(tx, candidates, deposit, prices)
    if valued is None:
        return []
    target, record, payment = valued
    # A row a reorg flagged gives way: the same transfer, mined again, counts once more.
    if not tx.insert_transaction(record) or not record.counted:
        return []
    changes = machine.attribute(target, payment, tolerance)
    tx.update_invoice(changes[-1])
    return changes


def detected_transfers(
    tx: StorageTx,
    chain_id: int,
    transfers: Sequence[Deposit],
    depth: Mapping[int, int],
    required: int,
    now: int,
) -> list[Detected]:
    """The transfers of ``chain_id`` mined but not yet ``required`` deep, as the detected
    transfers of the invoices they would pay (``paycore.domain.detected``): each goes to
    the invoice attribution would pick now (:func:`pick_invoice`), and only when that
    invoice accepts its token -- a transfer that would not count is not "confirming".
    ``depth`` is each block's confirmations (1: the head). Reads, never locks: nothing
    here changes an invoice."""
    wanted = sorted({t.to for t in transfers if t.chain_id == chain_id})
    at = tx.invoices_at_addresses(chain_id, wanted) if wanted else {}
    found: list[Detected] = []
    for transfer in transfers:
        target = pick_invoice(at.get(transfer.to, []), transfer)
        if target is None or f"{chain_id}:{transfer.token}" not in target.accepted_tokens:
            continue
        found.append(
            Detected(
                chain_id=chain_id,
                tx_hash=transfer.tx_hash,
                log_index=transfer.log_index,
                token=transfer.token,
                from_=transfer.from_,
                to=transfer.to,
                amount=transfer.amount,
                block_number=transfer.block_number,
                block_hash=transfer.block_hash,
                timestamp=transfer.timestamp,
                confirmations=depth[transfer.block_number],
                required=required,
                guid=target.guid,
                seen_at=now,
            )
        )
    return found


def transfer_key(deposit: Deposit) -> TransferKey:
    """The transfer a deposit is: the unique key of its transaction row."""
    return (deposit.chain_id, deposit.tx_hash, deposit.log_index, deposit.token)


class AttributionRace(Exception):
    """A deposit of the batch was recorded by another transaction while the batch was being
    attributed (it would have been counted twice): the caller rolls back and retries."""


@attrs.frozen
class Attributed:
    """What :func:`attribute_deposits` did with a batch, in chain order."""

    #: Invoice records to emit as events, one per change.
    changes: list[Invoice]
    #: Deposits recorded now or before: nothing more to do for them.
    done: list[Deposit]
    #: Deposits set aside, with why: no usable price, or behind such a one at their address.
    waiting: list[tuple[Deposit, str]]
    #: With ``hold``: the first deposit that could not be valued, and why; it and every
    #: deposit after it were left alone.
    held: tuple[Deposit, str] | None = None


#: Why a deposit with a usable price waits all the same (``paycore.prices.parking``).
BEHIND = "behind a deposit waiting for a price"


def attribute_deposits(
    tx: StorageTx,
    deposits: Sequence[Deposit],
    prices: DepositValuer,
    tolerance: Decimal,
    *,
    waiting: Set[str] = frozenset(),
    hold: bool = False,
) -> Attributed:
    """Record and apply a batch of deposits (chain order) in ``tx``, as
    :func:`attribute_deposit` would one after the other, with a constant number of reads
    and writes: the invoices of every address, locked, in one read; the transfers already
    recorded in one; the new rows, the invoice updates, in one write each.

    A counted deposit with no usable price is set aside (``waiting``), and so is every later
    deposit to an address in ``waiting`` or to one that had a deposit set aside, keeping each
    address's deposits in order; with ``hold`` the batch stops at the first one instead
    (``held``). Raises :class:`AttributionRace` when a row it expected to be new was not:
    the transaction must then be rolled back."""
    by_address: dict[tuple[int, str], list[Invoice]] = {}
    addresses: dict[int, set[str]] = {}
    for deposit in deposits:
        addresses.setdefault(deposit.chain_id, set()).add(deposit.to)
    # Locks first, then the known transfers: another attributor of these deposits takes
    # the same locks before it writes, so what is read next cannot change under us.
    for chain_id, wanted in sorted(addresses.items()):
        found = tx.invoices_at_addresses(chain_id, sorted(wanted), for_update=True)
        by_address.update(((chain_id, a), items) for a, items in found.items())
    known = tx.known_transfers([transfer_key(d) for d in deposits])
    valuer = prices.for_batch(tx, [i for items in by_address.values() for i in items])
    blocked = set(waiting)
    done: list[Deposit] = []
    aside: list[tuple[Deposit, str]] = []
    records: list[Transaction] = []
    changes: list[Invoice] = []
    changed: dict[str, Invoice] = {}
    held: tuple[Deposit, str] | None = None
    for deposit in deposits:
        key = transfer_key(deposit)
        if key in known:  # recorded before (a re-scan): already applied
            done.append(deposit)
            continue
        if deposit.to in blocked:
            aside.append((deposit, BEHIND))
            continue
        candidates = by_address.get((deposit.chain_id, deposit.to), [])
        try:
            valued = _valued(tx, candidates, deposit, valuer)
        except PriceUnavailable as exc:
            if hold:
                held = (deposit, str(exc))
                break
            aside.append((deposit, str(exc)))
            blocked.add(deposit.to)
            continue
        known.add(key)  # the same transfer twice in a batch counts once
        done.append(deposit)
        if valued is None:
            continue
        target, record, payment = valued
        records.append(record)
        if not record.counted:
            continue
        steps = machine.attribute(target, payment, tolerance)
        candidates[candidates.index(target)] = changed[target.guid] = steps[-1]
        changes.extend(steps)
    if not all(tx.insert_transactions(records)):
        raise AttributionRace("a deposit of the batch was recorded meanwhile")
    tx.update_invoice_states(list(changed.values()))
    return Attributed(changes, done, aside, held)


def _valued(
    tx: StorageTx, candidates: list[Invoice], deposit: Deposit, prices: DepositValuer
) -> tuple[Invoice, Transaction, Payment] | None:
    """The invoice ``deposit`` pays among ``candidates`` (those at its address, oldest
    first), its transaction row and its payment; None when no invoice is there. Raises
    ``PriceUnavailable`` for a counted deposit with no usable price."""
    target = pick_invoice(candidates, deposit)
    if target is None:
        return None
    token_id = f"{deposit.chain_id}:{deposit.token}"
    counted = token_id in target.accepted_tokens
    valuation: Valuation | None
    try:
        valuation = prices.valuation(tx, target, token_id, deposit.timestamp)
        vs_value = value_at(valuation.rate, deposit.amount)
    except PriceUnavailable:
        if counted:
            raise
        valuation = None
        vs_value = Decimal(0)  # an unpriced foreign token is still recorded, at no value
    payment = Payment(
        tx_hash=deposit.tx_hash,
        log_index=deposit.log_index,
        chain_id=deposit.chain_id,
        token=deposit.token,
        from_=deposit.from_,
        amount=deposit.amount,
        vs_value=vs_value,
        timestamp=deposit.timestamp,
    )
    record = Transaction.of_deposit(
        payment,
        owner=target.owner,
        guid=target.guid,
        counted=counted,
        block_number=deposit.block_number if deposit.block_hash else None,
        block_hash=deposit.block_hash or None,
        valuation=valuation,
    )
    return target, record, payment


def reorg_deposit(
    tx: StorageTx, record: Transaction, now: int, tolerance: Decimal
) -> list[Invoice]:
    """Take a deposit whose block a reorg replaced back out; returns the invoice records to
    emit as events (none for a deposit that was not counted, or already taken back).

    The row is flagged ``reorged`` (it stays stored, listed nowhere); the payment leaves its
    invoice, whose paidAmount and status are recomputed by the state machine
    (``domain.machine.remove_payment``). Idempotent through ``mark_reorged``, which flags a row
    once. If the transfer is mined again, :func:`attribute_deposit` counts it again."""
    flagged = tx.mark_reorged(*record.key)
    if flagged is None or not flagged.counted or flagged.guid is None:
        return []
    invoice = tx.get_invoice(flagged.guid, for_update=True)
    if invoice is None:
        return []
    changes = machine.remove_payment(invoice, flagged.key, now, tolerance)
    if changes:
        tx.update_invoice(changes[-1])
    return changes
