"""One webhook attempt: Standard Webhooks signing, the HTTP POST, and what a failure costs.

Signing follows the Standard Webhooks convention (docs/interface.md §Webhook deliveries), so
receivers can use any of its libraries: ``webhook-id`` (stable for the event, the same on
every retry, for deduplication), ``webhook-timestamp`` (unix seconds of this attempt, so a receiver
can refuse replays of old requests) and ``webhook-signature: v1,<base64 HMAC-SHA256>`` over
``"{id}.{timestamp}.{body}"`` keyed with the base64-decoded part of the ``whsec_`` secret.

One attempt has one deadline: ``webhook_timeout`` bounds the whole of it -- resolving,
connecting, the TLS handshake, sending, and reading the status line, the headers and the
body -- not each read. A receiver that answers ``200 OK`` and then drips a byte every
second would otherwise hold a delivery thread for as long as it likes, each read well
inside a per-read timeout. Every socket operation gets what is left of the budget as its
timeout (``_Budget``), and once nothing is left the next one fails at once.

The POST uses the standard library's ``http.client`` rather than a client library, because
the connection must go to the address ``netguard`` approved (connect by IP, with the host
name kept for the ``Host`` header and for TLS), which is one small override here. Redirects
are not followed: a 3xx is a failure, or a receiver could bounce the POST to an inside
address. Nothing here logs or returns the secret.

A failure is transient (connection refused, timeout, an answer other than 2xx: retried on
the schedule) or permanent (a malformed URL, or a host the address guard refuses: retrying
the same URL cannot help, so the delivery fails at once, the reason in its log).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import http.client
import io
import random
import socket
import ssl
import time
from collections.abc import Callable
from urllib.parse import urlsplit

import attrs

from ..config import Settings
from .netguard import IPAddress, RefusedTarget, Unresolvable, allowed_addresses, url_host_port
from .records import ClaimedDelivery, DeliveryStatus, Settlement

SECRET_PREFIX = "whsec_"
#: Bytes of a receiver's answer that are read (and thrown away) before closing.
MAX_ANSWER = 64 * 1024
USER_AGENT = "paycore-webhooks"


def secret_key(secret: str) -> bytes:
    """The HMAC key a ``whsec_`` secret stands for."""
    encoded = secret.removeprefix(SECRET_PREFIX)
    return base64.b64decode(encoded + "=" * (-len(encoded) % 4))


def sign(secret: str, webhook_id: str, timestamp: int, body: str) -> str:
    """The ``webhook-signature`` value for one attempt."""
    signed = f"{webhook_id}.{timestamp}.{body}".encode()
    digest = hmac.new(secret_key(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode("ascii")


def signed_headers(secret: str, webhook_id: str, timestamp: int, body: str) -> dict[str, str]:
    return {
        "content-type": "application/json",
        "user-agent": USER_AGENT,
        "webhook-id": webhook_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": sign(secret, webhook_id, timestamp, body),
    }


@attrs.frozen
class Outcome:
    """What one POST came to: an HTTP status, or the error that prevented one.
    ``permanent``: no retry of the same URL can succeed (see the module docstring)."""

    status_code: int | None
    error: str | None
    latency_ms: int
    permanent: bool = False

    @property
    def ok(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


class _Budget:
    """What is left of one attempt's time: each socket operation gets the rest as its
    timeout, and none starts once it is spent."""

    def __init__(self, seconds: float) -> None:
        self.deadline = time.monotonic() + seconds

    def left(self) -> float:
        """Seconds left; ``TimeoutError`` when none are."""
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("the attempt's deadline has passed")
        return remaining


class _BudgetedReader(io.RawIOBase):
    """The socket's raw reader (``socket.makefile``), every read timed by the budget."""

    def __init__(self, sock: socket.socket, budget: _Budget) -> None:
        super().__init__()
        self._sock = sock
        self._raw = sock.makefile("rb", buffering=0)
        self._budget = budget

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int | None:  # type: ignore[override]
        self._sock.settimeout(self._budget.left())
        return self._raw.readinto(buffer)

    def close(self) -> None:
        self._raw.close()  # the socket closes once the connection has let go of it too
        super().close()


class _BudgetedSocket:
    """The connection's socket as ``http.client`` uses it -- ``sendall``, ``makefile`` and
    ``close`` -- with every operation's timeout cut to what is left of the budget."""

    def __init__(self, sock: socket.socket, budget: _Budget) -> None:
        self._sock = sock
        self._budget = budget

    def sendall(self, data: bytes) -> None:
        self._sock.settimeout(self._budget.left())  # bounds the whole sendall (Python >= 3.5)
        self._sock.sendall(data)

    def makefile(self, mode: str) -> io.BufferedReader:
        assert mode == "rb"  # http.client reads its answer this way only
        return io.BufferedReader(_BudgetedReader(self._sock, self._budget))

    def close(self) -> None:
        self._sock.close()


