"""One invoice as stored, read whole in one statement and decoded only when needed.

The checkout page asks for its invoice every few seconds, and almost every answer is the
one it had. ``Storage.read_invoice`` (and ``StorageTx.read_invoice`` inside a transaction)
return an :class:`InvoiceRead`: the few fields the core decides on (its status and deadline,
for lazy expiry) and a ``version`` that changes whenever anything stored about the invoice
changes -- any column of its record, any of its refunds -- so that an unchanged invoice is
told from a changed one without decoding its JSON or encoding its answer
(``paycore.invoice_views``: the ``ETag`` of ``GET /invoice/{guid}``).

A store computes ``version`` from what it read, not from a counter its writers keep: a
column added to the invoice's record later (by a revision of its own) changes it with no
writer having to remember to bump anything.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import attrs

from ..domain.detected import Detected
from ..domain.records import Invoice, Refund, Status


@attrs.frozen
class InvoiceRead:
    """An invoice and its refunds as one read found them."""

    guid: str
    status: Status
    deadline: int
    #: Changes whenever anything stored about the invoice changes (opaque text).
    version: str
    #: The :class:`Invoice`, its refunds attached, decoded on the first call.
    _decode: Callable[[], Invoice] = attrs.field(eq=False, repr=False, alias="decode")
    #: Its detected transfers (``paycore.domain.detected``), read while it is open: every
    #: stored one, stale or not (the reader knows the time and drops the stale); they are
    #: part of ``version``.
    detected: tuple[Detected, ...] = ()

    def invoice(self) -> Invoice:
        return self._decode()


def version_of(stored: Any) -> str:
    """A version of ``stored`` (what a read returned, as plain Python values): equal
    values give the same text, any difference another."""
    return hashlib.blake2b(repr(stored).encode(), digest_size=12).hexdigest()


def with_refunds(invoice: Invoice, refunds: Sequence[Refund]) -> Invoice:
    """``invoice`` with ``refunds`` (its own, in their order) attached."""
    if not refunds and not invoice.refunds:
        return invoice
    return attrs.evolve(invoice, refunds=tuple(refunds))


def decoded_once(decode: Callable[[], Invoice]) -> Callable[[], Invoice]:
    """``decode`` run on the first call only; later calls return its result."""
    done: list[Invoice] = []

    def once() -> Invoice:
        if not done:
            done.append(decode())
        return done[0]

    return once


def read_from(
    invoice: Invoice | None, refunds: Sequence[Refund], detected: Sequence[Detected] = ()
) -> InvoiceRead | None:
    """The :class:`InvoiceRead` of a decoded invoice, its refunds and detected transfers (a
    store that keeps records, not rows: ``paycore.storage.memory``)."""
    if invoice is None:
        return None
    whole = with_refunds(invoice, refunds)
    found = tuple(detected)
    return InvoiceRead(
        invoice.guid,
        invoice.status,
        invoice.deadline,
        version_of((whole, found)),
        lambda: whole,
        found,
    )


class WouldBlock(BaseException):
    """Raised inside :func:`without_blocking` where a read would have to wait: an expiry
    to write, no idle pooled connection (a new one would connect). A ``BaseException`` so
    that no ``except Exception`` on the way turns it into an answer: the caller that asked
    for a non-blocking answer catches it and answers in a worker thread instead."""


_NOT_BLOCKING: ContextVar[bool] = ContextVar("paycore-not-blocking", default=False)


class without_blocking:  # noqa: N801  (used as a function: ``with without_blocking():``)
    """Mark the calls inside as made on an event loop: a read that would wait raises
    :class:`WouldBlock` instead of waiting. A class, not a generator: it wraps every
    request answered on a loop, and a generator-based context manager costs several
    times as much to enter and leave."""

    __slots__ = ("_token",)

    def __enter__(self) -> None:
        self._token = _NOT_BLOCKING.set(True)

    def __exit__(self, *_exc: object) -> None:
        _NOT_BLOCKING.reset(self._token)


def refuse_blocking() -> None:
    """Raise :class:`WouldBlock` when inside :func:`without_blocking`."""
    if _NOT_BLOCKING.get():
        raise WouldBlock


def on_event_loop() -> bool:
    """Whether the caller is inside :func:`without_blocking` (an event loop's call)."""
    return _NOT_BLOCKING.get()


#: What a read must show for the request to be answered from it with nothing more written.
ReadSettles = Callable[["InvoiceRead | None"], bool]


@attrs.define
class InlineAttempt:
    """One request answered on an event loop with storage writes (:func:`spending_inline`)."""

    #: Asked of a signed read's invoice before its spend commits.
    settles: ReadSettles
    #: Set by the store once the attempt's one commit is made: from then on nothing may
    #: raise ``WouldBlock`` (the request's nonce is spent), so later calls wait as usual.
    committed: bool = False


_INLINE: ContextVar[InlineAttempt | None] = ContextVar("paycore-inline-write", default=None)


@contextmanager
def spending_inline(settles: ReadSettles) -> Iterator[InlineAttempt]:
    """Mark the storage calls inside as an event loop's, all or nothing: until its one
    commit, a store with ``has_inline_spend`` waits for nothing -- a lock it would wait
    for, a connection it would open, a plugin that may ask a node all raise
    :class:`WouldBlock` -- and commits only what leaves nothing more to write: a signed
    read's spend commits only with a read that ``settles`` the request (no expiry due),
    and a refused nonce raises too (the refusal's text is a second read). ``WouldBlock``
    is raised with nothing committed; the caller then answers the whole request in a
    worker thread, where the same nonce is still unspent. After the commit nothing raises
    it: that would send a request whose nonce is spent to a thread that must refuse it as
    a replay of itself, so a rare later write (the clock passing a deadline between the
    spend and the view) waits as on a thread."""
    attempt = InlineAttempt(settles)
    token = _INLINE.set(attempt)
    try:
        yield attempt
    finally:
        _INLINE.reset(token)


def inline_attempt() -> InlineAttempt | None:
    """The open :func:`spending_inline` attempt that has not committed yet, else None."""
    attempt = _INLINE.get()
    return None if attempt is None or attempt.committed else attempt


def refuse_inline() -> None:
    """Raise :class:`WouldBlock` inside an uncommitted :func:`spending_inline` attempt:
    before a call that may wait (a chain backend deriving an address may ask its node)."""
    if inline_attempt() is not None:
        raise WouldBlock
