"""One process's open invoice event streams, by invoice: what makes 10,000 of them cheap.

An open checkout page holds one stream (``invoice_stream``). Held one by one, each stream
used to wait with a timer of its own and re-read its invoice itself: on every change, at its
deadline, and every few seconds while the invoice was open (a detected transfer writes no
outbox event that could wake it). At 10,000 open pages that was some 3,000 reads a second
and 10,000 timers, whether anything changed or not. The board does that work once per
invoice and once per process instead:

- **one re-read per change, shared**: a change (``StreamBoard.changed``, from the Hub)
  marks the invoice dirty; the board's one reader thread reads it once
  (``invoice_view``: one statement, lazy expiry included) and hands that version and its
  message to every stream of that invoice (``Watch.offer``). A burst of changes to one
  invoice before the reader gets to it costs one read.
- **deadlines without timers**: once a second the reader looks for open invoices past their
  deadline (from the status and deadline it last read) and re-reads those, which expires
  them as a GET would.
- **detected transfers in one statement per 500 invoices**: every ``recheck`` seconds the
  reader asks storage for the detected transfers of every open invoice it holds
  (``detected_of``, one indexed read by guid) and re-reads only those whose transfers (or
  how many of them are still fresh) differ from what it last read.
- **heartbeats per event loop**: one task per loop (:class:`Heartbeats`) wakes only the
  streams that sent nothing for a heartbeat interval, spread over the interval, so an idle
  stream is a coroutine waiting on an ``asyncio.Event`` with no timer of its own.

Reads run on the reader thread (storage blocks); no read happens on an event loop. A stream
never takes a version read by a board read that started before it began to watch (that read
may predate the stream's own first read, the one ``open_stream`` makes for its 404): each
read and each watch takes a ticket when it starts (:meth:`StreamBoard.ticket`), and a watch
only takes reads with later tickets.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
import time
import weakref
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Protocol

from ..domain import machine
from ..domain.detected import STALE_AFTER, Detected
from ..domain.records import Status
from ..errors import InvoiceNotFound, StorageUnavailable

if TYPE_CHECKING:
    from ..invoice_views import InvoiceView

log = logging.getLogger("paycore.realtime")

#: Invoices whose detected transfers one ``detected_of`` call asks for.
DETECTED_CHUNK = 500
#: Seconds between two ``detected_of`` calls of one recheck (see ``_detected``).
CHUNK_PAUSE = 0.02


class BoardSource(Protocol):
    """What the board reads: the invoice as GET answers it, detected transfers of many
    invoices at once, and the clock. The ``Gateway`` satisfies it."""

    def invoice_view(self, guid: str) -> InvoiceView: ...

    def detected_of(self, guids: Iterable[str]) -> list[Detected]: ...

    def now(self) -> int: ...


class Watch:
    """One open stream's interest in one invoice: the board offers it each version read
    after the stream's own first read; the stream takes the newest one when woken."""

    __slots__ = ("guid", "_lock", "_floor", "_offered", "_ended", "_wake")

    def __init__(self, guid: str, floor: int = 0) -> None:
        self.guid = guid
        self._lock = threading.Lock()
        #: Reads with this ticket or a lower one started before the watch: not taken.
        self._floor = floor
        self._offered: tuple[str, Callable[[], bytes]] | None = None
        self._ended = False
        self._wake: Callable[[], None] = _nothing

    def offer(self, ticket: int, etag: str, message: Callable[[], bytes]) -> None:
        """A version read by the board (read ``ticket``): kept, replacing an older one not
        yet taken, and the stream woken."""
        with self._lock:
            if ticket <= self._floor:
                return
            self._floor = ticket
            self._offered = (etag, message)
            wake = self._wake
        _call(wake)

    def end(self) -> None:
        """The invoice is gone (retention) or storage is away: the stream ends quietly."""
        with self._lock:
            self._ended = True
            wake = self._wake
        _call(wake)

    def on_change(self, wake: Callable[[], None]) -> None:
        """Call ``wake`` on each later offer (and at once if one came meanwhile)."""
        with self._lock:
            self._wake = wake
            pending = self._offered is not None or self._ended
        if pending:
            _call(wake)

    def take(self) -> tuple[str, Callable[[], bytes]] | None:
        """The newest version offered since the last ``take`` (its ETag and message)."""
        with self._lock:
            offered, self._offered = self._offered, None
            return offered

    @property
    def ended(self) -> bool:
        return self._ended


def _nothing() -> None:
    return None


def _call(wake: Callable[[], None]) -> None:
    # An event loop already closed raises: its stream is ending anyway.
    try:
        wake()
    except RuntimeError:
        log.debug("wake of a closing stream failed", exc_info=True)


