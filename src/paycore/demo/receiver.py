"""The merchant's side of webhooks: a local HTTP endpoint that checks every delivery's
Standard Webhooks signature before believing it.

The check is written here from the convention (HMAC-SHA256 over ``{id}.{timestamp}.{body}``
keyed with the base64 part of the ``whsec_`` secret, compared in constant time, timestamp
within five minutes) rather than borrowed from paycore's signer: a receiver that used the
sender's own code would prove nothing about the signatures. A delivery that fails the
check is answered 401 -- paycore will retry it -- and shown as rejected.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import queue
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PATH = "/hooks/paycore"
TOLERANCE = 300  # seconds a delivery's timestamp may be from now
MAX_BODY = 1 << 20


@dataclass(frozen=True)
class Delivery:
    """One POST that reached the receiver, and what the signature check made of it."""

    webhook_id: str
    verified: bool
    reason: str
    payload: dict[str, Any] | None


def verify(secret: str, headers: dict[str, str], body: bytes, now: float) -> str:
    """Why the delivery must be refused, or ``""`` when its signature is good."""
    webhook_id = headers.get("webhook-id", "")
    stamp = headers.get("webhook-timestamp", "")
    offered = headers.get("webhook-signature", "")
    if not (webhook_id and stamp and offered):
        return "missing webhook-id, webhook-timestamp or webhook-signature"
    if not stamp.isdigit() or abs(now - int(stamp)) > TOLERANCE:
        return f"timestamp {stamp!r} is not within {TOLERANCE} s of now"
    try:
        encoded = secret.removeprefix("whsec_")
        key = base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True)
    except (binascii.Error, ValueError):
        return "the secret is not base64"
    signed = webhook_id.encode() + b"." + stamp.encode() + b"." + body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    for candidate in offered.split():  # several during a secret rotation
        version, _, value = candidate.partition(",")
        if version == "v1" and hmac.compare_digest(value, expected):
            return ""
    return "no v1 signature matches the secret"


class WebhookReceiver:
    """A threaded HTTP server on a free loopback port; deliveries land in a queue."""

    def __init__(self) -> None:
        self.secret = ""  # known once /webhook/set has answered
        self.deliveries: queue.Queue[Delivery] = queue.Queue()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the stdlib's naming
                length = int(self.headers.get("content-length") or 0)
                if self.path != PATH or length > MAX_BODY:
                    self.send_response(404)
                    self.end_headers()
                    return
                body = self.rfile.read(length)
                headers = {k.lower(): v for k, v in self.headers.items()}
                reason = verify(receiver.secret, headers, body, time.time())
                try:
                    payload = json.loads(body) if not reason else None
                except ValueError:
                    reason, payload = "the body is not JSON", None
                self.send_response(204 if not reason else 401)
                self.end_headers()
                delivery = Delivery(headers.get("webhook-id", "?"), not reason, reason, payload)
                receiver.deliveries.put(delivery)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass  # the demo prints deliveries itself, once, in order

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}{PATH}"
        self._thread = threading.Thread(
            target=self.server.serve_forever,
            kwargs={"poll_interval": 0.1},
            name="demo-webhook-receiver",
            daemon=True,
        )

    def start(self) -> WebhookReceiver:
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread.is_alive():
            self.server.shutdown()
            self._thread.join(timeout=5)
        self.server.server_close()

    def take(self) -> list[Delivery]:
        """The deliveries that arrived since the last call, oldest first."""
        taken: list[Delivery] = []
        while True:
            try:
                taken.append(self.deliveries.get_nowait())
            except queue.Empty:
                return taken
