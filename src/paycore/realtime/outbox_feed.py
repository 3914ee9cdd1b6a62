"""The WebSocket feed of one web process: the committed outbox, read as it grows.

Every process can commit changes (requests, the sweeper, ``paycore worker``, which makes most
of them), and each one writes its events to the durable outbox in the change's own
transaction. A web process that serves sockets runs one :class:`OutboxFeed` thread: it
keeps the id of the last event it handed on, waits for the store's
``OutboxSignal`` (PostgreSQL LISTEN/NOTIFY, SQLite ``data_version``; ``paycore_storage``'s
``outbox_signal.py``) or a slow safety timer, then reads every owner's events after that id
with ``StorageTx.outbox_since`` and hands each to the Hub, which queues it for the sockets
of its owner. So every process's sockets get every process's changes, with no Redis.

- Nothing is skipped: ``outbox_since`` reads only up to the horizon of the poll queues (an
  event whose transaction commits late is held back until every lower id is settled) and
  the feed moves to where the read says it may. A lost notification (a reconnect, a commit
  whose older neighbour then rolled back) is made up for at the next safety read.
- Nothing is sent twice: the Hub of a process whose store has a signal does not push its
  own changes directly, it leaves them to this feed too (the notification reaches the
  committing process as well), so one source gives every frame, in id order, each with its
  event id (which resuming sockets rely on).
- It starts lazily, when the first socket subscribes (``Hub.subscribe``), so ``paycore
  worker`` and web processes that serve no socket never read. Its first read takes the
  horizon as the start: sockets follow changes from registration on (a reconnecting socket
  asks for what it missed: ``SocketSession.register``).
- A lost connection (database restart, a killed backend) is retried with backoff; the
  position is kept in memory, so the events committed meanwhile are read on reconnect.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..domain.records import OutboxEvent
from ..storage import OutboxSignal

if TYPE_CHECKING:
    from ..events.queues import EventQueues

log = logging.getLogger("paycore.realtime")

#: Seconds between reads when no notification came: the safety net for a lost one.
SAFETY_INTERVAL = 1.0
#: Events read per transaction.
BATCH = 500
#: Longest wait between reconnection attempts.
MAX_BACKOFF = 5.0


class OutboxFeed:
    """One reader thread of the outbox for a process's Hub; see the module docstring."""

    def __init__(
        self,
        events: EventQueues,
        deliver: Callable[[OutboxEvent], object],
        *,
        name: str = "paycore-ws",
        safety_interval: float = SAFETY_INTERVAL,
        batch: int = BATCH,
        ready_timeout: float = 5.0,
    ) -> None:
        self.events = events
        self.name = name
        self.safety_interval = safety_interval
        self.batch = batch
        self.ready_timeout = ready_timeout
        self._deliver = deliver
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._connected = threading.Event()
        #: The id of the last event handed on (None until the first read).
        self.position: int | None = None
        #: The signal in use, for tests that cut its connection.
        self.signal: OutboxSignal | None = None
        #: Reconnections after a lost signal or a failed read (for tests and metrics).
        self.reconnects = 0

    @property
    def connected(self) -> bool:
        """Listening and read up to date at least once since the last (re)connect."""
        return self._connected.is_set()

    def listen(self) -> None:
        """Start the thread if it is not running (or died with a fork) and wait, once, for
        its first read, so that the first socket's "registered" means "receiving"."""
        with self._lock:
            started = self._thread is not None and self._thread.is_alive()
            if not started:
                self._stop.clear()
                self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
                self._thread.start()
        if not started and not self._ready.wait(self.ready_timeout):
            log.warning(
                "the outbox feed did not start within %.1f s: pushes wait for it",
                self.ready_timeout,
            )

    def _run(self) -> None:
        delay = 0.1
        while not self._stop.is_set():
            signal: OutboxSignal | None = None
            try:
                # Listen first, read second: a commit between the two wakes the next wait.
                signal = self.events.outbox_signal(self.name)
                self.signal = signal
                self._catch_up()
                self._connected.set()
                delay = 0.1
                while not self._stop.is_set():
                    if signal is None:
                        self._stop.wait(self.safety_interval)
                    else:
                        signal.wait(self.safety_interval)
                    self._catch_up()
            except Exception as exc:  # storage down, connection cut: reconnect
                self._connected.clear()
                if self._stop.is_set():
                    break
                self.reconnects += 1
                log.warning("outbox feed: %s; reconnecting in %.1f s", exc, delay)
                self._stop.wait(delay)
                delay = min(delay * 2, MAX_BACKOFF)
            finally:
                if signal is not None:
                    signal.close()

    def _catch_up(self) -> None:
        """Hand on every event after the position, in id order, and move the position."""
        while not self._stop.is_set():
            read = self.events.outbox_since(self.position, self.batch)
            if self.position is None:
                self.position = read.upto
                self._ready.set()
                return
            for event in read.events:
                try:
                    self._deliver(event)
                except Exception:  # one bad delivery must not stop the feed
                    log.exception("delivering outbox event %d failed", event.id)
            self.position = max(self.position, read.upto)
            self._ready.set()
            if len(read.events) < self.batch:
                return

    def close(self) -> None:
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=self.safety_interval + 5)
