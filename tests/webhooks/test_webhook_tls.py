"""HTTPS delivery to a pinned address: the certificate is still checked against the URL's
host name, and the host name still goes out as SNI and in the ``Host`` header.

A real TLS server on 127.0.0.1 with a throwaway certificate for ``localhost``, made by the
``openssl`` command line (part of the base system on the project's machines).
"""

from __future__ import annotations

import shutil
import ssl
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from paycore.webhooks import delivery
from paycore.webhooks.config import new_secret
from paycore.webhooks.delivery import post, signed_headers


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    openssl = shutil.which("openssl")
    assert openssl, "the openssl command line is needed to make a test certificate"
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"]
        + ["-keyout", str(key), "-out", str(cert), "-subj", "/CN=localhost"]
        + ["-addext", "subjectAltName=DNS:localhost"],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return cert, key


@pytest.fixture
def tls_server(certificate: tuple[Path, Path]) -> Iterator[tuple[int, list[dict[str, str]]]]:
    """(port, request headers seen, including the SNI name under ``x-sni``)."""
    seen: list[dict[str, str]] = []
    sni: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            self.rfile.read(int(self.headers.get("content-length", "0")))
            seen.append({**{k.lower(): v for k, v in self.headers.items()}, "x-sni": sni[-1]})
            self.send_response(204)
            self.end_headers()

        def log_message(self, *_args: object) -> None:
            pass

    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(*map(str, certificate))

    def remember_sni(_sock: object, name: str | None, _context: object) -> None:
        sni.append(name or "")

    context.sni_callback = remember_sni
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    yield server.server_address[1], seen
    server.shutdown()
    server.server_close()
    thread.join()


def _post(port: int) -> delivery.Outcome:
    body = '{"guid":"g"}'
    headers = signed_headers(new_secret(), "msg_tls", 1700000000, body)
    url = f"https://localhost:{port}/hooks"
    return post(url, body.encode(), headers, timeout=5, allow_private=True)


def test_an_untrusted_certificate_fails_the_attempt(
    tls_server: tuple[int, list[dict[str, str]]],
) -> None:
    port, seen = tls_server
    outcome = _post(port)
    assert outcome.status_code is None and outcome.error is not None
    assert "CERTIFICATE_VERIFY_FAILED" in outcome.error
    assert seen == []


def test_a_trusted_certificate_is_checked_against_the_host_name(
    tls_server: tuple[int, list[dict[str, str]]],
    certificate: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    port, seen = tls_server
    trusting = ssl.create_default_context(cafile=str(certificate[0]))
    monkeypatch.setattr(delivery._PinnedHTTPS, "tls", trusting)
    outcome = _post(port)
    assert outcome.ok, outcome.error
    [headers] = seen
    assert headers["x-sni"] == "localhost" and headers["host"] == f"localhost:{port}"
    assert headers["webhook-id"] == "msg_tls"
