"""Real-time pushes: GET /ws (docs/interface.md §WebSocket frames, docs/architecture.md §Events).

- :mod:`.frames`: the frame protocol as a pure state machine (``Conversation``).
- :mod:`.hub`: the per-process ``Hub`` (subscriptions by owner, bounded queues), which is
  also the notifier the gateway calls after each committed change.
- :mod:`.outbox_feed`: ``OutboxFeed``, the one thread per web process that reads the
  committed outbox (SQL stores), so every process's changes reach this process's sockets.
- :mod:`.redis_fanout`: ``RedisFanout``, carrying changes between processes when
  ``settings.redis_url`` is set and the store has no outbox signal (``memory://``); with a
  SQL store changes are only published there, for older web processes.
- :mod:`.connection`: ``serve_sync`` / ``serve_async``, one socket from challenge to close,
  behind the two-method socket shapes the adapters wrap their framework's socket in.
- :mod:`.limits`: ``SocketLimits``, the per-address and per-owner socket caps (the Hub's).
- :mod:`.asgi`: GET /ws at the level of ASGI messages: a socket past a cap is answered
  429 with ``Retry-After`` before it is switched.

The built-in plugin registers a Hub for every gateway; ``hub_for(gateway)`` finds it.
"""

from __future__ import annotations

from .connection import (
    AsyncSocket,
    Disconnected,
    SocketSession,
    SyncSocket,
    serve_async,
    serve_sync,
    serve_sync_counted,
)
from .frames import (
    CLOSE_AUTH,
    CLOSE_BAD_FRAME,
    CLOSE_TOO_SLOW,
    Close,
    Conversation,
    Register,
    State,
)
from .hub import Fanout, Hub, Subscription, hub_for

__all__ = [
    "CLOSE_AUTH",
    "CLOSE_BAD_FRAME",
    "CLOSE_TOO_SLOW",
    "AsyncSocket",
    "Close",
    "Conversation",
    "Disconnected",
    "Fanout",
    "Hub",
    "Register",
    "SocketSession",
    "State",
    "Subscription",
    "SyncSocket",
    "hub_for",
    "serve_async",
    "serve_sync",
    "serve_sync_counted",
]
