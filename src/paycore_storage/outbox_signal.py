"""Wake-ups for readers of the outbox in other processes (``paycore.storage.OutboxSignal``).

A web process serving WebSockets reads the outbox itself, so that it pushes the changes
every process commits (``paycore worker`` makes most of them); these tell it when to look.

- PostgreSQL: every transaction that adds events also runs ``pg_notify`` (in the statement
  that publishes its lowest event id, ``sql.py``, so it costs no round trip), which the
  server delivers when, and only if, it commits. :class:`PostgresListen` holds one psycopg
  connection in autocommit that is ``LISTEN``-ing on :data:`CHANNEL`. Notifications are
  database-wide: paycore schemas sharing a database wake each other's readers, which then
  read nothing, a false alarm the signal allows.
- SQLite (a file): :class:`SqliteDataVersion` looks at ``PRAGMA data_version`` on a
  connection of its own every :data:`SQLITE_TICK` seconds; the number moves whenever another
  connection, of any process, commits. There is no push in SQLite; a look costs a few
  microseconds and no lock.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from typing import Any

from sqlalchemy.engine import URL

#: The LISTEN/NOTIFY channel of outbox commits.
CHANNEL = "paycore_outbox"
#: Seconds between two looks at SQLite's data_version.
SQLITE_TICK = 0.05


class PostgresListen:
    """``LISTEN paycore_outbox`` on a connection of its own (see the module docstring)."""

    def __init__(self, url: URL, *, name: str = "paycore-outbox", connect_timeout: int = 5):
        import psycopg

        conninfo = url.set(drivername="postgresql").render_as_string(hide_password=False)
        self._conn: Any = psycopg.connect(
            conninfo,
            autocommit=True,
            connect_timeout=connect_timeout,
            application_name=name,
        )
        self._conn.execute(f"LISTEN {CHANNEL}")

    @property
    def backend_pid(self) -> int:
        """The server process of the listening connection (for operators and tests)."""
        pid: int = self._conn.info.backend_pid
        return pid

    def wait(self, timeout: float) -> bool:
        # notifies() returns after the first notification or the timeout; several commits
        # that came together wake the reader once, and it reads them all in one go.
        got = False
        for _ in self._conn.notifies(timeout=max(0.0, timeout), stop_after=1):
            got = True
        if self._conn.closed or self._conn.broken:
            raise ConnectionError("the LISTEN connection was closed")
        return got

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._conn.close()


class SqliteDataVersion:
    """``PRAGMA data_version`` of a SQLite file, looked at every ``SQLITE_TICK`` seconds."""

    def __init__(self, path: str, tick: float = SQLITE_TICK) -> None:
        self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._tick = tick
        self._seen = self._version()

    def _version(self) -> int:
        version: int = self._conn.execute("PRAGMA data_version").fetchone()[0]
        return version

    def wait(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while True:
            version = self._version()
            if version != self._seen:
                self._seen = version
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(self._tick, left))

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._conn.close()
