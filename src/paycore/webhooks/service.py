"""``Gateway.webhooks``: an owner's webhook configuration, its delivery log and redelivery,
and the dispatcher the worker runs, all over the gateway's storage held here privately.

The HTTP handlers, the worker and a merchant's dashboard code call this object; none of them
touches storage. ``config``, ``log`` and ``dispatcher`` keep the rules of each part.
"""

from __future__ import annotations

from collections.abc import Callable

from ..config import Settings
from ..domain.records import WebhookConfig
from ..errors import InvalidInput
from ..storage import Storage
from .config import clear_webhook, get_webhook, set_webhook, validate_url
from .dispatcher import Dispatcher
from .endpoints import Endpoints
from .fairness import RedeliveryPace
from .log import DELIVERY_PAGE_MAX, DeliveryNotFound, parse_status
from .records import Delivery, DeliveryStatus


class Webhooks:
    """``Gateway.webhooks``: an owner's webhook URL and secret, the delivery log, one or
    every failed delivery sent again with its webhook-id, and the worker's dispatcher."""

    def __init__(self, storage: Storage, settings: Settings, clock: Callable[[], float]) -> None:
        self._storage = storage
        self._settings = settings
        self._clock = clock
        self._pace = RedeliveryPace.from_settings(settings, clock)
        #: The owner's endpoints besides the ``/webhook/set`` URL (``endpoints``).
        self.endpoints = Endpoints(storage, settings, clock)

    def set(self, owner: str, url: object) -> WebhookConfig:
        """Point ``owner``'s webhook at ``url`` (validated and checked against private
        targets unless ``webhook_allow_private``); the secret survives a URL change."""
        allow_private = self._settings.webhook_allow_private
        return set_webhook(self._storage, owner, validate_url(url), allow_private=allow_private)

    def get(self, owner: str) -> WebhookConfig:
        """``owner``'s configuration; empty URL and secret when none is set."""
        return get_webhook(self._storage, owner)

    def clear(self, owner: str) -> bool:
        """Drop ``owner``'s URL and secret; False if there was none."""
        return clear_webhook(self._storage, owner)

    def deliveries(
        self,
        owner: str,
        *,
        status: DeliveryStatus | str | None = None,
        guid: str | None = None,
        offset: int | None = None,
        limit: int | None = None,
        endpoint: str | None = None,
    ) -> tuple[list[Delivery], int, int, int]:
        """(items newest first, total, offset, limit) of ``owner``'s deliveries, each with
        its attempts; ``status``, ``guid`` (one invoice) and ``endpoint`` (one endpoint's
        id, ``default`` for the ``/webhook/set`` URL) filter; ``limit`` is clamped to 50."""
        off = 0 if offset is None else offset
        lim = DELIVERY_PAGE_MAX if limit is None else limit
        if off < 0:
            raise InvalidInput("offset", "must not be negative")
        if lim < 1:
            raise InvalidInput("limit", "must be at least 1")
        lim = min(lim, DELIVERY_PAGE_MAX)
        wanted = parse_status(status)
        with self._storage.transaction() as tx:
            items, total = tx.list_deliveries(
                owner, status=wanted, guid=guid, offset=off, limit=lim, endpoint_id=endpoint
            )
        return items, total, off, lim

    def redeliver(self, owner: str, delivery_id: int) -> Delivery:
        """Queue ``owner``'s delivery again, due now; another owner's id is "not found".
        429 (``TooManyRedeliveries``) past the owner's pace, before anything is written."""
        self._pace.take(owner)
        with self._storage.transaction() as tx:
            delivery = tx.redeliver(delivery_id, owner, round(self._clock() * 1000))
        if delivery is None:
            raise DeliveryNotFound(delivery_id)
        return delivery

    def redeliver_failed(self, owner: str, since: int) -> int:
        """Queue again, due now, every failed delivery of ``owner`` created at or after
        ``since`` (unix seconds), each with its webhook id; returns how many. One statement:
        all of them or none. 429 past the owner's pace, as ``redeliver``."""
        if since < 0:
            raise InvalidInput("since", "must not be negative")
        self._pace.take(owner)
        now_ms = round(self._clock() * 1000)
        since_ms = min(since * 1000, 2**63 - 1)  # a far-future since must not overflow BIGINT
        with self._storage.transaction() as tx:
            return tx.redeliver_failed(owner, since_ms, now_ms)

    def dispatcher(self) -> Dispatcher:
        """A dispatcher over the gateway's storage, settings and clock (the worker's loop)."""
        return Dispatcher(self._storage, self._settings, clock=self._clock)
