"""Per-client and per-owner caps on GET /ws sockets, one set of counters per process.

A socket costs the server a file descriptor, a coroutine (or a thread under a blocking
server) and a queue; before it registers it is also unauthenticated. So one client address
may hold at most ``ws_max_per_ip`` open sockets, of which at most
``ws_max_unregistered_per_ip`` have not yet sent a register frame that verified, and one
owner at most ``ws_max_per_owner`` registered sockets. The address caps are decided when
the upgrade arrives (an ASGI server answers ``429`` with ``Retry-After`` instead of
switching protocols; a server that has already switched closes with 4429), the owner cap
when the register frame verifies (close 4429, the error frame naming the limit).

The counters are the process's (the Hub's): with ``--workers N`` a client can hold up to N
times the caps, each worker holding its share. Counting is a dict update under one lock,
never held while calling out.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    from ..config import Settings


@attrs.frozen
class Refusal:
    """Why a socket was refused, and when the client may try again."""

    #: What was exceeded, e.g. ``256 sockets open from this address (ws_max_per_ip)``.
    detail: str
    retry_after: int

    @property
    def message(self) -> str:
        """The close frame's message (a refused register frame, or a refused socket that
        a server had already switched to WebSocket)."""
        return f"too many sockets: {self.detail}"

    @property
    def http_text(self) -> str:
        """The ``429`` body of a refused upgrade, in the shape of every other 429."""
        return f"too many requests: {self.detail}"


class Admission:
    """One admitted socket's place in the counters; :meth:`release` it exactly once."""

    def __init__(self, limits: SocketLimits, ip: str) -> None:
        self._limits = limits
        self.ip = ip
        self.owner: str | None = None
        self._released = False

    def register(self, owner: str) -> Refusal | None:
        """The socket's register frame verified for ``owner``: count it as that owner's,
        or refuse it when the owner holds ``ws_max_per_owner`` sockets already."""
        return self._limits._register(self, owner.lower())

    def release(self) -> None:
        if not self._released:
            self._released = True
            self._limits._release(self)


class SocketLimits:
    """The counters and caps; thread-safe (blocking drivers count from many threads)."""

    def __init__(
        self,
        *,
        per_ip: int = 256,
        unregistered_per_ip: int = 32,
        per_owner: int = 64,
        retry_after: int = 30,
    ) -> None:
        self.per_ip = per_ip
        self.unregistered_per_ip = unregistered_per_ip
        self.per_owner = per_owner
        self.retry_after = max(1, retry_after)
        self._lock = threading.Lock()
        self._open: Counter[str] = Counter()
        self._unregistered: Counter[str] = Counter()
        self._owners: Counter[str] = Counter()

    @classmethod
    def from_settings(cls, settings: Settings) -> SocketLimits:
        return cls(
            per_ip=settings.ws_max_per_ip,
            unregistered_per_ip=settings.ws_max_unregistered_per_ip,
            per_owner=settings.ws_max_per_owner,
            # An unregistered socket is gone within ws_register_timeout at the latest.
            retry_after=math.ceil(settings.ws_register_timeout),
        )

    def admit(self, ip: str | None) -> Admission | Refusal:
        """A new socket from ``ip`` (None: the server does not say; counted as one)."""
        key = ip or "unknown"
        with self._lock:
            if self._open[key] >= self.per_ip:
                return Refusal(
                    f"{self.per_ip} sockets open from this address (ws_max_per_ip)",
                    self.retry_after,
                )
            if self._unregistered[key] >= self.unregistered_per_ip:
                return Refusal(
                    f"{self.unregistered_per_ip} sockets from this address not registered"
                    " yet (ws_max_unregistered_per_ip)",
                    self.retry_after,
                )
            self._open[key] += 1
            self._unregistered[key] += 1
        return Admission(self, key)

    def _register(self, admission: Admission, owner: str) -> Refusal | None:
        with self._lock:
            if admission.owner is not None or admission._released:
                return None
            if self._owners[owner] >= self.per_owner:
                return Refusal(
                    f"{self.per_owner} sockets registered for this owner (ws_max_per_owner)",
                    self.retry_after,
                )
            self._owners[owner] += 1
            admission.owner = owner
            _decrement(self._unregistered, admission.ip)
        return None

    def _release(self, admission: Admission) -> None:
        with self._lock:
            _decrement(self._open, admission.ip)
            if admission.owner is None:
                _decrement(self._unregistered, admission.ip)
            else:
                _decrement(self._owners, admission.owner)

    def counts(self, ip: str | None = None, owner: str | None = None) -> tuple[int, int, int]:
        """(open from ``ip``, unregistered from ``ip``, registered for ``owner``): for
        tests and metrics."""
        key = ip or "unknown"
        with self._lock:
            return (
                self._open[key],
                self._unregistered[key],
                self._owners[owner.lower()] if owner else 0,
            )


def _decrement(counter: Counter[str], key: str) -> None:
    counter[key] -= 1
    if counter[key] <= 0:
        del counter[key]
