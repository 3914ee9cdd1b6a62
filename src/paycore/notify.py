"""The notifier contract: told of every invoice change after it has been committed.

Notifiers are for fast paths (WebSocket fan-out, e-mail); they may fail without loss because
the durable outbox, written in the same transaction as the change, remains the source of truth.
"""

from __future__ import annotations

from typing import Protocol

from .model import Json


class Notifier(Protocol):
    name: str

    def invoice_changed(self, owner: str, payload: Json) -> None:
        """``payload`` is the full Invoice wire record after the change."""
