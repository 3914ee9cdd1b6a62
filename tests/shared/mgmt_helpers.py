"""Salt-signed bodies as a JavaScript client makes them, and a real SMTP server on loopback.

Signing uses eth-account and ``json.dumps`` (equal to ``JSON.stringify`` for the ASCII strings
and integers these bodies hold), never paycore's own code.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from email import message_from_bytes, policy
from email.message import EmailMessage
from pathlib import Path
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword
from eth_account import Account
from eth_account.messages import encode_defunct
from eth_account.signers.local import LocalAccount


def account(label: str) -> LocalAccount:
    return Account.from_key(hashlib.sha256(f"management:{label}".encode()).digest())


def salted(signer: LocalAccount, fields: dict[str, Any], salt: Any) -> dict[str, Any]:
    """``{salt, ...fields}`` signed over its compact JSON text, ``signature`` added last."""
    body = {"salt": salt, **fields}
    text = json.dumps(body, separators=(",", ":"))
    signature = signer.sign_message(encode_defunct(text=text)).signature
    body["signature"] = "0x" + bytes(signature).hex()
    return body


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Inbox:
    """An aiosmtpd handler that keeps every message it is given."""

    def __init__(self) -> None:
        self.messages: list[tuple[list[str], EmailMessage]] = []
        self.logins: list[tuple[str, str]] = []
        self.arrived = threading.Condition()

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802
        with self.arrived:
            parsed = message_from_bytes(envelope.content, policy=policy.default)
            assert isinstance(parsed, EmailMessage)
            self.messages.append((list(envelope.rcpt_tos), parsed))
            self.arrived.notify_all()
        return "250 OK"

    def wait_for(self, count: int, timeout: float = 10.0) -> list[tuple[list[str], EmailMessage]]:
        with self.arrived:
            self.arrived.wait_for(lambda: len(self.messages) >= count, timeout)
            return list(self.messages)


@contextmanager
def smtp_server(**kwargs: Any) -> Iterator[tuple[Inbox, int]]:
    """A real SMTP server on 127.0.0.1 for the ``with`` block: (its inbox, its port)."""
    inbox = Inbox()
    port = free_port()
    controller = Controller(inbox, hostname="127.0.0.1", port=port, **kwargs)
    controller.start()
    try:
        yield inbox, port
    finally:
        controller.stop()


def self_signed(folder: Path) -> tuple[Path, Path] | None:
    """A certificate for localhost/127.0.0.1 and its key, made by the openssl command."""
    openssl = shutil.which("openssl")
    if openssl is None:
        return None
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


def tls_server_kwargs(cert: Path, key: Path, inbox_logins: list[tuple[str, str]]) -> Any:
    """aiosmtpd options: STARTTLS required, AUTH LOGIN/PLAIN only after it, any login kept."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)

    def authenticator(
        server: Any, session: Any, envelope: Any, mechanism: str, data: Any
    ) -> AuthResult:
        if isinstance(data, LoginPassword):
            inbox_logins.append((data.login.decode(), data.password.decode()))
            return AuthResult(success=data.password == b"s3cret-pw", handled=False)
        return AuthResult(success=False, handled=False)

    return {
        "tls_context": context,
        "require_starttls": True,
        "authenticator": authenticator,
        "auth_require_tls": True,
    }
