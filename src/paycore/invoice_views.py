"""What ``GET /invoice/{guid}`` answers from: the invoice's stored version and its body.

A checkout page asks for its invoice every few seconds, and nearly every answer is the one
it already has. So the read is one statement (``Storage.read_invoice``), the answer carries
an entity tag made from the stored version, a request whose ``If-None-Match`` names that
tag is answered ``304 Not Modified`` without the invoice being decoded or encoded, and an
encoded body is kept per version (a bounded cache) so that many pages polling one invoice
cost one encoding per change, not one per poll.

The rules stay the gateway's: lazy expiry (docs/interface.md: an invoice past its deadline
expires on the first read after it) is decided here from the status and deadline the read
returned (``machine.due``, the rule ``machine.is_due`` applies), and done by the gateway's
one expiry path, under its row lock, with its event, exactly once however many pages read
at that moment. Its tag is the version of what was stored after it.

The tag also covers what the body depends on besides the stored record -- paycore's
version, the gateway's default checkout address and the token descriptions of its
settings -- through a salt, so two processes configured alike give equal tags and a process
configured differently never answers 304 to another's tag. The cached bodies are keyed by
the tag, salt included.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable

import attrs

from .domain import machine
from .domain.detected import STALE_AFTER, Detected
from .domain.records import Invoice, Json, json_bytes
from .errors import InvoiceNotFound
from .storage.invoice_read import InvoiceRead, refuse_blocking

#: Encoded bodies kept, one per invoice version (about 1-2 KB each).
CACHED_BODIES = 2048


@attrs.frozen
class InvoiceView:
    """One read of an invoice: its entity tag, its record and body made on demand."""

    #: The strong entity tag, quoted, as the ``ETag`` header carries it.
    etag: str
    read: InvoiceRead
    _body: Callable[[], bytes] = attrs.field(eq=False, repr=False, alias="body")

    def body(self) -> bytes:
        """The answer's JSON bytes (kept per version: encoded once per change)."""
        return self._body()

    def matches(self, if_none_match: str | None) -> bool:
        """Whether an ``If-None-Match`` header names this tag (``*`` names any; a weak
        ``W/`` tag compares by its opaque part, as RFC 9110's weak comparison does)."""
        if not if_none_match:
            return False
        for tag in if_none_match.split(","):
            tag = tag.strip()
            if tag == "*" or tag.removeprefix("W/") == self.etag:
                return True
        return False


class InvoiceViews:
    """Reads invoices for ``GET /invoice/{guid}``; one per gateway."""

    def __init__(
        self,
        read: Callable[[str], InvoiceRead | None],
        expire: Callable[[str], object],
        now: Callable[[], int],
        wire: Callable[[Invoice], Json],
        salt: Callable[[], str],
        cached: int = CACHED_BODIES,
    ) -> None:
        self._read = read
        self._expire = expire
        self._now = now
        self._wire = wire
        self._salt = salt
        self._cached = cached
        self._bodies: OrderedDict[str, bytes] = OrderedDict()
        self._lock = threading.Lock()

    def settles(self, read: InvoiceRead | None) -> bool:
        """Whether ``read`` answers the request with nothing written first: no expiry due
        (a missing invoice's 404 writes nothing either). What a signed read made on an
        event loop asks of its read before the nonce's spend commits (``spending_inline``)."""
        return read is None or not machine.due(read.status, read.deadline, self._now())

    def view(self, guid: str) -> InvoiceView:
        """The invoice ``guid`` as stored now, expired first when its deadline has passed
        (lazy expiry); ``InvoiceNotFound`` when there is none."""
        read = self._read(guid)
        if not self.settles(read):
            refuse_blocking()  # a write, under a row lock: not on an event loop
            self._expire(guid)  # the gateway's path: row lock, re-check, event, once
            read = self._read(guid)
        if read is None:
            raise InvoiceNotFound(guid)
        # Detected transfers no watcher has seen for STALE_AFTER are not shown (as on every
        # read): which are still fresh is part of the answer, so of its ETag too.
        fresh_after = self._now() - STALE_AFTER
        fresh = tuple(d for d in read.detected if d.seen_at >= fresh_after)
        shown = f"{self._salt()}:{read.version}:{len(fresh)}:{len(read.detected)}"
        tag = hashlib.blake2b(shown.encode(), digest_size=12)
        etag = f'"{tag.hexdigest()}"'
        return InvoiceView(etag, read, lambda: self._encoded(etag, read, fresh))

    def _encoded(self, etag: str, read: InvoiceRead, fresh: tuple[Detected, ...] = ()) -> bytes:
        with self._lock:
            found = self._bodies.get(etag)
            if found is not None:
                self._bodies.move_to_end(etag)
                return found
        invoice = read.invoice()
        if fresh:
            invoice = attrs.evolve(invoice, detected=fresh)
        body = json_bytes(self._wire(invoice))
        with self._lock:
            self._bodies[etag] = body
            while len(self._bodies) > self._cached:
                self._bodies.popitem(last=False)
        return body


def salt_of(*parts: object) -> str:
    """A short digest of what an invoice's body depends on besides its stored record."""
    return hashlib.blake2b(repr(parts).encode(), digest_size=16).hexdigest()
