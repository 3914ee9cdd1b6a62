"""GET {prefix}/ws for Flask: flask-sock accepts the socket, ``paycore.realtime`` runs it.

The route goes on paycore's own blueprint through a ``Sock`` that is never bound to the
app, so the host's routes and its own flask-sock setup (if any) are untouched. Flask-sock
reads ``SOCK_SERVER_OPTIONS`` from the host's config; ``max_message_size`` there bounds what
a client can make the server buffer before paycore sees a frame (ours are a few hundred
bytes), ``ping_interval`` keeps idle sockets alive through proxies.
"""

from __future__ import annotations

import contextlib
import socket
from typing import Any

from flask import Blueprint, current_app, request
from flask_sock import Sock
from simple_websocket import ConnectionClosed

from paycore.realtime import Disconnected, serve_sync_counted

from .view import EXTENSION_KEY

_sock = Sock()

#: Seconds a closing socket waits for the client's answering close frame.
CLOSE_WAIT = 2.0


def add_websocket_route(blueprint: Blueprint) -> None:
    @_sock.route("/ws", bp=blueprint, endpoint="ws")  # type: ignore[untyped-decorator]
    def paycore_ws(ws: Any) -> None:
        gateway = current_app.extensions[EXTENSION_KEY].gateway
        # flask-sock has switched to WebSocket already: a socket past a cap is closed 4429.
        serve_sync_counted(FlaskSocket(ws), gateway, request.remote_addr)


class FlaskSocket:
    """simple-websocket's ``Server`` in the shape ``serve_sync`` expects."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        # Pushes are small frames written one at a time: without TCP_NODELAY, Nagle's
        # algorithm holds each behind the client's delayed ACK of the last (~40 ms).
        with contextlib.suppress(AttributeError, OSError):
            ws.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def send(self, text: str) -> None:
        try:
            self.ws.send(text)
        except (ConnectionClosed, OSError):
            raise Disconnected from None

    def receive(self, timeout: float) -> str | bytes | None:
        try:
            data: str | bytes | None = self.ws.receive(timeout=timeout)
        except (ConnectionClosed, OSError):
            raise Disconnected from None
        return data

    def close(self, code: int, reason: str) -> None:
        with contextlib.suppress(ConnectionClosed, OSError):
            self.ws.close(reason=code, message=reason)
        # RFC 6455 has the server end the TCP connection once the client has answered the
        # close. simple-websocket's reader does so when that answer arrives, but a WSGI
        # server still holding the socket (werkzeug's) keeps it open, and the client waits
        # out its close timeout; shutting it down ends it for every holder.
        reader = getattr(self.ws, "thread", None)
        if reader is not None:
            reader.join(timeout=CLOSE_WAIT)
        with contextlib.suppress(AttributeError, OSError):
            self.ws.sock.shutdown(socket.SHUT_RDWR)
