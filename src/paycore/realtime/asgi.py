"""GET /ws on an ASGI server, at the level of ASGI messages: the caps before the switch.

An ASGI server hands the application the upgrade request (``websocket.connect``) before it
answers it, so a socket past a cap (``paycore.realtime.limits``) can be refused with a
plain ``429`` and ``Retry-After`` instead of being switched to WebSocket and closed: the
client's library then reports an HTTP status and its retry logic sees when to come back.
Servers that implement the ``websocket.http.response`` extension (uvicorn does) send that
answer; others get a close before the accept, which they answer with 403.

Both run GET /ws through :func:`serve_asgi_socket`: the Litestar adapter with its own
socket wrapper, ``paycore serve --framework flask`` (``paycore_flask.asgi``) with
:class:`AsgiSocket`; the driver after the accept is ``serve_async`` for both.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from ..gateway import Gateway
from .connection import AsyncSocket, Disconnected, serve_async
from .hub import Hub
from .limits import Admission, Refusal

# Loosely typed on purpose: each framework types ASGI messages its own way (Litestar's are
# TypedDicts), and these functions must take its callables as they are.
Scope = Any
Receive = Callable[[], Awaitable[Any]]
Send = Callable[[Any], Awaitable[None]]

#: What a send on a socket that is gone raises: the server's disconnect (uvicorn's
#: ClientDisconnected is an OSError) or the ASGI send-after-close RuntimeError.
_GONE = (OSError, RuntimeError)


def client_ip(scope: Scope) -> str | None:
    """The peer address as the server reports it (after its proxy-header handling)."""
    client = scope.get("client")
    return str(client[0]) if client else None


async def admit(scope: Scope, receive: Receive, send: Send, hub: Hub) -> Admission | None:
    """Read the upgrade (``websocket.connect``) and count it, or refuse it.

    Returns the admission (the caller accepts the socket and releases it when done), or
    None when the client left first or the socket was refused (answered already).
    """
    message = await receive()
    if message.get("type") != "websocket.connect":
        return None
    decided = hub.limits.admit(client_ip(scope))
    if isinstance(decided, Refusal):
        await refuse(scope, send, decided)
        return None
    return decided


async def refuse(scope: Scope, send: Send, refusal: Refusal) -> None:
    """Answer the upgrade with 429 and ``Retry-After`` where the server can, else close it."""
    extensions = scope.get("extensions") or {}
    with contextlib.suppress(*_GONE):
        if "websocket.http.response" in extensions:
            body = refusal.http_text.encode("utf-8")
            headers = [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode("ascii")),
                (b"retry-after", str(refusal.retry_after).encode("ascii")),
            ]
            await send({"type": "websocket.http.response.start", "status": 429, "headers": headers})
            await send({"type": "websocket.http.response.body", "body": body, "more_body": False})
        else:
            await send({"type": "websocket.close", "code": 4429, "reason": refusal.message[:123]})


async def accept(send: Send) -> None:
    """Switch the admitted upgrade to WebSocket."""
    await send({"type": "websocket.accept", "subprotocol": None, "headers": []})


class AsgiSocket:
    """Raw ASGI ``receive``/``send`` in the shape ``serve_async`` expects."""

    def __init__(self, receive: Receive, send: Send) -> None:
        self._receive = receive
        self._send = send

    async def send(self, text: str) -> None:
        try:
            await self._send({"type": "websocket.send", "text": text})
        except _GONE:
            raise Disconnected from None

    async def receive(self) -> str | bytes:
        try:
            message = await self._receive()
        except _GONE:
            raise Disconnected from None
        if message.get("type") != "websocket.receive":
            raise Disconnected
        text = message.get("text")
        return text if text is not None else message.get("bytes") or b""

    async def close(self, code: int, reason: str) -> None:
        with contextlib.suppress(*_GONE):
            await self._send({"type": "websocket.close", "code": code, "reason": reason})


async def serve_asgi_socket(
    scope: Scope,
    receive: Receive,
    send: Send,
    gateway: Gateway,
    hub: Hub,
    socket: AsyncSocket | None = None,
) -> None:
    """One GET /ws connection from upgrade to close: admitted, accepted, served. ``socket``
    is a framework's wrapper around the same ``receive``/``send`` (Litestar's), else
    :class:`AsgiSocket`."""
    admission = await admit(scope, receive, send, hub)
    if admission is None:
        return
    try:
        try:
            await accept(send)
        except _GONE:
            return
        await serve_async(socket or AsgiSocket(receive, send), gateway, hub, admission)
    finally:
        admission.release()
