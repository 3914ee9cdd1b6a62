"""One deadline per webhook attempt (``delivery.post``): ``timeout`` bounds the whole POST --
the TLS handshake, the status line, the headers and the body -- however the receiver spaces
its bytes, each of which alone would arrive well within it. Loopback receivers only; each
drips a bounded number of bytes."""

from __future__ import annotations

import select
import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from paycore.webhooks.delivery import post

Serve = Callable[[socket.socket], None]


@pytest.fixture
def serve() -> Iterator[Callable[[Serve], str]]:
    """Starts a one-connection-at-a-time TCP server on 127.0.0.1 running ``handler`` for each
    connection; returns the http URL. Stopped at the end."""
    servers: list[socket.socket] = []
    stop = threading.Event()

    def start(handler: Serve) -> str:
        server = socket.create_server(("127.0.0.1", 0))
        servers.append(server)

        def loop() -> None:
            while not stop.is_set():
                try:
                    conn, _ = server.accept()
                except OSError:
                    return
                with conn:
                    handler(conn)

        threading.Thread(target=loop, daemon=True).start()
        return f"http://127.0.0.1:{server.getsockname()[1]}/hook"

    yield start
    stop.set()
    for server in servers:
        server.close()


def _drip(conn: socket.socket, data: bytes, every: float) -> None:
    """Send ``data`` a byte every ``every`` s until done or the client hangs up."""
    for byte in data:
        readable, _, _ = select.select([conn], [], [], every)
        if readable and not conn.recv(65536):
            return
        try:
            conn.sendall(bytes([byte]))
        except OSError:
            return


def _timed_post(url: str, timeout: float) -> tuple[float, str | None, int | None]:
    started = time.monotonic()
    outcome = post(
        url, b'{"n":1}', {"content-type": "application/json"}, timeout=timeout, allow_private=True
    )
    return time.monotonic() - started, outcome.error, outcome.status_code


def test_a_status_line_dripped_byte_by_byte_ends_at_the_deadline(
    serve: Callable[[Serve], str],
) -> None:
    def handler(conn: socket.socket) -> None:
        conn.recv(65536)
        _drip(conn, b"HTTP/1.1 200 OK\r\n" * 4, every=0.3)  # 20 s if let run

    took, error, status = _timed_post(serve(handler), timeout=1.2)
    assert (error, status) == ("no answer within 1.2 s", None)
    assert 1.1 <= took < 1.8, took


def test_a_body_dripped_after_complete_headers_ends_at_the_deadline(
    serve: Callable[[Serve], str],
) -> None:
    """The 200 and its headers come at once; the body does not: still a failure, in time."""

    def handler(conn: socket.socket) -> None:
        conn.recv(65536)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 64\r\n\r\n")
        _drip(conn, b"x" * 64, every=0.3)

    took, error, status = _timed_post(serve(handler), timeout=1.2)
    assert (error, status) == ("no answer within 1.2 s", None)
    assert 1.1 <= took < 1.8, took


def test_a_silent_tls_handshake_ends_at_the_deadline(serve: Callable[[Serve], str]) -> None:
    """An https URL whose server accepts the connection and never answers the ClientHello."""

    def handler(conn: socket.socket) -> None:
        select.select([], [], [], 3.0)

    url = serve(handler).replace("http://", "https://")
    took, error, status = _timed_post(url, timeout=1.0)
    assert (error, status) == ("no answer within 1 s", None)
    assert 0.9 <= took < 1.6, took


def test_a_prompt_answer_is_unaffected(serve: Callable[[Serve], str]) -> None:
    def handler(conn: socket.socket) -> None:
        conn.recv(65536)
        conn.sendall(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n")

    took, error, status = _timed_post(serve(handler), timeout=1.0)
    assert (error, status) == (None, 204) and took < 0.9