class _PinnedHTTP(http.client.HTTPConnection):
    """Talks to the checked ``addresses`` (the first that accepts, in resolver order, as a
    dual-stack client would) while naming ``host`` in the request, as if DNS had answered;
    every step within ``budget``."""

    def __init__(self, host: str, port: int, addresses: list[IPAddress], budget: _Budget) -> None:
        super().__init__(host, port, timeout=budget.left())
        self.addresses = addresses
        self.budget = budget

    def _open(self) -> socket.socket:
        failure: OSError | None = None
        for address in self.addresses:
            try:
                sock = socket.create_connection((str(address), self.port), self.budget.left())
            except OSError as exc:
                failure = exc
                continue
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return sock
        assert failure is not None  # netguard never returns an empty list
        raise failure

    def _secure(self, sock: socket.socket) -> socket.socket:
        return sock

    def connect(self) -> None:
        self.sock = _BudgetedSocket(self._secure(self._open()), self.budget)


class _PinnedHTTPS(_PinnedHTTP):
    """The same over TLS: the certificate is checked against ``host``, not the address."""

    default_port = 443
    tls = ssl.create_default_context()

    def _secure(self, sock: socket.socket) -> socket.socket:
        sock.settimeout(self.budget.left())  # the handshake as a whole, not per read
        return self.tls.wrap_socket(sock, server_hostname=self.host)


def post(
    url: str, body: bytes, headers: dict[str, str], *, timeout: float, allow_private: bool
) -> Outcome:
    """POST ``body`` to ``url``, checking the target's addresses first (``netguard``).

    ``timeout`` bounds the whole attempt, from resolving the host to the last byte of the
    answer that is read.
    """
    started = time.monotonic()
    budget = _Budget(timeout)

    def outcome(status: int | None, error: str | None, *, permanent: bool = False) -> Outcome:
        return Outcome(status, error, round((time.monotonic() - started) * 1000), permanent)

    try:
        host, port = url_host_port(url)
        addresses = allowed_addresses(host, port, allow_private=allow_private)
    except RefusedTarget as exc:
        return outcome(None, f"refused: {exc}; not retried", permanent=True)
    except Unresolvable as exc:
        return outcome(None, str(exc))
    https = urlsplit(url).scheme == "https"
    try:
        connection = (_PinnedHTTPS if https else _PinnedHTTP)(host, port, addresses, budget)
    except TimeoutError:  # resolving took the whole budget
        return outcome(None, f"no answer within {timeout:g} s")
    try:
        parts = urlsplit(url)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        connection.request("POST", target, body=body, headers=headers)
        answer = connection.getresponse()
        answer.read(MAX_ANSWER)
        if 200 <= answer.status < 300:
            return outcome(answer.status, None)
        return outcome(answer.status, f"answered {answer.status} {answer.reason}".strip())
    except TimeoutError:
        return outcome(None, f"no answer within {timeout:g} s")
    except ConnectionRefusedError:
        return outcome(None, f"connection refused by {host}:{port}")
    except (OSError, http.client.HTTPException) as exc:
        return outcome(None, f"{type(exc).__name__}: {exc}"[:500])
    finally:
        connection.close()


def retry_delay(
    attempts: int, settings: Settings, rng: Callable[[], float] = random.random
) -> float:
    """Seconds to wait after the ``attempts``-th failed attempt, with jitter.

    ``webhook_retry_schedule`` gives the first delays (docs/interface.md: 5 s, 30 s, 2 min,
    10 min, 30 min, 1 h), then ``webhook_retry_every`` (2 h) repeats. Jitter scales each delay by a
    factor in [1 - jitter, 1 + jitter] so that the retries of a backlog spread out.
    """
    schedule = settings.webhook_retry_schedule
    base = (
        schedule[attempts - 1] if 1 <= attempts <= len(schedule) else settings.webhook_retry_every
    )
    jitter = settings.webhook_retry_jitter
    return base * (1 - jitter + 2 * jitter * rng())


def settle(
    claimed: ClaimedDelivery,
    outcome: Outcome,
    now_ms: int,
    settings: Settings,
    rng: Callable[[], float] = random.random,
) -> Settlement:
    """Delivered on a 2xx; failed at once on a permanent failure; otherwise retried, unless
    the retry would fall past the horizon (24 h after the delivery was queued or
    redelivered), in which case it has failed."""
    if outcome.ok:
        return Settlement(DeliveryStatus.DELIVERED)
    if outcome.permanent:
        return Settlement(DeliveryStatus.FAILED)
    next_at = now_ms + round(retry_delay(claimed.attempts, settings, rng) * 1000)
    if next_at > claimed.retry_from + round(settings.webhook_retry_horizon * 1000):
        return Settlement(DeliveryStatus.FAILED)
    return Settlement(DeliveryStatus.PENDING, next_at)
