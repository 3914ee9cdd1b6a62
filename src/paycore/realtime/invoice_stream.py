"""``GET {prefix}/invoice/{guid}/events``: one invoice's changes pushed as Server-Sent Events.

The checkout page used to ask for its invoice every 2.5 s. This stream tells it instead:
public and read-only like ``GET /invoice/{guid}``, ``text/event-stream``, each message the
same bytes that GET answers (``data: <the Invoice JSON>``) with ``id: <its ETag>``, a
comment line as a heartbeat while nothing changes, and ``retry:`` for the browser's
reconnection delay. A reconnecting ``EventSource`` sends the id it last had as
``Last-Event-ID``: when the invoice is still at that version the first message is left
out, otherwise the stream starts with the invoice as it is now -- every message is the
whole record, so a page that missed a change while away has nothing to replay.

Where the changes come from: the Hub (``hub.py``), which every committed change reaches --
through the durable outbox (``outbox_feed``: every process's changes, PostgreSQL's
LISTEN/NOTIFY or SQLite's ``data_version``) or, on a store with no signal (``memory://``,
one process), straight from the gateway. The Hub only says "invoice G changed"; the
stream then reads the invoice once (``Gateway.invoice_view``: one statement, lazy expiry
included) and sends it if its version moved. So a burst of changes costs one read and one
message, and what a stream sends is never older than what a GET would answer. The stream
also re-reads when the invoice's deadline passes, so that lazy expiry reaches a page that
only listens (the expiry's event comes from that read, once, as for any read).

How a server holds a stream: on an event loop (Litestar) a stream is a coroutine waiting
on an ``asyncio.Event``, no thread, up to ``event_streams_max`` per process. Where each
stream holds a thread (Flask under ``gthread``), at most ``event_streams_threaded_max``
are open at once, below the worker's thread count, so plain requests still find threads;
past either cap the request is answered 503 with ``Retry-After`` and the page keeps polling.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TYPE_CHECKING, Protocol

import attrs

from ..domain import machine
from ..errors import InvoiceNotFound, StorageUnavailable

if TYPE_CHECKING:
    from ..config import Settings
    from ..invoice_views import InvoiceView
    from .hub import Hub


class StreamSource(Protocol):
    """What a stream reads of the gateway: the invoice as GET /invoice/{guid} answers it
    (one statement, lazy expiry), the clock and the settings. The ``Gateway`` satisfies it."""

    #: Unix seconds, fractional: how long until the invoice's deadline.
    clock: Callable[[], float]

    @property
    def settings(self) -> Settings: ...

    def invoice_view(self, guid: str) -> InvoiceView: ...

    def now(self) -> int: ...


#: The browser's reconnection delay, sent once at the start (milliseconds).
RETRY_MS = 3000
HEARTBEAT = b": keep-alive\n\n"


class Watch:
    """One open stream's interest in one invoice: the Hub pokes it on each change."""

    def __init__(self, guid: str) -> None:
        self.guid = guid
        self._lock = threading.Lock()
        self._changed = False
        self._wake: Callable[[], None] = _nothing

    def poke(self) -> None:
        """Called by the Hub, on any thread, when the invoice changed."""
        with self._lock:
            self._changed = True
            wake = self._wake
        # An event loop already closed raises: its stream is ending anyway.
        with contextlib.suppress(RuntimeError):
            wake()

    def on_change(self, wake: Callable[[], None]) -> None:
        """Call ``wake`` on each later change (and at once if one came meanwhile)."""
        with self._lock:
            self._wake = wake
            pending = self._changed
        if pending:
            wake()

    def take(self) -> bool:
        """Whether a change came since the last ``take``."""
        with self._lock:
            changed, self._changed = self._changed, False
            return changed


def _nothing() -> None:
    return None


def message(view: InvoiceView) -> bytes:
    """One SSE message: the view's ETag (unquoted) as its id, the body as its data."""
    return b"id: " + view.etag.strip('"').encode() + b"\ndata: " + view.body() + b"\n\n"


#: Seconds between re-reads of an open invoice's stream: how soon a detected transfer
#: (``paycore.domain.detected``, written without an event) reaches a listening page.
DETECTED_RECHECK = 3.0


