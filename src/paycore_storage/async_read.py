"""``read_invoice_async``: the checkout page's poll read on an event loop, on PostgreSQL;
and ``spend_nonce_then_read_async``, a signed read's one statement there.

``SqlStorage.read_invoice`` blocks for its round trip, so an async adapter (Litestar) sent
every PostgreSQL poll to a worker thread and back: the hop cost more CPU than the read.
Here the same statement (``invoice_read.read_on_async``: the SQL, arguments and row
conversions of the sync read, so the same ``InvoiceRead`` and ``ETag``) runs on a psycopg
``AsyncConnection`` in autocommit, awaited on the loop.

Connections: a small pool per event loop (an ``AsyncConnection`` belongs to the loop it
was opened on), connected as the engine's connections are (the dialect's connect
arguments, its adapters map: the same rows). At most ``size`` connections per loop; a
poll beyond that waits on the loop for one to come back. An idle connection the server has
closed is dropped on checkout, as the engine's pool does (``engine._readable``), and one a
statement broke is closed and not kept; the caller (``paycore.api.handle_inline_async``)
then answers from a worker thread, whose own pool reconnects. ``close`` closes them all.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from sqlalchemy import Engine

from paycore.domain.records import SessionKey
from paycore.storage.invoice_read import InvoiceRead

from .engine import POSTGRES_CONNECT_TIMEOUT, _readable, unavailable
from .invoice_read import read_on_async
from .prepared import kept_cursor
from .signed_create import spend_then_create_on_postgres_async
from .signed_read import spend_then_read_on_postgres_async

_T = TypeVar("_T")

#: Connections per event loop: a worker's concurrent polls beyond it queue for one.
POOL_SIZE = 8


class _LoopPool:
    """One event loop's connections: its idle list and a bound on how many are open."""

    def __init__(self, size: int) -> None:
        self.idle: list[Any] = []
        self.slots = asyncio.Semaphore(size)
        self.size = size


class AsyncReads:
    """The async reads of one ``SqlStorage`` on PostgreSQL, and their connections."""

    def __init__(self, engine: Engine, size: int = POOL_SIZE) -> None:
        self._dialect = engine.dialect
        cargs, cparams = engine.dialect.create_connect_args(engine.url)
        self._cargs = tuple(cargs)
        self._cparams = {"connect_timeout": POSTGRES_CONNECT_TIMEOUT, **cparams}
        self._size = size
        self._pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopPool] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()
        self._closed = False

    def _pool(self) -> _LoopPool:
        loop = asyncio.get_running_loop()
        found = self._pools.get(loop)
        if found is None:
            with self._lock:
                found = self._pools.setdefault(loop, _LoopPool(self._size))
        return found

    async def read_invoice(self, guid: str) -> InvoiceRead | None:
        """The one-statement read of ``guid`` on a pooled async connection. A failure to
        reach the database raises ``StorageUnavailable`` (``engine.unavailable``), the
        connection discarded."""
        return await self._on_connection(lambda cur: read_on_async(self._dialect, cur, guid))

    async def spend_nonce_then_read(
        self, params: dict[str, Any], strict: bool, guid: str
    ) -> tuple[SessionKey | None, InvoiceRead | None]:
        """A signed read's one statement (``signed_read``: the nonce's spend, committed
        with the statement, and the read of ``guid``) on a pooled async connection; errors
        as :meth:`read_invoice`'s. A statement cut short (an outage, a cancelled task) may
        or may not have spent: the caller answers as the sync path would (503), never
        spends again."""
        return await self._on_connection(
            lambda cur: spend_then_read_on_postgres_async(self._dialect, cur, params, strict, guid)
        )

    async def spend_then_create(self, sql: str, arguments: dict[str, Any]) -> SessionKey | None:
        """A signed creation's one statement (``signed_create``) on a pooled async
        connection; errors as :meth:`spend_nonce_then_read`'s."""
        return await self._on_connection(
            lambda cur: spend_then_create_on_postgres_async(cur, sql, arguments)
        )

    async def _on_connection(self, work: Callable[[Any], Awaitable[_T]]) -> _T:
        """``work(cursor)`` awaited with the kept cursor (``prepared.kept_cursor``) of a
        pooled connection, which goes back to the pool after, or is discarded when
        ``work`` failed."""
        if self._closed:
            raise RuntimeError("storage used after close()")
        pool = self._pool()
        async with pool.slots:
            connection = await self._checkout(pool)
            try:
                found = await work(kept_cursor(connection))
            except BaseException as error:
                # Broken, or left mid-statement (a cancelled task): never handed out again.
                await _discard(connection)
                outage = unavailable(error) if isinstance(error, Exception) else None
                if outage is None:
                    raise
                raise outage from error
            if self._closed:
                await _discard(connection)
            else:
                pool.idle.append(connection)
            return found

    async def _checkout(self, pool: _LoopPool) -> Any:
        """An idle connection the server has not closed, else a new one."""
        while pool.idle:
            connection = pool.idle.pop()
            if not (connection.closed or connection.broken or _readable(connection.fileno())):
                return connection
            await _discard(connection)
        from psycopg import AsyncConnection  # the postgres extra: only reached on PostgreSQL

        try:
            return await AsyncConnection.connect(*self._cargs, autocommit=True, **self._cparams)
        except Exception as error:
            outage = unavailable(error)
            if outage is None:
                raise
            raise outage from error

    def idle(self) -> int:
        """Idle connections kept for the running loop (for tests)."""
        return len(self._pool().idle)

    def close(self) -> None:
        """Close every idle connection of every loop, from any thread (libpq's own close,
        which waits for nothing); one in use is closed when its read returns."""
        self._closed = True
        with self._lock:
            pools = list(self._pools.values())
        for pool in pools:
            while pool.idle:
                pool.idle.pop().pgconn.finish()


async def _discard(connection: Any) -> None:
    # A broken connection may fail to close: it is gone either way.
    with contextlib.suppress(Exception):
        await connection.close()
