"""The Flask app under an event loop: ``paycore serve --framework flask``'s ASGI front.

Under a threaded WSGI server every connection the server has handed to a thread holds that
thread until it ends: a WebSocket for its whole life, a slowloris client for as long as it
takes to drip its headers. With eight threads, eight idle sockets stopped the server. So
``paycore serve`` runs Flask behind this front, in uvicorn's worker class, as it runs
Litestar:

- The event loop reads every request's head and body (at most ``MAX_BODY`` + one read:
  paycore refuses more anyway), so a slow or idle client costs a coroutine and a file
  descriptor, never a thread.
- Only a complete request goes to a thread, where the Flask app (the WSGI callable) runs
  exactly as under any WSGI server, its database connections and everything else blocking
  as before; ``threads`` of them at a time (``--threads``), the others queued.
- GET {prefix}/ws never reaches Flask: the core's asyncio driver serves it
  (``paycore.realtime.asgi``, the same ``serve_async`` Litestar's sockets run), with the
  Flask app's gateway and Hub, so a socket is a coroutine, and the socket caps answer a
  refused upgrade with 429 before it is switched. The outbox feed thread and the gateway
  are the app's, unchanged.
- A GET {prefix}/invoice/{guid} (the checkout page's poll, and a merchant's signed read),
  when no host code would see the request (no request hooks or guards, no WSGI
  middleware), is answered by the core without Flask: on the event loop when nothing
  would wait (``paycore.api.handle_inline_async``, as under Litestar: a SQLite file's
  read, a signed read's spend all or nothing there, no expiry due; on PostgreSQL the
  round trip awaited), else on a thread. Either way it is the answer Flask's view gives,
  without building a Flask request for it. A hooked app sends it to Flask like any
  request. So is a POST {prefix}/invoice (an invoice's creation): on the loop where a
  SQLite file lets its one transaction run all or nothing there
  (``paycore.api.handle_inline``), else on a thread.
- GET {prefix}/invoice/{guid}/events (the checkout page's push): the view runs on a
  thread as any request, opens the stream and hands it over (``view.ASYNC_STREAMS``); the
  event loop then sends it, a coroutine per stream as under Litestar, so open streams
  count against ``event_streams_max``, not against the threads.
- The lifespan's shutdown closes the gateway, as gunicorn's worker-exit hook did.

A bare WSGI app (the benchmark's ceiling) gets the same front without the socket route.
Behind the front, GET {prefix}/ws does not pass through Flask: ``PayCore(guards=...)`` and
``before_request`` functions do not see it, and an upgrade to any other path is answered
404 (the host's own flask-sock routes need a threaded WSGI server).
Under gunicorn directly: ``--worker-class paycore.runtime.asgi_worker.PaycoreWorker
'paycore_flask:create_asgi_app()'``.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import io
import logging
import sys
from collections.abc import Callable, Iterable, Iterator, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from anyio import to_thread

from paycore import Gateway, Settings
from paycore.api import Request as PaycoreRequest
from paycore.api import Response as PaycoreResponse
from paycore.api import (
    handle,
    handle_inline_async,
    reads_inline,
    reads_inline_async,
)
from paycore.api.http import MAX_BODY
from paycore.realtime.asgi import Receive, Send, serve_asgi_socket
from paycore.realtime.hub import Hub, hub_for
from paycore.realtime.invoice_stream import EventStream

from .extension import PayCoreState
from .view import ASYNC_STREAMS, environ_headers

log = logging.getLogger("paycore.flask")
_T = TypeVar("_T")

Scope = MutableMapping[str, Any]
WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

#: Requests one front runs at once, each on a thread (``paycore serve --threads``).
DEFAULT_THREADS = 8

#: A response body is pulled from the WSGI iterable in batches of about this many bytes:
#: one thread hop for an ordinary answer, bounded memory for a streamed export.
_BATCH = 64 * 1024


class _ClientGone(Exception):
    """The client disconnected before its request body was complete."""


class AsgiFront:
    """An ASGI app: HTTP to ``wsgi`` on ``threads`` threads; ``ws_path`` to the core."""

    def __init__(
        self,
        wsgi: WsgiApp,
        *,
        threads: int,
        gateway: Gateway | None = None,
        ws_path: str | None = None,
    ) -> None:
        self.wsgi = wsgi
        self.threads = threads
        self.gateway = gateway
        self.hub: Hub | None = hub_for(gateway) if gateway is not None else None
        self.ws_path = ws_path
        #: ``{prefix}/invoice/`` when a GET of one invoice may be answered without Flask
        #: (:meth:`_invoice_get`), else None.
        self.inline_prefix: str | None = None
        #: Whether the poll is worth trying on the event loop (not on PostgreSQL, whose
        #: every read is a round trip: ``paycore.api.reads_inline``), before a thread.
        self.loop_reads = False
        #: Whether the poll's read is awaited on the loop first (PostgreSQL with a store
        #: that has ``read_invoice_async``: ``paycore.api.handle_inline_async``).
        self.loop_reads_async = False
        self.prefix = ""
        # Created on first use, in the worker (after the fork). A plain executor: its
        # hop is cheaper than anyio's to_thread, and Flask needs none of the caller's
        # context (it pushes its own).
        self._pool: ThreadPoolExecutor | None = None

    @classmethod
    def for_app(cls, app: Any, *, threads: int = DEFAULT_THREADS) -> AsgiFront:
        """The front for a Flask app: with paycore's socket route when paycore is on it."""
        found = getattr(app, "extensions", {}).get("paycore")
        if isinstance(found, PayCoreState):
            front = cls(app, threads=threads, gateway=found.gateway, ws_path=found.prefix + "/ws")
            front.prefix = found.prefix
            if _sees_nothing(app):
                front.inline_prefix = found.prefix + "/invoice/"
                front.loop_reads = reads_inline(found.gateway)
                front.loop_reads_async = reads_inline_async(found.gateway)
            return front
        return cls(app, threads=threads)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            await self._http(scope, receive, send)
        elif kind == "websocket":
            await self._websocket(scope, receive, send)
        elif kind == "lifespan":
            await self._lifespan(receive, send)

    # -- lifespan -------------------------------------------------------------------------
    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self.gateway is not None:
                    try:
                        await to_thread.run_sync(self.gateway.close)
                    except Exception:  # the worker is stopping; say so and go on
                        log.exception("closing the gateway failed")
                if self._pool is not None:
                    self._pool.shutdown(wait=False)
                await send({"type": "lifespan.shutdown.complete"})
                return

    # -- WebSocket ------------------------------------------------------------------------
    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.gateway is None or self.hub is None or scope.get("path") != self.ws_path:
            await _refuse_websocket(scope, receive, send)
            return
        await serve_asgi_socket(scope, receive, send, self.gateway, self.hub)

    # -- HTTP -----------------------------------------------------------------------------
    async def _on_thread(self, fn: Callable[..., _T], *args: Any) -> _T:
        """``fn(*args)`` on one of the ``threads`` threads (queued while all are busy), in
        a copy of the caller's context, as anyio's threads run: what the loop set for the
        request (``paycore.api``'s note that it tried the creation) reaches the thread."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="paycore-flask")
        context = contextvars.copy_context()
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, context.run, fn, *args)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            body = await _read_body(scope, receive)
        except _ClientGone:
            return
        if self.inline_prefix is not None and self._inline_path(scope) is not None:
            await _send_answer(send, await self._invoice_get(scope))
            return
        if self.inline_prefix is not None and self._is_creation(scope, body):
            await _send_answer(send, await self._invoice_post(scope, body))
            return
        environ = wsgi_environ(scope, body)
        streams: list[EventStream] = []
        environ[ASYNC_STREAMS] = streams
        try:
            status, headers, first, rest = await self._on_thread(_start, self.wsgi, environ)
        except Exception:
            for stream in streams:
                stream.close()
            log.exception("the WSGI app raised")
            await _plain(send, 500, b"internal error")
            return
        if streams:
            await _event_stream(streams[0], status, headers, receive, send)
            return
        await send({"type": "http.response.start", "status": status, "headers": headers})
        if rest is None:
            await send({"type": "http.response.body", "body": first, "more_body": False})
            return
        # A streamed body: sent batch by batch, each pulled on a thread.
        try:
            chunk: bytes | None = first
            while chunk is not None:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
                chunk = await self._on_thread(_next_of, rest)
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            await self._on_thread(_close, rest)

    def _inline_path(self, scope: Scope) -> str | None:
        """The path below the prefix of a ``GET {prefix}/invoice/{guid}``, else None."""
        if scope["method"] != "GET" or self.inline_prefix is None:
            return None
        path = _below_root(scope)
        if not path.startswith(self.inline_prefix):
            return None
        guid = path[len(self.inline_prefix) :]
        if not guid or "/" in guid:
            return None
        return path[len(self.prefix) :]

    async def _invoice_get(self, scope: Scope) -> PaycoreResponse:
        """A GET of one invoice answered by the core without Flask: on the loop as Litestar
        answers it (``paycore.api.handle_inline_async``) when nothing would wait -- a SQLite
        file's read, or on PostgreSQL the read awaited on the loop; for a signed read its
        spend all or nothing on a SQLite file, or awaited on PostgreSQL; no expiry to
        write --, else on a thread, where the core answers it whole (nothing was spent)
        or, after a spend awaited on the loop, on that same spend.

        Only for an app on which nothing of the host sees a request (no ``before_request``
        or ``after_request`` function, guard, teardown or WSGI middleware:
        :func:`_sees_nothing`), so answering without Flask is answering as Flask would."""
        gateway = self.gateway
        assert gateway is not None
        request = self._core_request(scope)
        if self.loop_reads or self.loop_reads_async:
            # handle_inline_async awaits the read where the store has an async one, and is
            # handle_inline itself where it has not.
            answered = await handle_inline_async(gateway, request)
            if answered is not None:
                return answered
        return await self._on_thread(handle, gateway, request)

    def _is_creation(self, scope: Scope, body: bytes) -> bool:
        """Whether this is a ``POST {prefix}/invoice`` whose whole body was read (none over
        the cap: Flask's view refuses those, with its text)."""
        if scope["method"] != "POST" or self.inline_prefix is None:
            return False
        if _below_root(scope) != self.inline_prefix[:-1] or len(body) > MAX_BODY:
            return False
        declared = _header(scope, b"content-length")
        return declared is None or (declared.isdigit() and int(declared) == len(body))

    async def _invoice_post(self, scope: Scope, body: bytes) -> PaycoreResponse:
        """An invoice's creation answered by the core without Flask, on an app no host code
        hooks (as for :meth:`_invoice_get`): made on the loop where the store spends and
        writes all or nothing there (``paycore.api.handle_inline``: a SQLite file), else
        on a thread."""
        gateway = self.gateway
        assert gateway is not None
        request = self._core_request(scope, "/invoice", body)
        answered = await handle_inline_async(gateway, request)
        if answered is not None:
            return answered
        return await self._on_thread(handle, gateway, request)

    def _core_request(
        self, scope: Scope, below: str | None = None, body: bytes = b""
    ) -> PaycoreRequest:
        """The core's request for a poll (or, with ``below`` and ``body``, an invoice's
        creation), as Flask's view would make it (``view.to_paycore``)."""
        below = below or self._inline_path(scope)
        assert below is not None
        environ_like = wsgi_environ(scope, b"")
        server = scope.get("server") or ("localhost", 80)
        host = environ_like.get("HTTP_HOST") or f"{server[0]}:{server[1]}"
        root = environ_like["SCRIPT_NAME"]
        return PaycoreRequest(
            method=scope["method"],
            path=_wsgi_text(below),
            query_string=_wsgi_text(environ_like["QUERY_STRING"]),
            headers=environ_headers(environ_like),
            body=body,
            raw_uri=_wsgi_text(environ_like["RAW_URI"]),
            root_url=f"{environ_like['wsgi.url_scheme']}://{host}{_wsgi_text(root)}",
            prefix=self.prefix,
            client=str(environ_like.get("REMOTE_ADDR") or ""),
        )


def _sees_nothing(app: Any) -> bool:
    """Whether no host code would see a request to the Flask app: no request hooks (app-
    wide or a blueprint's: paycore's guards are its blueprint's ``before_request``), no
    URL preprocessors, no WSGI middleware put in ``app.wsgi_app``."""
    hooks = (
        "before_request_funcs",
        "after_request_funcs",
        "teardown_request_funcs",
        "url_value_preprocessors",
    )
    if "wsgi_app" in vars(app):
        return False
    return not any(funcs for name in hooks for funcs in getattr(app, name, {}).values())


def _below_root(scope: Scope) -> str:
    """The request's path without the app's root path (where the server mounted it)."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    return path[len(root) :] if root and path.startswith(root) else path


def _wsgi_text(value: str) -> str:
    """Text as WSGI carries it (the bytes as latin-1) back to the client's UTF-8."""
    return value.encode("latin-1", "replace").decode("utf-8", "replace")


async def _send_answer(send: Send, response: PaycoreResponse) -> None:
    """A whole paycore answer, with the headers Flask would give it."""
    headers = [
        (k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in response.headers.items()
    ]
    if response.status != 304:  # werkzeug drops a 304's entity headers: so does this
        headers.append((b"content-type", response.content_type.encode("latin-1")))
        headers.append((b"content-length", str(len(response.body)).encode("ascii")))
    await send({"type": "http.response.start", "status": response.status, "headers": headers})
    await send({"type": "http.response.body", "body": response.body, "more_body": False})


async def _event_stream(
    stream: EventStream,
    status: int,
    headers: list[tuple[bytes, bytes]],
    receive: Receive,
    send: Send,
) -> None:
    """An event stream a view handed over (``view.ASYNC_STREAMS``), sent from the loop
    until it ends or the client goes (``http.disconnect``); then its place is given back.
    Flask's answer supplied the head; its empty body's length is dropped."""
    chunks = stream.async_chunks()
    try:
        if status != 200:  # an after_request hook replaced the answer: no stream then
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        head = [(k, v) for k, v in headers if k != b"content-length"]
        await send({"type": "http.response.start", "status": status, "headers": head})

        async def pump() -> None:
            async for chunk in chunks:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})

        pumping = asyncio.ensure_future(pump())
        leaving = asyncio.ensure_future(_disconnected(receive))
        try:
            await asyncio.wait({pumping, leaving}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (pumping, leaving):
                task.cancel()
            for task in (pumping, leaving):
                with contextlib.suppress(BaseException):
                    await task
    except OSError:
        pass  # the connection went while the head was sent
    finally:
        closer = getattr(chunks, "aclose", None)
        if closer is not None:
            with contextlib.suppress(Exception):
                await closer()
        stream.close()  # safe twice: the generator's own finally closes it too


async def _disconnected(receive: Receive) -> None:
    """Returns when the client has gone (the request body was read already)."""
    while (await receive())["type"] != "http.disconnect":
        pass


async def _read_body(scope: Scope, receive: Receive) -> bytes:
    """The request body, read on the event loop: up to ``MAX_BODY`` + one read, or nothing
    when the declared length is over the cap already (the app refuses from the header)."""
    declared = _header(scope, b"content-length")
    if declared is not None and declared.strip().isdigit() and int(declared) > MAX_BODY:
        return b""
    chunks: list[bytes] = []
    total = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise _ClientGone
        chunk = message.get("body", b"")
        chunks.append(chunk)
        total += len(chunk)
        if total > MAX_BODY or not message.get("more_body", False):
            return b"".join(chunks)


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return bytes(value)
    return None


def wsgi_environ(scope: Scope, body: bytes) -> dict[str, Any]:
    """PEP 3333's environ for one ASGI HTTP request, as gunicorn builds it: text is the
    bytes as latin-1, and ``RAW_URI`` the request target as sent (a signed GET covers it)."""
    query: bytes = scope.get("query_string", b"")
    raw_path: bytes = scope.get("raw_path") or scope["path"].encode("utf-8")
    target = raw_path + (b"?" + query if query and b"?" not in raw_path else b"")
    server = scope.get("server") or ("localhost", 80)
    client = scope.get("client")
    root = scope.get("root_path", "")
    path: str = scope["path"]
    if root and path.startswith(root):
        path = path[len(root) :]
    environ: dict[str, Any] = {
        "REQUEST_METHOD": scope["method"],
        "SCRIPT_NAME": root.encode("utf-8").decode("latin-1"),
        "PATH_INFO": path.encode("utf-8").decode("latin-1"),
        "QUERY_STRING": query.decode("latin-1"),
        "RAW_URI": target.decode("latin-1"),
        "SERVER_PROTOCOL": f"HTTP/{scope.get('http_version', '1.1')}",
        "SERVER_NAME": str(server[0]),
        "SERVER_PORT": str(server[1]) if server[1] is not None else "",
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": scope.get("scheme", "http"),
        "wsgi.input": io.BytesIO(body),
        "wsgi.input_terminated": True,
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    if client:
        environ["REMOTE_ADDR"] = str(client[0])
        environ["REMOTE_PORT"] = str(client[1])
    for raw_name, raw_value in scope.get("headers", ()):
        if b"_" in raw_name:
            # X_Forwarded_For would pass for X-Forwarded-For once dashes become
            # underscores: dropped, as gunicorn drops them.
            continue
        name = raw_name.decode("latin-1").upper().replace("-", "_")
        value = raw_value.decode("latin-1")
        key = name if name in ("CONTENT_LENGTH", "CONTENT_TYPE") else "HTTP_" + name
        environ[key] = environ[key] + "," + value if key in environ else value
    return environ


_Started = tuple[int, list[tuple[bytes, bytes]], bytes, "_Body | None"]


def _start(app: WsgiApp, environ: dict[str, Any]) -> _Started:
    """On a thread: call the app; its status, headers and first batch of body, and the
    rest of the iterable when there is more (None when the whole body is in hand)."""
    started: list[Any] = []
    written: list[bytes] = []

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        # Nothing is sent before this thread returns, so an error page may always replace
        # what was started (PEP 3333's exc_info case needs no re-raise here).
        started[:] = [status, headers]
        return written.append  # PEP 3333's legacy write()

    result = app(environ, start_response)
    body = _Body(result)
    try:
        first = _next_batch(body)
        # Read one batch ahead: an ordinary answer (one chunk) then goes out in one message.
        body.pending = _next_batch(body) if first is not None else None
    except BaseException:
        _close(body)
        raise
    if not started:
        _close(body)
        raise RuntimeError("the WSGI app returned without calling start_response")
    status_text, header_list = started
    headers = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in header_list]
    status = int(status_text.split(" ", 1)[0])
    head = b"".join(written) + (first or b"")
    if body.pending is None:
        _close(body)
        return status, headers, head, None
    return status, headers, head, body


class _Body:
    """A WSGI response iterable with its ``close()`` kept (PEP 3333 wants it called)."""

    def __init__(self, result: Iterable[bytes]) -> None:
        self.result = result
        self.iterator = iter(result)
        self.done = False
        #: A batch read ahead, handed out before the iterator's next.
        self.pending: bytes | None = None

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        return next(self.iterator)

    def close(self) -> None:
        if not self.done:
            self.done = True
            closer = getattr(self.result, "close", None)
            if callable(closer):
                closer()


def _next_batch(iterator: Iterator[bytes]) -> bytes | None:
    """About ``_BATCH`` bytes of the body, or None once it is exhausted."""
    if isinstance(iterator, _Body) and iterator.pending is not None:
        ahead, iterator.pending = iterator.pending, None
        return ahead
    parts: list[bytes] = []
    size = 0
    for chunk in iterator:
        if chunk:
            parts.append(chunk)
            size += len(chunk)
            if size >= _BATCH:
                break
    else:
        if not parts:
            return None
        # Exhausted with this batch in hand: the next call answers None.
    return b"".join(parts)


def _next_of(body: _Body) -> bytes | None:
    return _next_batch(body)


def _close(iterator: Iterator[bytes] | None) -> None:
    closer = getattr(iterator, "close", None)
    if callable(closer):
        with contextlib.suppress(Exception):
            closer()


async def _plain(send: Send, status: int, body: bytes) -> None:
    with contextlib.suppress(OSError, RuntimeError):
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"text/plain; charset=utf-8"),
                    (b"content-length", str(len(body)).encode("ascii")),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body, "more_body": False})


async def _refuse_websocket(scope: Scope, receive: Receive, send: Send) -> None:
    """An upgrade to any other path: 404 where the server can answer one, else a close."""
    message = await receive()
    if message.get("type") != "websocket.connect":
        return
    with contextlib.suppress(OSError, RuntimeError):
        if "websocket.http.response" in (scope.get("extensions") or {}):
            body = f"not found: no WebSocket at {scope.get('path', '')}".encode()
            await send(
                {
                    "type": "websocket.http.response.start",
                    "status": 404,
                    "headers": [
                        (b"content-type", b"text/plain; charset=utf-8"),
                        (b"content-length", str(len(body)).encode("ascii")),
                    ],
                }
            )
            await send({"type": "websocket.http.response.body", "body": body})
        else:
            await send({"type": "websocket.close", "code": 1000})


def create_asgi_app(
    settings: Settings | None = None, *, prefix: str = "/paycore", threads: int = DEFAULT_THREADS
) -> AsgiFront:
    """The standalone Flask host app (``create_app``) behind the front, for an ASGI server:
    what ``paycore serve --framework flask`` runs in each worker."""
    from .app import create_app

    return AsgiFront.for_app(create_app(settings, prefix=prefix), threads=threads)
