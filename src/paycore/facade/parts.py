"""``GatewayParts``: what the Gateway's mixins use of the Gateway, typed as a Protocol.

A mixin's methods are the Gateway's own, written in another file; each is typed
``self: GatewayParts`` so that mypy checks its body against exactly these members, which the
``Gateway`` has: the request-wide storage wrapper, the clock, the read of one invoice with its
refunds, the announcement of changes as events and their notices after commit, and the
reader of a host's JSON fields. It extends ``ChainHost``, since a refund hands the gateway
to its chain's backend to build the transaction.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ..accounting.search import AttachTx
from ..chains.host import ChainHost
from ..webhooks.dispatcher import EventTx

if TYPE_CHECKING:
    from ..domain.changes import EventType
    from ..domain.records import Invoice, Json
    from ..storage.request_unit import RequestUnits

T = TypeVar("T")


class AnnounceTx(AttachTx, EventTx, Protocol):
    """What announcing invoice changes touches: the refunds and detected transfers attached
    to each, then its outbox event and webhook deliveries."""


class GatewayParts(ChainHost, Protocol):
    """The members of the ``Gateway`` its mixins use (module docstring)."""

    _storage: RequestUnits

    def now(self) -> int: ...

    def get_invoice(self, guid: str) -> Invoice: ...

    def _with_refunds(self, tx: AttachTx, invoices: list[Invoice]) -> list[Invoice]: ...

    def _expired_if_due(self, items: list[Invoice]) -> list[Invoice]: ...

    def _announce(
        self, tx: AnnounceTx, changes: list[Invoice], type: EventType | None = None
    ) -> tuple[list[Invoice], list[Json]]: ...

    def _notify(self, owner: str, payloads: list[Json]) -> None: ...

    def _read_fields(self, cls: type[T], fields: Mapping[str, Any]) -> T: ...
