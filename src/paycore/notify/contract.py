"""The notifier contract: told of every invoice change after it has been committed.

Notifiers are for fast paths (WebSocket fan-out, e-mail); they may fail without loss because
the durable outbox, written in the same transaction as the change, remains the source of truth.
"""

from __future__ import annotations

from typing import Protocol

from ..domain.records import Json


class Notifier(Protocol):
    name: str

    def invoice_changed(self, owner: str, payload: Json) -> None:
        """``payload`` is the full Invoice wire record after the change."""


# Two optional methods, looked up with getattr so the protocol above stays the minimum:
#
# - ``bind(gateway)``: called once by the Gateway that collected the notifier, for a
#   notifier that needs the gateway's storage or settings (the e-mail notifier does).
# - ``transaction_recorded(owner, item)``: told of each transaction newly recorded outside
#   an invoice change -- a withdrawal the watcher saw on chain; ``item`` is the
#   GET /transactions wire form.
