"""Notifiers: the fast paths told of every committed change, which may fail without loss
because the outbox and the webhooks are the durable path. ``contract`` holds the
``Notifier`` Protocol and ``BaseNotifier``, its no-op base; ``email`` is the built-in
e-mail notifier. The WebSocket hub, the other built-in notifier, lives in
``paycore.realtime`` with the GET /ws protocol it serves.

The contract's names are re-exported here so that ``from paycore.notify import Notifier``
keeps working.
"""

from __future__ import annotations

from .contract import BaseNotifier, Notifier

__all__ = ["BaseNotifier", "Notifier"]