class _Topic:
    """One invoice's watches here, and what the last read of it found."""

    __slots__ = ("watches", "status", "deadline", "detected", "fresh")

    def __init__(self) -> None:
        self.watches: set[Watch] = set()
        self.status: Status | None = None
        self.deadline = 0
        self.detected: frozenset[Detected] = frozenset()
        self.fresh = 0

    def saw(self, view: InvoiceView, now: int) -> None:
        read = view.read
        self.status, self.deadline = read.status, read.deadline
        self.detected = frozenset(read.detected)
        self.fresh = _fresh(read.detected, now)


def _fresh(found: Iterable[Detected], now: int) -> int:
    return sum(1 for d in found if d.seen_at >= now - STALE_AFTER)


class StreamBoard:
    """The open streams of one process by invoice, and the one thread that reads for them."""

    #: Seconds between checks of the open invoices' detected transfers.
    recheck = 3.0
    #: Seconds between the reader's looks at deadlines (and its longest sleep).
    tick = 1.0

    def __init__(self, source: BoardSource) -> None:
        self.source = source
        self._lock = threading.Lock()
        self._wakeup = threading.Condition(self._lock)  # the reader's
        self._resting = threading.Condition(self._lock)  # the rechecker's
        self._topics: dict[str, _Topic] = {}
        self._dirty: dict[str, None] = {}
        self._tickets = itertools.count(1)
        self._threads: list[threading.Thread] = []
        self._closed = False
        #: Board reads made (for tests and the bench: one per change, not one per stream).
        self.reads = 0

    def ticket(self) -> int:
        """A number larger than that of every read started before."""
        return next(self._tickets)

    # -- streams ---------------------------------------------------------------------------
    def watch(self, guid: str) -> Watch:
        """Be offered each version of ``guid`` the board reads from now on (by a read
        that starts after this call: an older one may predate the stream's first read)."""
        watch = Watch(guid, self.ticket())
        with self._lock:
            self._topics.setdefault(guid, _Topic()).watches.add(watch)
            self._start()
        return watch

    def unwatch(self, watch: Watch) -> None:
        with self._lock:
            topic = self._topics.get(watch.guid)
            if topic is not None:
                topic.watches.discard(watch)
                if not topic.watches:
                    del self._topics[watch.guid]
                    self._dirty.pop(watch.guid, None)

    def first_read(self, watch: Watch, view: InvoiceView) -> None:
        """A stream's own first read: what the board knows of the invoice (its status,
        deadline and detected transfers) until it reads it itself."""
        with self._lock:
            topic = self._topics.get(watch.guid)
            if topic is not None and topic.status is None:
                topic.saw(view, self.source.now())

    def watching(self) -> int:
        """Invoices with at least one open stream here."""
        with self._lock:
            return len(self._topics)

    # -- changes ---------------------------------------------------------------------------
    def changed(self, guid: object) -> None:
        """Invoice ``guid`` changed (any thread): read it once for all its streams."""
        if not isinstance(guid, str):
            return
        with self._lock:
            if guid in self._topics:
                self._mark(guid)

    def _start(self) -> None:
        if self._threads or self._closed:
            return
        for target, name in ((self._run, "reads"), (self._recheck, "rechecks")):
            thread = threading.Thread(
                target=target, name=f"paycore-invoice-streams-{name}", daemon=True
            )
            self._threads.append(thread)
            thread.start()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._wakeup.notify_all()
            self._resting.notify_all()
            threads = list(self._threads)
        for thread in threads:
            if thread is not threading.current_thread():
                thread.join(5)

    def _run(self) -> None:
        """The reader: each dirty invoice read once, its version offered to its streams."""
        while True:
            with self._lock:
                while not self._dirty and not self._closed:
                    self._wakeup.wait()
                if self._closed:
                    return
                dirty = list(self._dirty)
                self._dirty.clear()
            for guid in dirty:
                self._read(guid)

    def _recheck(self) -> None:
        """Marks invoices dirty whose deadline passed (every ``tick``) or whose detected
        transfers changed (every ``recheck``): a thread apart from the reader, so that a
        change's read never waits behind a recheck of every open invoice."""
        next_tick = next_recheck = time.monotonic()
        while True:
            with self._lock:
                wait = min(next_tick, next_recheck) - time.monotonic()
                if wait > 0 and not self._closed:
                    self._resting.wait(wait)
                if self._closed:
                    return
            clock = time.monotonic()
            try:
                if clock >= next_tick:
                    next_tick = clock + self.tick
                    self._due()
                if clock >= next_recheck:
                    next_recheck = clock + self.recheck
                    self._detected()
            except Exception:  # storage away: the next round tries again
                log.warning("invoice stream recheck failed", exc_info=True)

    def _read(self, guid: str) -> None:
        ticket = self.ticket()
        try:
            view = self.source.invoice_view(guid)
        except (InvoiceNotFound, StorageUnavailable):
            with self._lock:
                topic = self._topics.get(guid)
                watches = list(topic.watches) if topic is not None else []
            for watch in watches:
                watch.end()
            return
        except Exception:
            log.warning("invoice stream read of %s failed", guid, exc_info=True)
            return
        self.reads += 1
        now = self.source.now()
        with self._lock:
            topic = self._topics.get(guid)
            if topic is None:
                return
            topic.saw(view, now)
            watches = list(topic.watches)
        message = _once(view)
        for watch in watches:
            watch.offer(ticket, view.etag, message)

    def _due(self) -> None:
        """Mark the open invoices past their deadline: a read expires them."""
        now = self.source.now()
        with self._lock:
            for guid, topic in self._topics.items():
                if topic.status is not None and machine.due(topic.status, topic.deadline, now):
                    self._mark(guid)

    def _detected(self) -> None:
        """Mark the open invoices whose detected transfers changed since their last read."""
        with self._lock:
            open_ = [g for g, t in self._topics.items() if t.status in machine.OPEN]
        for start in range(0, len(open_), DETECTED_CHUNK):
            if start:
                # A pause between two reads: each is a transaction, which on a SQLite file
                # takes the process's writer lock, and a lock released and taken straight
                # back would keep the outbox feed (and so every push) waiting for the
                # whole recheck, 0.2-0.5 s at 10,000 open invoices.
                with self._lock:
                    if self._closed:
                        return
                    self._resting.wait(CHUNK_PAUSE)
            chunk = open_[start : start + DETECTED_CHUNK]
            found: dict[str, list[Detected]] = {}
            for transfer in self.source.detected_of(chunk):
                found.setdefault(transfer.guid, []).append(transfer)
            now = self.source.now()
            with self._lock:
                for guid in chunk:
                    topic = self._topics.get(guid)
                    if topic is None:
                        continue
                    theirs = found.get(guid, [])
                    if frozenset(theirs) != topic.detected or _fresh(theirs, now) != topic.fresh:
                        self._mark(guid)

    def _mark(self, guid: str) -> None:
        """Under the lock: ``guid`` to be read (once, however often marked)."""
        if guid not in self._dirty:
            self._dirty[guid] = None
            self._wakeup.notify()


