"""A SQLite file's readers of their own: one connection per thread, kept outside the pool.

The checkout page's poll is one autocommitted ``SELECT`` (``invoice_read``). Taken from the
pool, its connection's checkout and check-in (with the pool's reset) cost more CPU than
the ``SELECT`` itself. A WAL read needs no writer's lock and no transaction, so each thread
that reads can keep a plain ``sqlite3`` connection of its own for it.

- **An event loop's thread** reads with no busy timeout: a WAL read waits for no writer,
  and where SQLite would make it wait (a checkpoint restarting the log) the caller raises
  ``WouldBlock`` and a worker thread reads instead.
- **Any other thread** (a host's WSGI server, a worker pool) reads with the pool's busy
  timeout, as a pooled connection would. At most :data:`MOST_THREAD_READERS` threads hold
  one at a time; the others read on pooled connections. That bounds the open files under
  a server that starts a thread per request. A thread that ends leaves its reader to the
  next thread given its identifier.

Readers are keyed by process as well, so a forked child never reads on its parent's
connection. A driver error drops the reader, and the next read opens a fresh one.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable

#: Plain threads that may hold a reader at once (event loops' threads are not counted).
MOST_THREAD_READERS = 32

#: (process, thread, whether on an event loop): the thread's reader there.
_Key = tuple[int, int, bool]


class OwnReaders:
    """The readers of one SQLite file (``path``), for ``SqlStorage.read_invoice``."""

    def __init__(self, path: str, busy_ms: int, most: int = MOST_THREAD_READERS) -> None:
        self._path = path
        self._busy_ms = busy_ms
        self._most = most
        self._readers: dict[_Key, sqlite3.Connection] = {}

    def reader(
        self, on_loop: bool
    ) -> tuple[sqlite3.Connection, Callable[[BaseException], None]] | None:
        """This thread's reader and the call that drops it (after a driver error); None
        when the thread is a plain one and :data:`MOST_THREAD_READERS` are held already."""
        key = (os.getpid(), threading.get_ident(), on_loop)
        reader = self._readers.get(key)
        if reader is None:
            if not on_loop and self.threads() >= self._most:
                return None
            reader = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
            reader.execute(f"PRAGMA busy_timeout={0 if on_loop else self._busy_ms}")
            self._readers[key] = reader

        def drop(_error: BaseException) -> None:
            if self._readers.pop(key, None) is not None:
                reader.close()

        return reader, drop

    def threads(self) -> int:
        """How many plain threads hold a reader."""
        return sum(1 for key in list(self._readers) if not key[2])

    def held(self) -> list[sqlite3.Connection]:
        """The readers open now (for tests and for ``close``)."""
        return list(self._readers.values())

    def close(self) -> None:
        """Close this process's readers (a forked child's copies are its parent's)."""
        for key in list(self._readers):
            if key[0] == os.getpid():
                reader = self._readers.pop(key, None)
                if reader is not None:
                    reader.close()
