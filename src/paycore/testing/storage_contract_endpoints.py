"""The webhook endpoint part of the ``paycore.storage`` contract (revision 0017), as tests.

Imported by ``paycore.testing.storage_contract``, so a plugin that runs that suite runs
these too, with the same ``storage`` fixture. Endpoints are rows of their own; a delivery
names its endpoint, is queued for it as given, claims its URL and secret while it is
enabled, and keeps its invoice's order per endpoint only.
"""

from __future__ import annotations

from typing import Any

import attrs

from paycore.domain.changes import STATUS_CHANGES
from paycore.domain.records import WebhookConfig
from paycore.storage import Storage
from paycore.testing.storage_records import OTHER_OWNER, OWNER
from paycore.webhooks.records import (
    DEFAULT_ENDPOINT,
    DeliveryAttempt,
    DeliveryStatus,
    NewDelivery,
    Settlement,
    WebhookEndpoint,
)

__all__ = [
    "test_webhook_endpoints_put_get_list_delete_per_owner",
    "test_an_endpoint_delivery_is_queued_as_given_and_claims_its_own_target",
    "test_invoice_order_is_kept_per_endpoint_not_across_them",
    "test_the_delivery_log_filters_by_endpoint",
]


def _endpoint(n: int, owner: str = OWNER, **changes: Any) -> WebhookEndpoint:
    endpoint = WebhookEndpoint(
        id=f"ep_{n:024x}",
        owner=owner,
        url=f"https://hooks{n}.example.test/in?token=t{n}",
        secret=f"whsec_{'A' * 31}{n}",
        types=STATUS_CHANGES | {"invoice.overpaid"},
        enabled=True,
        created_at=1000 + n,
    )
    return attrs.evolve(endpoint, **changes)


def _new(n: int, guid: str, endpoint_id: str | None, owner: str = OWNER) -> NewDelivery:
    return NewDelivery(n, owner, guid, f"msg_{n}_{endpoint_id}", f'{{"n":{n}}}', 0, endpoint_id)


def test_webhook_endpoints_put_get_list_delete_per_owner(storage: Storage) -> None:
    first, second, theirs = _endpoint(1), _endpoint(2, enabled=False), _endpoint(3, OTHER_OWNER)
    with storage.transaction() as tx:
        assert tx.webhook_endpoints([OWNER]) == []
        assert not tx.owner_is_known(OWNER)
        for endpoint in (second, first, theirs):
            tx.put_webhook_endpoint(endpoint)
    with storage.transaction() as tx:
        assert tx.owner_is_known(OWNER)
        assert tx.webhook_endpoints([OWNER]) == [first, second]  # by id
        assert tx.webhook_endpoints([OWNER, OTHER_OWNER]) == [first, second, theirs]
        assert tx.get_webhook_endpoint(OWNER, first.id) == first
        assert tx.get_webhook_endpoint(OWNER, theirs.id) is None  # another owner's
        changed = attrs.evolve(
            first, url="https://moved.example.test/", types=frozenset({"invoice.refunded"})
        )
        tx.put_webhook_endpoint(changed)
    with storage.transaction() as tx:
        assert tx.get_webhook_endpoint(OWNER, first.id) == changed
        assert not tx.delete_webhook_endpoint(OTHER_OWNER, first.id)
        assert tx.delete_webhook_endpoint(OWNER, first.id)
        assert not tx.delete_webhook_endpoint(OWNER, first.id)
        assert tx.webhook_endpoints([OWNER]) == [second]


def test_an_endpoint_delivery_is_queued_as_given_and_claims_its_own_target(
    storage: Storage,
) -> None:
    on, off, gone = _endpoint(1), _endpoint(2, enabled=False), _endpoint(3)
    with storage.transaction() as tx:
        for endpoint in (on, off, gone):
            tx.put_webhook_endpoint(endpoint)
        # No /webhook/set URL: a delivery without an endpoint is not queued, one with is.
        queued = tx.enqueue_deliveries(
            [
                _new(1, "g1", None),
                _new(1, "g1", on.id),
                _new(1, "g2", off.id),
                _new(2, "g3", gone.id),
            ]
        )
        assert queued == 3
        assert tx.enqueue_deliveries([_new(3, "g4", on.id)]) == 1  # one alone, too
        assert tx.delete_webhook_endpoint(OWNER, gone.id)
    with storage.transaction() as tx:
        claimed = tx.claim_deliveries(0, 1000, "lease", 10)
    targets = {(c.guid, c.endpoint_id): (c.url, c.secret) for c in claimed}
    assert targets == {
        ("g1", on.id): (on.url, on.secret),
        ("g2", off.id): ("", ""),  # disabled: nothing to deliver to
        ("g3", gone.id): ("", ""),  # deleted
        ("g4", on.id): (on.url, on.secret),
    }


def test_invoice_order_is_kept_per_endpoint_not_across_them(storage: Storage) -> None:
    a, b = _endpoint(1), _endpoint(2)
    with storage.transaction() as tx:
        tx.put_webhook(WebhookConfig(OWNER, "https://set.example.test/", "whsec_" + "B" * 32))
        tx.put_webhook_endpoint(a)
        tx.put_webhook_endpoint(b)
        tx.enqueue_deliveries(
            [_new(1, "g", None), _new(1, "g", a.id), _new(1, "g", b.id), _new(2, "g", a.id)]
        )
    with storage.transaction() as tx:
        first = tx.claim_deliveries(0, 1000, "one", 10)
    # The first event goes to all three targets at once; a's second waits for a's first.
    assert sorted((c.body, c.endpoint_id or "") for c in first) == sorted(
        [('{"n":1}', ""), ('{"n":1}', a.id), ('{"n":1}', b.id)]
    )
    [a_first] = [c for c in first if c.endpoint_id == a.id]
    attempt = DeliveryAttempt(a_first.id, 1, a.url, 200, None, 3)
    with storage.transaction() as tx:
        assert tx.finish_delivery(a_first.id, "one", attempt, Settlement(DeliveryStatus.DELIVERED))
        [second] = tx.claim_deliveries(0, 1000, "two", 10)
    assert (second.body, second.endpoint_id, second.url) == ('{"n":2}', a.id, a.url)


def test_the_delivery_log_filters_by_endpoint(storage: Storage) -> None:
    a = _endpoint(1)
    with storage.transaction() as tx:
        tx.put_webhook(WebhookConfig(OWNER, "https://set.example.test/", "whsec_" + "B" * 32))
        tx.put_webhook_endpoint(a)
        tx.enqueue_deliveries([_new(1, "g", None), _new(1, "g", a.id), _new(2, "h", a.id)])
    with storage.transaction() as tx:
        every, total = tx.list_deliveries(OWNER)
        mine, mine_total = tx.list_deliveries(OWNER, endpoint_id=a.id)
        spec, spec_total = tx.list_deliveries(OWNER, endpoint_id=DEFAULT_ENDPOINT)
        none, none_total = tx.list_deliveries(OWNER, endpoint_id="ep_unknown")
    assert total == 3 and [d.endpoint_id for d in every] == [a.id, a.id, None]
    assert mine_total == 2 and [d.guid for d in mine] == ["h", "g"]
    assert spec_total == 1 and spec[0].to_wire()["endpointId"] == DEFAULT_ENDPOINT
    assert none_total == 0 and none == []
