"""``Gateway.links``: create, list, disable and open payment links.

Opening a link makes an invoice, so it is the one public call that writes: the use is
counted, the rate window moved and the invoice inserted in one storage transaction, so a
refusal or a failure leaves nothing behind, and the use limit holds however many buyers
open the link at once (``StorageTx.use_payment_link``). Why a per-link rate window and
not the proof of work of POST /invoice: docs/decisions.md, "Payment links".
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from decimal import Decimal

from ..accounting.creation import MakeInvoice
from ..config import Settings
from ..domain.fields import Amount, ChainId, Token, Uint
from ..domain.invoices import NewInvoice, parse_new_invoice
from ..domain.records import Invoice
from ..errors import Gone, InvalidInput, NoAddressDeriver, NotFound, PaycoreError
from ..storage import Storage
from .records import LinkUse, PaymentLink
from .requests import NewLink

LINK_PAGE_MAX = 50
#: Longest link id looked up: ours are 16 characters; anything much longer is not one.
MAX_LINK_ID = 64
#: The key each invoice a link makes carries in its ``data``: the link's id.
LINK_DATA_KEY = "paymentLink"

#: Makes and stores an invoice for an owner inside the caller's transaction (the gateway's
#: own creation path: address allocation, rate lock).
#: ``Gateway._new_invoice``: (tx, owner, request, now, checkout page address or None).


class LinkNotFound(NotFound):
    def __init__(self, link_id: str) -> None:
        super().__init__(f"payment link {link_id[:MAX_LINK_ID]} not found")


class TooManyOpens(PaycoreError):
    """A link opened more often than its rate window allows: 429 with ``Retry-After``."""

    status = 429

    def __init__(self, link_id: str, retry_after: int) -> None:
        self.headers = {"retry-after": str(retry_after)}
        super().__init__(f"too many requests: payment link {link_id} is busy, retry later")


class Links:
    """``Gateway.links``: create, list, disable and open an owner's payment links. Opening
    makes the invoice through the gateway's own creation path (``make_invoice``) in the
    transaction that counts the use; ``derives(chain_id)`` says whether a chain backend can
    give each invoice a fresh deposit address."""

    def __init__(
        self,
        storage: Storage,
        settings: Settings,
        now: Callable[[], int],
        make_invoice: MakeInvoice,
        derives: Callable[[int], bool],
        checkout_url: Callable[[], str],
    ) -> None:
        self._storage = storage
        self._checkout_url = checkout_url
        self._settings = settings
        self._now = now
        self._make_invoice = make_invoice
        self._derives = derives

    def url(self, link_id: str, checkout_url: str | None = None) -> str:
        """Where a buyer opens the link: ``payment_link_url`` or beside the checkout page
        (``checkout_url``, the one the current request resolves to, or the gateway's)."""
        base = self._settings.payment_link_url
        if base is None:
            page = checkout_url or self._checkout_url()
            base = page.rstrip("/").rsplit("/", 1)[0] + "/link"
        return f"{base.rstrip('/')}/{link_id}"

    def create(self, owner: str, request: NewLink) -> PaymentLink:
        """Store a new link for ``owner``. Its invoice fields are checked by the rules of
        POST /invoice now, so opening it later cannot fail on them; its chain needs a
        backend that derives deposit addresses (every invoice gets a fresh one)."""
        amount, low, high = _amounts(request)
        now = self._now()
        sample = NewInvoice(
            value=Amount(high if amount is None else amount),
            chain_id=request.chain_id,
            description=request.description,
            accepted_tokens=request.accepted_tokens,
            deadline_secs=request.deadline_secs,
            data=request.data,
            token=request.token,
            vs_currency=request.vs_currency,
        )
        checked = parse_new_invoice(self._settings, sample, owner, now, lambda _chain: "")
        if not self._derives(checked.chain_id):
            raise NoAddressDeriver(
                "chainId", checked.chain_id, "every invoice of a link needs a deposit address"
            )
        if request.expires_at is not None and request.expires_at <= now:
            raise InvalidInput("expiresAt", "must be in the future")
        if request.max_uses is not None and request.max_uses < 1:
            raise InvalidInput("maxUses", "must be at least 1")
        link = PaymentLink(
            id=secrets.token_urlsafe(12),
            owner=owner,
            created_at=now,
            chain_id=checked.chain_id,
            description=checked.description,
            accepted_tokens=checked.accepted_tokens,
            token=checked.token,
            vs_currency=checked.vs_currency,
            amount=amount,
            min_amount=low,
            max_amount=high,
            deadline_secs=request.deadline_secs,
            data=dict(checked.data),
            expires_at=request.expires_at,
            max_uses=request.max_uses,
        )
        with self._storage.transaction() as tx:
            tx.insert_payment_link(link)
        return link

    def get(self, link_id: str) -> PaymentLink:
        """The link ``link_id``; 404 when there is none."""
        if len(link_id) > MAX_LINK_ID:
            raise LinkNotFound(link_id)
        with self._storage.transaction() as tx:
            link = tx.get_payment_link(link_id)
        if link is None:
            raise LinkNotFound(link_id)
        return link

    def available(self, link_id: str) -> PaymentLink:
        """The link, if it may make an invoice now: 404 for an unknown link, 410 for a
        disabled, expired or used-up one. (Its rate window is only checked by opening.)"""
        link = self.get(link_id)
        state = link.state(self._now())
        if state != "active":
            raise _refusal(link_id, LinkUse(state), self._settings.link_open_window)
        return link

    def list(
        self, owner: str, *, offset: int | None = None, limit: int | None = None
    ) -> tuple[list[PaymentLink], int, int, int]:
        """(items newest first, total, offset, limit) of ``owner``'s links; ``limit`` is
        clamped to 50."""
        off = 0 if offset is None else offset
        lim = LINK_PAGE_MAX if limit is None else limit
        if lim < 1:
            raise InvalidInput("limit", "must be at least 1")
        lim = min(lim, LINK_PAGE_MAX)
        with self._storage.transaction() as tx:
            items, total = tx.list_payment_links(owner, offset=off, limit=lim)
        return items, total, off, lim

    def disable(self, owner: str, link_id: str) -> PaymentLink:
        """Stop ``owner``'s link from making invoices, for good; invoices it made stay as
        they are. Disabling it again changes nothing. Another owner's link is 404."""
        if len(link_id) > MAX_LINK_ID:
            raise LinkNotFound(link_id)
        with self._storage.transaction() as tx:
            link = tx.disable_payment_link(link_id, owner, self._now())
        if link is None:
            raise LinkNotFound(link_id)
        return link

    def open(
        self, link_id: str, amount: Decimal | None = None, checkout_url: str | None = None
    ) -> Invoice:
        """A buyer opens the link: a fresh invoice for its owner, for the link's amount or
        ``amount`` (within the link's bounds, when the buyer chooses), whose ``paymentUrl``
        is built on ``checkout_url`` (default: the gateway's). Raises 404 for an
        unknown link, 410 for a disabled, expired or used-up one, 429 while its rate window
        is full, 400 for an amount it does not take; nothing is written then."""
        link = self.available(link_id)
        value = self._value(link, amount)
        now = self._now()
        settings = self._settings
        with self._storage.transaction() as tx:
            outcome, used = tx.use_payment_link(
                link_id,
                now,
                rate_limit=settings.link_open_limit,
                rate_window=settings.link_open_window,
            )
            if outcome is not LinkUse.OPENED or used is None:
                raise _refusal(link_id, outcome, settings.link_open_window)
            deadline = used.deadline_secs
            request = NewInvoice(
                value=Amount(value),
                chain_id=ChainId(used.chain_id),
                description=used.description,
                accepted_tokens=tuple(Token(t) for t in used.accepted_tokens),
                deadline_secs=None if deadline is None else Uint(deadline),
                data={**used.data, LINK_DATA_KEY: used.id},
                token=Token(used.token),
                vs_currency=used.vs_currency,
            )
            return self._make_invoice(tx, used.owner, request, now, checkout_url)

    @staticmethod
    def _value(link: PaymentLink, amount: Decimal | None) -> Decimal:
        if link.amount is not None:
            if amount is not None and amount != link.amount:
                raise InvalidInput("amount", "this link's amount is fixed")
            return link.amount
        if amount is None:
            raise InvalidInput("amount", "required: this link lets the buyer choose it")
        low, high = link.min_amount, link.max_amount
        if low is None or high is None or not low <= amount <= high:
            raise InvalidInput("amount", f"must be between {low} and {high}")
        return amount


def _amounts(request: NewLink) -> tuple[Decimal | None, Decimal | None, Decimal]:
    """(fixed amount, lowest, highest): a fixed link's highest is its amount."""
    bounds = (request.min_amount, request.max_amount)
    if request.amount is not None:
        if bounds != (None, None):
            raise InvalidInput("amount", "give amount, or minAmount and maxAmount, not both")
        return request.amount, None, request.amount
    low, high = bounds
    if low is None or high is None:
        field = "minAmount" if low is None else "maxAmount"
        raise InvalidInput(field, "required without amount")
    if low <= 0:
        raise InvalidInput("minAmount", "must be above 0")
    if high < low:
        raise InvalidInput("maxAmount", "must not be below minAmount")
    return None, low, high


def _refusal(link_id: str, outcome: LinkUse, window: int) -> PaycoreError:
    if outcome is LinkUse.UNKNOWN:
        return LinkNotFound(link_id)
    if outcome is LinkUse.BUSY:
        return TooManyOpens(link_id, window)
    why = {
        LinkUse.DISABLED: "is disabled",
        LinkUse.EXPIRED: "has expired",
        LinkUse.USED_UP: "has made all the invoices it may",
    }[outcome]
    return Gone(f"payment link {link_id} {why}")


__all__ = ["LINK_DATA_KEY", "LinkNotFound", "Links", "TooManyOpens"]
