"""Turning a POST /invoice body into an Invoice, and the pure rules of attribution: which
invoice at an address a deposit pays, and a host's deposit checked at the edge.

No I/O: the attribution that reads and writes storage (recording a deposit, valuing it,
taking back one a reorg removed) is ``paycore.accounting.attribution``, which applies these
rules. Validation reports the first bad field as ``InvalidInput`` so a merchant sees exactly
what to fix.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

import attrs

from ..config import Settings
from ..errors import InvalidInput, NoAddressDeriver
from . import machine
from .aliases import resolve_token
from .fields import Address, Amount, ChainId, Token, Uint
from .money import MAX_AMOUNT, parse_amount
from .records import Deposit, Invoice, Status
from .tokens import normalize_address, normalize_token_address

MAX_ACCEPTED_TOKENS = 20
MAX_DESCRIPTION = 2000
#: Longest redirectUrl or cancelUrl: browsers and proxies handle URLs up to about this length.
MAX_URL = 2000
MAX_DEADLINE_SECS = 366 * 24 * 3600
#: RFC 5321's longest forward path less its angle brackets.
MAX_EMAIL = 254
#: The languages receipts are written in (``paycore.notify.receipts``), the same nine the
#: checkout page speaks (its catalogues, ``checkout/assets/messages.js``); the first is the
#: default.
RECEIPT_LANGUAGES = ("en", "de", "es", "fr", "pt", "ru", "tr", "zh", "ja")


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