@attrs.define
class EventStream:
    """One open stream of one invoice. The route's handler opens it (the first read, the
    Hub's watch); the adapter then iterates :meth:`sync_chunks` in a thread or
    :meth:`async_chunks` on its event loop, after :func:`admit` let it in."""

    gateway: StreamSource
    hub: Hub
    watch: Watch
    first: InvoiceView
    #: The ``Last-Event-ID`` the client sent, if any.
    last_id: str | None
    heartbeat: float
    _sent: str | None = None
    _threaded: bool | None = None
    _closed: bool = False

    def opening(self) -> bytes:
        """``retry:``, then the invoice as it is now unless the client has that version."""
        start = f"retry: {RETRY_MS}\n\n".encode()
        self._sent = self.first.etag
        if self.last_id is not None and self.last_id.strip() == self.first.etag.strip('"'):
            return start
        return start + message(self.first)

    def changed(self) -> bytes | None:
        """The invoice re-read: its message when its version moved, else None."""
        try:
            view = self.gateway.invoice_view(self.watch.guid)
        except (InvoiceNotFound, StorageUnavailable):
            # Removed by retention, or storage is away: end the stream quietly; the
            # browser reconnects after ``retry`` and is answered as any request then is.
            self._closed = True
            return None
        if view.etag == self._sent:
            return None
        self._sent = view.etag
        self.first = view
        return message(view)

    def _due(self) -> bool:
        """Whether the invoice as last read is past its deadline and still open: a
        re-read then expires it (``machine.due``, the rule every read applies)."""
        read = self.first.read
        return machine.due(read.status, read.deadline, self.gateway.now())

    def _wait_for(self) -> float:
        """Seconds to wait for a change: the heartbeat, or less when the invoice's
        deadline passes sooner (then a re-read expires it, lazily, as a GET would)."""
        read = self.first.read
        if read.status in machine.SETTLED:
            return self.heartbeat
        until = read.deadline + 1 - self.gateway.clock()
        return max(0.05, min(self.heartbeat, until, DETECTED_RECHECK))

    def _after_wait(self) -> bool:
        """Whether to re-read now: a change came, the deadline has passed, or the invoice is
        open (a detected transfer writes no outbox event that would wake the stream, so an
        open invoice is read again every ``DETECTED_RECHECK`` seconds; an unchanged one
        costs that read and nothing is sent)."""
        return self.watch.take() or self._due() or self.first.read.status in machine.OPEN

    def sync_chunks(self) -> Iterator[bytes]:
        """The stream for a server that gives it a thread (WSGI): blocking waits."""
        woken = threading.Event()
        self.watch.on_change(woken.set)
        try:
            yield self.opening()
            while not self._closed:
                fired = woken.wait(self._wait_for())
                woken.clear()
                sent = self.changed() if self._after_wait() else None
                if sent is not None:
                    yield sent
                elif not fired:
                    yield HEARTBEAT
        finally:
            self.close()

    async def async_chunks(self) -> AsyncIterator[bytes]:
        """The stream for an event loop (ASGI): a coroutine per stream, no thread; each
        re-read goes to a worker thread (storage blocks)."""
        from anyio import to_thread

        loop = asyncio.get_running_loop()
        woken = asyncio.Event()

        def wake() -> None:
            loop.call_soon_threadsafe(woken.set)

        self.watch.on_change(wake)
        try:
            yield self.opening()
            while not self._closed:
                try:
                    await asyncio.wait_for(woken.wait(), self._wait_for())
                    fired = True
                except TimeoutError:
                    fired = False
                woken.clear()
                sent = None
                if self._after_wait():
                    sent = await to_thread.run_sync(self.changed)
                if sent is not None:
                    yield sent
                elif not fired:
                    yield HEARTBEAT
        finally:
            self.close()

    def close(self) -> None:
        """Stop watching and give back the stream's place; safe to call twice."""
        self._closed = True
        threaded, self._threaded = self._threaded, None
        self.hub.unwatch(self.watch, threaded)


def open_stream(gateway: StreamSource, hub: Hub, guid: str, last_id: str | None) -> EventStream:
    """Read the invoice (404 when there is none, before any byte of a stream goes out) and
    watch it; a change committed between the two is not lost (the watch starts first)."""
    watch = hub.watch(guid)
    try:
        first = gateway.invoice_view(guid)
    except BaseException:
        hub.unwatch(watch, None)
        raise
    heartbeat = gateway.settings.event_stream_heartbeat
    return EventStream(gateway, hub, watch, first, last_id, heartbeat)


def admit(stream: EventStream, *, threaded: bool) -> bool:
    """Take one of the process's places for ``stream`` (threaded: one that holds a thread);
    False, and the stream closed, when they are all taken."""
    settings = stream.gateway.settings
    cap = settings.event_streams_threaded_max if threaded else settings.event_streams_max
    if not stream.hub.take_stream_place(threaded, cap):
        stream.close()
        return False
    stream._threaded = threaded
    return True
