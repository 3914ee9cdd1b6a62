"""GET {prefix}/ws for Litestar: a native websocket handler that ``paycore.realtime`` runs.

The core admits the upgrade against the socket caps (``paycore.realtime.asgi``: a refused
one gets 429 with ``Retry-After`` and is never switched), the handler accepts it, and
everything after (frames, auth, pushes, closes) is the core's ``serve_async``, the same
protocol the Flask adapter serves.
"""

from __future__ import annotations

import contextlib
from typing import Any

from litestar import WebSocket, websocket
from litestar.exceptions import WebSocketDisconnect
from litestar.handlers import WebsocketRouteHandler

from paycore import Gateway
from paycore.realtime import Disconnected, hub_for
from paycore.realtime.asgi import serve_asgi_socket

AnySocket = WebSocket[Any, Any, Any]
WS_PATH = "/ws"
# What a socket that is gone raises when written to: Litestar's own disconnect, the
# server's (uvicorn's ClientDisconnected is an OSError), or the ASGI send-after-close error.
_GONE = (WebSocketDisconnect, OSError, RuntimeError)


def websocket_handler(gateway: Gateway) -> WebsocketRouteHandler:
    hub = hub_for(gateway)  # the Hub exists before the first change, even with builtins blocked

    @websocket(WS_PATH, name="paycore-ws", include_in_schema=False)
    async def paycore_ws(socket: AnySocket) -> None:
        # socket.receive/send are Litestar's wrappers around the raw ASGI callables: they
        # pass messages through, keeping Litestar's idea of the connection's state.
        await serve_asgi_socket(
            socket.scope, socket.receive, socket.send, gateway, hub, LitestarSocket(socket)
        )

    return paycore_ws


class LitestarSocket:
    """Litestar's ``WebSocket`` in the shape ``serve_async`` expects."""

    def __init__(self, socket: AnySocket) -> None:
        self.socket = socket

    async def send(self, text: str) -> None:
        try:
            await self.socket.send_text(text)
        except _GONE:
            raise Disconnected from None

    async def receive(self) -> str | bytes:
        try:
            message = await self.socket.receive()
        except _GONE:
            raise Disconnected from None
        if message["type"] != "websocket.receive":
            raise Disconnected
        text = message.get("text")
        return text if text is not None else message.get("bytes") or b""

    async def close(self, code: int, reason: str) -> None:
        with contextlib.suppress(*_GONE):
            await self.socket.close(code, reason)
