"""Fan-out of pushes across processes through Redis pub/sub (docs/architecture.md §Events).

Only a Hub without an outbox feed (``memory://`` storage) listens here: with a SQL store
every web process reads the outbox itself (``outbox_feed``) and Redis is not needed; its
Hub still publishes, so web processes of an older release keep their pushes during a
rolling upgrade.

Every process that commits changes publishes each one to ``settings.redis_channel``; every
process that serves sockets also runs one listener thread subscribed to that channel, which
hands what the others published to its local Hub. A process's own messages come back to it
too and are skipped (each fan-out has a random origin id), because its Hub has already
delivered them locally without the round trip.

Pub/sub is fire-and-forget: what is published while a listener is reconnecting is not seen
by that listener's sockets. That is acceptable only because pushes are the fast path; the
outbox (poll, webhooks) holds every event, and a reconnecting client reads current state.
Likewise a Redis outage never fails or stalls an invoice change for long: publishing gives
up after a one-second socket timeout and then skips Redis for a second before trying again.

Message on the wire: ``v1 <origin> <ownerAddress> <Invoice JSON>``, space-separated, so the
event text is forwarded to sockets without being decoded and re-encoded.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import threading
import time
from collections.abc import Callable
from typing import Any

import redis

log = logging.getLogger("paycore.realtime")

_VERSION = "v1"
#: Seconds publishing skips Redis after a failure, so an outage costs one timeout a second
#: rather than one per change.
PUBLISH_PAUSE = 1.0
#: Longest wait between reconnection attempts of the listener.
MAX_BACKOFF = 5.0


class RedisFanout:
    """Publish to and listen on one Redis channel; see the module docstring."""

    def __init__(self, url: str, channel: str, *, ready_timeout: float = 3.0) -> None:
        self.url = url
        self.channel = channel
        self.ready_timeout = ready_timeout
        self.origin = secrets.token_hex(8)
        # Short timeouts on the publishing side: it runs on the thread that committed a
        # change, which must not wait long on a Redis that is down.
        self._publisher = redis.Redis.from_url(url, socket_connect_timeout=1.0, socket_timeout=1.0)
        self._paused_until = 0.0
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._deliver: Callable[[str, str], object] | None = None
        #: Changes not published because Redis was down or paused (for tests and metrics).
        self.dropped = 0

    # -- publishing -----------------------------------------------------------------------
    def publish(self, owner: str, event: str) -> None:
        now = time.monotonic()
        if now < self._paused_until:
            self.dropped += 1
            return
        try:
            self._publisher.publish(self.channel, f"{_VERSION} {self.origin} {owner} {event}")
        except redis.RedisError as exc:
            self._paused_until = now + PUBLISH_PAUSE
            self.dropped += 1
            log.warning(
                "redis publish to %s failed (%s): other workers miss pushes until it is back",
                self.channel,
                exc,
            )

    # -- listening ------------------------------------------------------------------------
    @property
    def listener_name(self) -> str:
        """The listener's CLIENT SETNAME, so an operator can tell paycore's connections
        (and which process's) apart in CLIENT LIST."""
        return f"paycore-ws-{self.origin}"

    @property
    def listening(self) -> bool:
        """Subscribed right now (false while connecting or reconnecting)."""
        return self._ready.is_set()

    def listen(self, deliver: Callable[[str, str], object]) -> None:
        """Start the listener thread if it is not running (or died with a fork), and wait
        for its subscription once, so the first socket's "registered" means "receiving"."""
        with self._lock:
            self._deliver = deliver
            started = self._thread is not None and self._thread.is_alive()
            if not started:
                self._stop.clear()
                self._ready.clear()
                self._thread = threading.Thread(
                    target=self._run, name=f"paycore-redis-{self.channel}", daemon=True
                )
                self._thread.start()
        if not started and not self._ready.wait(self.ready_timeout):
            log.warning(
                "redis %s not subscribed after %.1f s: pushes from other workers wait for it",
                self.channel,
                self.ready_timeout,
            )

    def _run(self) -> None:
        delay = 0.1
        while not self._stop.is_set():
            client: Any = None
            pubsub: Any = None
            try:
                client = redis.Redis.from_url(
                    self.url,
                    socket_connect_timeout=2.0,
                    health_check_interval=30,
                    client_name=self.listener_name,
                )
                pubsub = client.pubsub()
                pubsub.subscribe(self.channel)
                while not self._stop.is_set():
                    message = pubsub.get_message(timeout=0.5)
                    if message is None:
                        continue
                    if message["type"] == "subscribe":
                        self._ready.set()
                        delay = 0.1
                    elif message["type"] == "message":
                        self._forward(message["data"])
            except Exception as exc:  # redis errors and OSErrors alike: reconnect
                self._ready.clear()
                if not self._stop.is_set():
                    log.warning("redis listener on %s: %s; reconnecting", self.channel, exc)
                    self._stop.wait(delay)
                    delay = min(delay * 2, MAX_BACKOFF)
            finally:
                self._ready.clear()
                for resource in (pubsub, client):
                    if resource is not None:
                        with contextlib.suppress(Exception):
                            resource.close()

    def _forward(self, data: bytes | str) -> None:
        text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
        parts = text.split(" ", 3)
        if len(parts) != 4 or parts[0] != _VERSION:
            log.warning("ignored a message on %s that paycore did not publish", self.channel)
            return
        _, origin, owner, event = parts
        if origin == self.origin:
            return  # ours: the local Hub delivered it already
        if not (event.startswith("{") and event.endswith("}")):
            log.warning("ignored a malformed event on %s", self.channel)
            return
        deliver = self._deliver
        if deliver is not None:
            try:
                deliver(owner, event)
            except Exception:  # one bad delivery must not drop the subscription
                log.exception("delivering an event from %s failed", self.channel)

    def close(self) -> None:
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)
        with contextlib.suppress(Exception):
            self._publisher.close()
