"""Redelivery has a pace: each owner may call ``/webhook/redeliver`` and
``/webhook/redeliver-failed`` ``webhook_redeliver_limit`` times per
``webhook_redeliver_window`` seconds; more calls are answered 429 with ``Retry-After`` and
a one-line text, write nothing, and cost other owners nothing. Through both adapters."""

from __future__ import annotations

from typing import Any

from conf_env import Env

from paycore.domain.records import WebhookConfig

LIMIT_TEXT = "too many requests: at most 3 redelivery calls per 60 s for an owner, retry in {} s"


def _queued_delivery(env: Env, owner: str) -> int:
    """One failed delivery of ``owner``'s, straight into storage (no receiver is needed:
    nothing here delivers)."""
    with env.gateway.storage.transaction() as tx:
        tx.put_webhook(WebhookConfig(owner, "http://127.0.0.1:9/h", "whsec_AAAA"))
        delivery_id = tx.enqueue_delivery(
            1, owner, "g-" + owner[-6:], "msg_x" + owner[-6:], "{}", 0
        )
        assert delivery_id is not None
    return delivery_id


def test_redelivery_past_the_pace_is_429_with_retry_after(make_env: Any) -> None:
    env = make_env(webhook_redeliver_limit=3, webhook_redeliver_window=60)
    owner, [key] = env.merchant("m", "k")
    other, [theirs] = env.merchant("o", "k")
    mine = _queued_delivery(env, owner.address)
    for _ in range(2):
        env.api.post("/webhook/redeliver", {"id": mine}, session=key).ok()
    redelivered_at = round(env.clock.now * 1000)
    env.clock.advance(20)
    env.api.post("/webhook/redeliver-failed", {"since": 0}, session=key).ok()  # the 3rd call
    refused = env.api.post("/webhook/redeliver", {"id": mine}, session=key)
    refused.error(429, LIMIT_TEXT.format(40))  # the first call leaves the window in 40 s
    assert refused.headers.get("retry-after") == "40"
    env.api.post("/webhook/redeliver-failed", {"since": 0}, session=key).error(
        429, LIMIT_TEXT.format(40)
    )
    with env.gateway.storage.transaction() as tx:  # the refused calls wrote nothing
        [delivery], _ = tx.list_deliveries(owner.address)
    assert delivery.retry_from == redelivered_at  # not moved by a refused call

    theirs_id = _queued_delivery(env, other.address)  # another owner has a pace of its own
    env.api.post("/webhook/redeliver", {"id": theirs_id}, session=theirs).ok()

    env.clock.advance(40)  # the first two calls have left the window, the third has not
    for _ in range(2):
        env.api.post("/webhook/redeliver", {"id": mine}, session=key).ok()
    env.api.post("/webhook/redeliver", {"id": mine}, session=key).error(429, LIMIT_TEXT.format(20))