def _once(view: InvoiceView) -> Callable[[], bytes]:
    """The view's SSE message, made on first use (no stream may want it) and kept."""
    made: list[bytes] = []

    def message() -> bytes:
        if not made:
            made.append(sse_message(view))
        return made[0]

    return message


def sse_message(view: InvoiceView) -> bytes:
    """One SSE message: the view's ETag (unquoted) as its id, the body as its data."""
    return b"id: " + view.etag.strip('"').encode() + b"\ndata: " + view.body() + b"\n\n"


class Beating(Protocol):
    """A stream as :class:`Heartbeats` sees it."""

    #: The loop time of its last write.
    last_sent: float

    def beat(self) -> None:
        """Send a heartbeat (called on the loop)."""


class Heartbeats:
    """One event loop's heartbeat task: every ``heartbeat / 4`` seconds (at most one), it
    wakes the streams that sent nothing for ``heartbeat`` seconds. The task ends when its
    last stream does."""

    def __init__(self, loop: asyncio.AbstractEventLoop, heartbeat: float) -> None:
        self.loop = loop
        self.heartbeat = heartbeat
        self.streams: set[Beating] = set()
        self._task: asyncio.Task[None] | None = None

    def add(self, stream: Beating) -> None:
        self.streams.add(stream)
        if self._task is None:
            self._task = self.loop.create_task(self._run())

    def discard(self, stream: Beating) -> None:
        self.streams.discard(stream)

    async def _run(self) -> None:
        try:
            while self.streams:
                await asyncio.sleep(min(1.0, self.heartbeat / 4))
                quiet_since = self.loop.time() - self.heartbeat
                for stream in [s for s in self.streams if s.last_sent <= quiet_since]:
                    stream.beat()
        finally:
            self._task = None  # the next add() starts another


_BEATS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[float, Heartbeats]] = (
    weakref.WeakKeyDictionary()
)
_BEATS_LOCK = threading.Lock()


def heartbeats(loop: asyncio.AbstractEventLoop, heartbeat: float) -> Heartbeats:
    """The heartbeat task of ``loop`` for streams beating every ``heartbeat`` seconds."""
    with _BEATS_LOCK:
        per_loop = _BEATS.setdefault(loop, {})
        found = per_loop.get(heartbeat)
        if found is None:
            found = per_loop[heartbeat] = Heartbeats(loop, heartbeat)
        return found
