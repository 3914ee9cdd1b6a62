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
process's stream board (``stream_board``) then reads the invoice once for all its streams
(``Gateway.invoice_view``: one statement, lazy expiry included) and each stream sends it if
its version moved. So a burst of changes costs one read and one message, and what a stream
sends is never older than what a GET would answer. The board also re-reads an open invoice
when its deadline passes (lazy expiry reaches a page that only listens; the expiry's event
comes from that read, once, as for any read) and when its detected transfers change (read
for all open invoices at once every few seconds: a detected transfer writes no outbox event).

How a server holds a stream: on an event loop (Litestar) a stream is a coroutine waiting
on an ``asyncio.Event``, no thread and no timer of its own (its loop's one heartbeat task
wakes it when it has been quiet for a heartbeat interval), up to ``event_streams_max`` per
process. Where each stream holds a thread (Flask under ``gthread``), at most
``event_streams_threaded_max`` are open at once, below the worker's thread count, so plain
requests still find threads; past either cap the request is answered 503 with
``Retry-After`` and the page keeps polling.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Protocol

import attrs

from .stream_board import BoardSource, Watch, heartbeats, sse_message

if TYPE_CHECKING:
    from ..config import Settings
    from ..invoice_views import InvoiceView
    from .hub import Hub

__all__ = ["EventStream", "StreamSource", "Watch", "admit", "message", "open_stream"]


class StreamSource(BoardSource, Protocol):
    """What a stream reads of the gateway: the invoice as GET /invoice/{guid} answers it
    (one statement, lazy expiry), detected transfers of many invoices (the board's
    recheck), the clock and the settings. The ``Gateway`` satisfies it."""

    @property
    def settings(self) -> Settings: ...


#: The browser's reconnection delay, sent once at the start (milliseconds).
RETRY_MS = 3000
HEARTBEAT = b": keep-alive\n\n"


def message(view: InvoiceView) -> bytes:
    """One SSE message: the view's ETag (unquoted) as its id, the body as its data."""
    return sse_message(view)


@attrs.define(eq=False)  # compared and hashed by identity: its loop's heartbeats hold a set
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
    #: The loop time of the stream's last write (its loop's heartbeat task reads it).
    last_sent: float = 0.0
    _ready: asyncio.Event | None = None
    _beat: bool = False

    def opening(self) -> bytes:
        """``retry:``, then the invoice as it is now unless the client has that version."""
        start = f"retry: {RETRY_MS}\n\n".encode()
        self._sent = self.first.etag
        if self.last_id is not None and self.last_id.strip() == self.first.etag.strip('"'):
            return start
        return start + message(self.first)

    def changed(self) -> bytes | None:
        """The newest version the board read since the last call: its message when it
        differs from the one sent, else None (the stream is closed when the invoice is
        gone or storage away)."""
        if self.watch.ended:
            self._closed = True
            return None
        offered = self.watch.take()
        if offered is None:
            return None
        etag, made = offered
        if etag == self._sent:
            return None
        self._sent = etag
        return made()

    def sync_chunks(self) -> Iterator[bytes]:
        """The stream for a server that gives it a thread (WSGI): blocking waits."""
        woken = threading.Event()
        self.watch.on_change(woken.set)
        try:
            yield self.opening()
            while not self._closed:
                fired = woken.wait(self.heartbeat)
                woken.clear()
                sent = self.changed()
                if sent is not None:
                    yield sent
                elif not fired and not self._closed:
                    yield HEARTBEAT
        finally:
            self.close()

    def beat(self) -> None:
        """Called by the loop's heartbeat task when this stream has been quiet."""
        self._beat = True
        if self._ready is not None:
            self._ready.set()

    async def async_chunks(self) -> AsyncIterator[bytes]:
        """The stream for an event loop (ASGI): a coroutine per stream, no thread, no timer
        of its own; it wakes when the board offers a version or its loop's heartbeat task
        finds it quiet, and never reads storage itself."""
        loop = asyncio.get_running_loop()
        ready = self._ready = asyncio.Event()

        def wake() -> None:
            loop.call_soon_threadsafe(ready.set)

        self.watch.on_change(wake)
        beats = heartbeats(loop, self.heartbeat)
        self.last_sent = loop.time()
        beats.add(self)
        try:
            yield self.opening()
            while not self._closed:
                await ready.wait()
                ready.clear()
                sent = self.changed()
                if sent is None and self._beat and not self._closed:
                    sent = HEARTBEAT
                self._beat = False
                if sent is not None:
                    self.last_sent = loop.time()
                    yield sent
        finally:
            beats.discard(self)
            self.close()

    def close(self) -> None:
        """Stop watching and give back the stream's place; safe to call twice."""
        self._closed = True
        threaded, self._threaded = self._threaded, None
        self.hub.unwatch(self.watch, threaded)


def open_stream(gateway: StreamSource, hub: Hub, guid: str, last_id: str | None) -> EventStream:
    """Read the invoice (404 when there is none, before any byte of a stream goes out) and
    watch it; a change committed between the two is not lost (the watch starts first)."""
    board = hub.stream_board(gateway)
    watch = hub.watch(guid, board)
    try:
        first = gateway.invoice_view(guid)
    except BaseException:
        hub.unwatch(watch, None)
        raise
    board.first_read(watch, first)
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
