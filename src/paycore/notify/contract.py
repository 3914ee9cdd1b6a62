"""The notifier contract: told of every invoice change after it has been committed.

Notifiers are for fast paths (WebSocket fan-out, e-mail); they may fail without loss because
the durable outbox, written in the same transaction as the change, remains the source of truth.

The whole lifecycle is declared here, so the Gateway calls it without probing: ``bind`` once
when the notifier joins a gateway, ``invoice_changed`` and ``transaction_recorded`` after
each commit, ``close`` when the gateway closes. ``BaseNotifier`` gives every method a no-op
body; a notifier subclasses it and overrides what it needs.

``bind`` is handed the gateway, typed as ``NotifierHost``: the parts of it a notifier may
use (the settings, the event queues, the owners' management records), so notifiers depend
on those services and not on the facade (docs/architecture.md §Layers).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from ..domain.records import Json

if TYPE_CHECKING:  # the services below import nothing of this module's
    from ..config import Settings
    from ..events.queues import EventQueues
    from ..management.service import Management
    from .receipts import Receipts


class NotifierHost(Protocol):
    """What a notifier is bound to: the parts of the gateway it may use. The ``Gateway``
    satisfies it."""

    @property
    def settings(self) -> Settings: ...

    @property
    def events(self) -> EventQueues:
        """The outbox's readers: a notifier that fans out from the outbox reads it here."""
        ...

    @property
    def management(self) -> Management:
        """The owners' records: e-mail settings and the notices claimed once."""
        ...

    @property
    def receipts(self) -> Receipts:
        """The buyer's receipts an invoice event calls for, each claimed once."""
        ...


class Notifier(Protocol):
    name: str

    def bind(self, gateway: NotifierHost) -> None:
        """Called once by the Gateway the notifier joins (``Gateway.add_notifier``, or
        collected from the ``paycore_notifiers`` hook), before any change is told."""

    def invoice_changed(self, owner: str, payload: Json) -> None:
        """``payload`` is the full Invoice wire record after the change."""

    def transaction_recorded(self, owner: str, item: Json) -> None:
        """A transaction newly recorded outside an invoice change (a withdrawal the watcher
        saw on chain); ``item`` is the GET /transactions wire form."""

    def close(self) -> None:
        """Finish what is held (queued e-mail, a listener); the gateway is closing."""


class BaseNotifier:
    """Every ``Notifier`` method as a no-op: subclass it and override what you need."""

    name = "notifier"

    def bind(self, gateway: NotifierHost) -> None:
        return None

    def invoice_changed(self, owner: str, payload: Json) -> None:
        return None

    def transaction_recorded(self, owner: str, item: Json) -> None:
        return None

    def close(self) -> None:
        return None
