"""One socket from challenge to close, for a blocking (WSGI) or an asyncio (ASGI) server.

The adapters wrap their framework's socket in the tiny :class:`SyncSocket` or
:class:`AsyncSocket` shape and call :func:`serve_sync` or :func:`serve_async`; everything
else (the frames, verifying the register frame, subscribing, batching, encryption, closing
a slow client or a revoked key) happens here, once, so the two adapters cannot differ.

:class:`SocketSession` is the shared middle: blocking storage calls and the
:class:`~paycore.realtime.frames.Conversation`, no I/O on the socket. The two drivers only
differ in how they wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Protocol

import anyio
from anyio import to_thread

from ..auth.session import is_active, is_revoked
from ..crypto import ecies
from ..domain.changes import UPDATED
from ..domain.records import SessionKey
from ..errors import AuthError, StorageUnavailable
from ..gateway import Gateway
from .frames import Close, Conversation, Register, encode_event
from .hub import Hub, Subscription, hub_for
from .limits import Admission, Refusal

log = logging.getLogger("paycore.realtime")

#: Seconds a blocking driver sleeps between looks at the client's side of the socket (a
#: stray frame, a disconnect). Pushes do not wait for it: they wake the driver at once.
SYNC_POLL = 0.25


class Disconnected(Exception):
    """The client went away, or the socket can no longer be written."""


class SyncSocket(Protocol):
    """A blocking server-side socket, already accepted."""

    def send(self, text: str) -> None:
        """Send one text frame; raise Disconnected if the socket is gone."""

    def receive(self, timeout: float) -> str | bytes | None:
        """The next frame, or None if none came within ``timeout`` seconds (0: don't
        wait); raise Disconnected once the client has gone."""

    def close(self, code: int, reason: str) -> None:
        """Close with ``code``; never raises."""


class AsyncSocket(Protocol):
    """An asyncio server-side socket, already accepted."""

    async def send(self, text: str) -> None:
        """Send one text frame; raise Disconnected if the socket is gone."""

    async def receive(self) -> str | bytes:
        """The next frame; raise Disconnected once the client has gone."""

    async def close(self, code: int, reason: str) -> None:
        """Close with ``code``; never raises."""


class SocketSession:
    """What one socket knows besides its I/O: its conversation, key and subscription."""

    def __init__(
        self, gateway: Gateway, hub: Hub | None = None, admission: Admission | None = None
    ) -> None:
        self.gateway = gateway
        self.hub = hub or hub_for(gateway)
        #: The socket's place in the Hub's socket caps (released by :meth:`end`); None for
        #: a driver that counts nothing.
        self.admission = admission
        self.conversation = Conversation()
        self.key: SessionKey | None = None
        self.subscription: Subscription | None = None
        self._encrypt_to: str | None = None
        self._next_check = 0.0
        #: A resync frame's message, sent before any push (``_resume``).
        self._resync: str | None = None

    @property
    def register_timeout(self) -> float:
        return self.gateway.settings.ws_register_timeout

    def opening(self) -> str:
        return self.conversation.opening()

    def receive(self, data: str | bytes) -> Register | Close:
        return self.conversation.receive(data)

    def timed_out(self) -> Close:
        return self.conversation.timed_out(self.register_timeout)

    def register(self, frame: Register, wake: Callable[[], None]) -> str | Close:
        """Verify the register frame and subscribe (blocking: storage, maybe Redis).

        Returns the registered frame, or the 4401 close. The nonce is consumed exactly as an
        HTTP request's would be, under the same replay rules, so a register frame cannot be
        replayed, nor an HTTP signature reused here (its hashed input is never a challenge).
        """
        try:
            key = self.gateway.sessions.verify(
                nonce=frame.nonce,
                signature=frame.signature,
                payload=frame.payload,
                public_key=frame.public_key,
            )
        except AuthError as exc:
            return self.conversation.reject(exc.text)
        except StorageUnavailable as exc:
            # Nothing is wrong with the client: 1013 asks it to come back later, as the HTTP
            # side's 503 does, and the outage is logged once per interval, not per socket.
            self._outage(exc)
            return self.conversation.unavailable(exc.text)
        if self.admission is not None:
            refused = self.admission.register(key.owner)
            if refused is not None:
                return self.conversation.too_many(refused.message)
        self.key = key
        # docs/interface.md §Encrypted responses: owner-scoped answers are encrypted for a
        # key that registered an encryption key, unless the client opts out; pushes are
        # owner-scoped answers.
        self._encrypt_to = None if frame.plaintext else key.encryption_public_key
        self.subscription = self.hub.subscribe(key.owner, wake, frame.types)
        self._next_check = time.monotonic() + self.gateway.settings.ws_recheck_interval
        registered = self.conversation.accept(key.owner, encrypted=self._encrypt_to is not None)
        if frame.after is not None:
            self._resume(frame.after, wake)
        return registered

    def _resume(self, after: int, wake: Callable[[], None]) -> None:
        """Queue the owner's events after ``after`` ahead of the live ones (subscribed
        already, so none falls between the two; ``Subscription.resume`` drops what both
        hold), or, past ``ws_queue_size`` of them, a resync frame: a replay that long is
        better served by reading current state."""
        assert self.subscription is not None and self.key is not None
        events, cap = self.hub.events, self.hub.queue_size
        if self.hub.feed is None or events is None:
            self._resync = "this server pushes without event ids: read current state by polling"
            wake()
            return
        try:
            read = events.outbox_since(after, cap + 1, self.key.owner)
        except StorageUnavailable as exc:
            self._outage(exc)
            self._resync = "storage unavailable: read current state by polling later"
            wake()
            return
        if len(read.events) > cap:
            self._resync = (
                f"more than {cap} events after {after}: read current state by polling,"
                " then resume from the newest eventId"
            )
            wake()
            return
        wanted = self.subscription
        replayed = [
            (e.id, encode_event(e.payload), e.type) for e in read.events if wanted.wants(e.type)
        ]
        self.subscription.resume(replayed, read.upto)

    def pending(self) -> list[str] | Close:
        """Frames to send now (one push with every waiting event), or the too-slow close."""
        subscription = self.subscription
        assert subscription is not None, "pending() before a successful register()"
        if subscription.overflowed:
            return self.conversation.too_slow(subscription.limit)
        frames: list[str] = []
        if self._resync is not None:
            # A control frame, like the error frames: never encrypted, it holds no data.
            frames.append(self.conversation.resync(self._resync))
            self._resync = None
        taken = subscription.take_typed()
        if taken:
            ids = [i for i, _, _ in taken]
            known = None if None in ids else [i for i in ids if i is not None]
            # A typed subscription is told each event's type (an untyped one from another
            # process's Hub is a status change: its record's status names it).
            types = [t or UPDATED for _, _, t in taken] if subscription.typed else None
            events = [e for _, e, _ in taken]
            frames.append(self._sealed(self.conversation.push(events, known, types)))
        return frames

    def _sealed(self, frame: str) -> str:
        if self._encrypt_to is None:
            return frame
        sealed = ecies.encrypt(self._encrypt_to, frame.encode("utf-8"))
        return json.dumps({name: sealed[name] for name in ecies.FIELDS}, separators=(",", ":"))

    def seconds_to_check(self) -> float:
        """How long the driver may sleep before :meth:`check_key` is due (at the recheck
        interval, or the key's expiry if sooner)."""
        assert self.key is not None
        until_expiry = self.key.expires_at - self.gateway.now()
        return max(0.0, min(self._next_check - time.monotonic(), float(until_expiry)))

    def check_due(self) -> bool:
        """Is :meth:`check_key` worth calling now (cheap, no storage)?"""
        assert self.key is not None
        return time.monotonic() >= self._next_check or not is_active(self.key, self.gateway.now())

    def check_key(self) -> Close | None:
        """Still allowed to receive? Blocking (a storage read) when the recheck is due."""
        assert self.key is not None
        now = self.gateway.now()
        if not is_active(self.key, now):
            return self.conversation.revoked("session signature: session key expired")
        if time.monotonic() < self._next_check:
            return None
        self._next_check = time.monotonic() + self.gateway.settings.ws_recheck_interval
        try:
            current = self.gateway.sessions.current(self.key.address)
        except StorageUnavailable as exc:
            # The key was valid at the last look and pushes do not need storage: keep the
            # socket and look again at the next interval.
            self._outage(exc)
            return None
        if current is None or is_revoked(current) or current.owner != self.key.owner:
            return self.conversation.revoked("session signature: session key deregistered")
        self.key = current
        if not is_active(current, now):
            return self.conversation.revoked("session signature: session key expired")
        return None

    def _outage(self, exc: StorageUnavailable) -> None:
        self.gateway.storage_outages.failure(
            exc.kind, "storage unavailable (%s: %s) on a WebSocket", exc.kind, exc.detail
        )

    def end(self) -> None:
        if self.subscription is not None:
            self.hub.unsubscribe(self.subscription)
            self.subscription = None
        if self.admission is not None:
            self.admission.release()


# -- blocking servers (Flask under werkzeug, gunicorn threads) -----------------------------


def serve_sync(
    socket: SyncSocket,
    gateway: Gateway,
    hub: Hub | None = None,
    admission: Admission | None = None,
) -> None:
    """Run one socket on the calling thread until it closes; never raises for the client's
    doings. Pushes wake the thread at once; the client's side is looked at every
    ``SYNC_POLL`` seconds. ``admission`` (released here) counts it against the socket caps."""
    session = SocketSession(gateway, hub, admission)
    try:
        socket.send(session.opening())
        data = socket.receive(session.register_timeout)
        step = session.timed_out() if data is None else session.receive(data)
        if isinstance(step, Close):
            _close_sync(socket, step)
            return
        woken = threading.Event()
        answer = session.register(step, woken.set)
        if isinstance(answer, Close):
            _close_sync(socket, answer)
            return
        socket.send(answer)
        while True:
            woken.wait(min(SYNC_POLL, session.seconds_to_check()))
            woken.clear()
            out = session.pending()
            if isinstance(out, Close):
                _close_sync(socket, out)
                return
            for frame in out:
                socket.send(frame)
            stray = socket.receive(0)
            if stray is not None:
                _close_sync(socket, _as_close(session.receive(stray)))
                return
            revoked = session.check_key() if session.check_due() else None
            if revoked is not None:
                _close_sync(socket, revoked)
                return
    except Disconnected:
        return
    finally:
        session.end()


def serve_sync_counted(
    socket: SyncSocket, gateway: Gateway, ip: str | None, hub: Hub | None = None
) -> None:
    """``serve_sync`` for a server that switched to WebSocket before paycore could look
    (flask-sock): the socket caps are applied now, a refused socket closed with 4429."""
    hub = hub or hub_for(gateway)
    decided = hub.limits.admit(ip)
    if isinstance(decided, Refusal):
        _close_sync(socket, Conversation().too_many(decided.message))
        return
    serve_sync(socket, gateway, hub, decided)


def _close_sync(socket: SyncSocket, close: Close) -> None:
    try:
        socket.send(close.frame)
    except Disconnected:
        return
    socket.close(close.code, close.reason)


# -- asyncio servers (Litestar under uvicorn) ----------------------------------------------


async def serve_async(
    socket: AsyncSocket,
    gateway: Gateway,
    hub: Hub | None = None,
    admission: Admission | None = None,
) -> None:
    """Run one socket until it closes. Storage and Redis calls go to worker threads; a
    push wakes the socket's task through the event loop, from whichever thread committed
    it. ``admission`` (released here) counts it against the socket caps."""
    session = SocketSession(gateway, hub, admission)
    try:
        await socket.send(session.opening())
        data: str | bytes | None = None
        with anyio.move_on_after(session.register_timeout):
            data = await socket.receive()
        step = session.timed_out() if data is None else session.receive(data)
        if isinstance(step, Close):
            await _close_async(socket, step)
            return
        loop = asyncio.get_running_loop()
        woken = asyncio.Event()

        def wake() -> None:
            loop.call_soon_threadsafe(woken.set)

        answer = await to_thread.run_sync(session.register, step, wake)
        if isinstance(answer, Close):
            await _close_async(socket, answer)
            return
        await socket.send(answer)
        closing = await _pump(socket, session, woken)
        if closing is not None:
            await _close_async(socket, closing)
    except Disconnected:
        return
    finally:
        session.end()


async def _pump(socket: AsyncSocket, session: SocketSession, woken: asyncio.Event) -> Close | None:
    """Push until the client leaves (None) or the socket must be closed (that Close).

    One task watches the client's side, where any frame is a protocol error and a
    disconnect ends everything; this task sends pushes and rechecks the key. Whichever
    decides first wins: the conversation keeps the one close it decided on.
    """
    stray: list[str | bytes] = []
    async with anyio.create_task_group() as tasks:

        async def watch_client() -> None:
            with contextlib.suppress(Disconnected):
                stray.append(await socket.receive())
            tasks.cancel_scope.cancel()

        tasks.start_soon(watch_client)
        try:
            while True:
                with anyio.move_on_after(session.seconds_to_check()):
                    await woken.wait()
                woken.clear()
                out = session.pending()
                if isinstance(out, Close):
                    break
                for frame in out:
                    await socket.send(frame)
                if session.check_due():
                    revoked = await to_thread.run_sync(session.check_key)
                    if revoked is not None:
                        break
        except Disconnected:
            pass
        tasks.cancel_scope.cancel()
    if session.conversation.closing is None and stray:
        session.receive(stray[0])
    return session.conversation.closing


async def _close_async(socket: AsyncSocket, close: Close) -> None:
    try:
        await socket.send(close.frame)
    except Disconnected:
        return
    await socket.close(close.code, close.reason)


def _as_close(step: Register | Close) -> Close:
    """After registered, ``Conversation.receive`` only ever answers with a Close."""
    assert isinstance(step, Close)
    return step
