"""README's webhook receiver, taken from README.md as written, accepts a delivery paycore
really signed and POSTed, and refuses it once tampered with."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import attrs
import pytest

from paycore import Gateway, Settings
from paycore.storage import Storage
from paycore.testing.chain import FakeChain
from paycore.webhooks.dispatcher import Dispatcher

README = Path(__file__).resolve().parents[2] / "README.md"
OWNER = "0x" + "ab" * 20


def readme_receiver() -> Callable[[str, dict[str, str], bytes], dict[str, Any]]:
    """The ``receive`` function of README's webhook block: the block's code up to its own
    self-check, which signs with the library instead of coming from paycore."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    found = [b for b in blocks if "def receive(" in b and "standardwebhooks" in b]
    assert len(found) == 1, "README.md lost its webhook receiver example"
    code = found[0].split("# What a delivery looks like")[0]
    namespace: dict[str, Any] = {"__name__": "readme"}
    exec(compile(code, str(README), "exec"), namespace)  # noqa: S102 - our own README
    receive: Callable[[str, dict[str, str], bytes], dict[str, Any]] = namespace["receive"]
    return receive


class Capture:
    """An HTTP endpoint on 127.0.0.1 that keeps each request's headers and raw body."""

    def __init__(self) -> None:
        self.requests: list[tuple[dict[str, str], bytes]] = []
        capture = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                capture.requests.append((dict(self.headers.items()), body))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *_args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def capture() -> Iterator[Capture]:
    endpoint = Capture()
    yield endpoint
    endpoint.close()


def test_readme_receiver_verifies_a_real_delivery(
    paycore_settings: Settings, paycore_storage: Storage, capture: Capture
) -> None:
    settings = attrs.evolve(paycore_settings, webhook_allow_private=True)
    gateway = Gateway(settings, storage=paycore_storage, entry_points=False)
    try:
        secret = gateway.webhooks.set(OWNER, capture.url).secret
        chain = FakeChain(gateway)
        invoice = gateway.create_invoice(OWNER, chain.invoice_fields("5"))
        chain.pay_exact(invoice)
        assert Dispatcher(paycore_storage, settings).run_once() == 1
    finally:
        gateway.close()

    receive = readme_receiver()
    [(headers, body)] = capture.requests
    received = receive(secret, headers, body)
    assert (received["guid"], received["type"]) == (invoice.guid, "invoice.paid")

    with pytest.raises(Exception, match="(?i)signature"):
        receive(secret, headers, body.replace(b'"paid"', b'"expired"'))
    with pytest.raises(Exception, match="(?i)signature"):
        receive("whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", headers, body)
