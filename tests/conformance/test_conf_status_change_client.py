"""A client that acts on status alone fulfils each order once, on polling and on webhooks.

The public DepiPay client turns every record with status ``paid`` into
``payment.succeeded`` (the shop ships) and every ``expired`` into ``payment.failed``, and
reads no event type. ``StatusClient`` does exactly that, written here from that rule. It is
run, over HTTP on every store, through the changes that are not a status change
(docs/interface.md §Events): an overpayment after ``paid``, a late payment after
``expired``, a further part payment. Both channels it uses, ``POST /poll/events`` and the
webhook it registers with its session key, must make one success per paid order and no
failure after a late payment; the money still shows on the invoice.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
from conf_keys import sign_text
from test_conf_merchant_tools import (
    BACKENDS,
    FAST_RETRIES,
    MakeTools,
    Receiver,
    _invoice,
    make_tools,
    receiver,
)

__all__ = ["make_tools", "receiver"]


class StatusClient:
    """What the client does with an event: the record's status decides, nothing else."""

    def __init__(self) -> None:
        self.outcomes: Counter[tuple[str, str]] = Counter()

    def on_record(self, record: dict[str, Any]) -> None:
        if record["status"] == "paid":
            self.outcomes[(record["guid"], "payment.succeeded")] += 1
        elif record["status"] == "expired":
            self.outcomes[(record["guid"], "payment.failed")] += 1


def _deliver_all(env: Any) -> None:
    dispatcher = env.gateway.webhooks.dispatcher()
    for _ in range(20):  # bounded: each round delivers what is due
        if not dispatcher.run_once(limit=50):
            return
    raise AssertionError("deliveries still due after 20 rounds")


@pytest.mark.parametrize("backend", BACKENDS)
def test_one_success_per_order_and_no_failure_after_a_late_payment(
    make_tools: MakeTools, backend: str, receiver: Receiver
) -> None:
    env = make_tools(backend, **FAST_RETRIES)
    receiver.up()
    owner, [key] = env.merchant("shop", "k")
    set_url = env.api.post("/auth/register-callback", {"url": receiver.url}, session=key).ok()
    assert set_url["url"] == receiver.url
    wallet_signed = {
        "ownerAddress": owner.address,
        "signature": sign_text(owner, f"get-webhook:{owner.address.lower()}"),
    }
    receiver.secret = env.api.post("/webhook/get", wallet_signed).ok()["secret"]
    poll, hook = StatusClient(), StatusClient()

    def drain() -> None:
        for record in env.poll(key):
            poll.on_record(record)

    overpaid = _invoice(env, key, deadlineSecs=600)
    env.deposit(overpaid["address"], "0.005")  # paid
    drain()
    env.deposit(overpaid["address"], "0.002")  # the buyer pays again: overpaid
    env.deposit(overpaid["address"], "0.001")  # and again
    drain()

    in_parts = _invoice(env, key, deadlineSecs=600)
    for part in ("0.001", "0.001", "0.001"):  # partialPaid, then a further part
        env.deposit(in_parts["address"], part)
        drain()
    env.deposit(in_parts["address"], "0.002")  # paid
    env.deposit(in_parts["address"], "0.003")  # overpaid
    drain()

    late = _invoice(env, key, deadlineSecs=100)
    env.clock.advance(101)
    assert env.api.get(f"/invoice/{late['guid']}").ok()["status"] == "expired"
    drain()
    env.deposit(late["address"], "0.005")  # the money comes after the deadline
    env.deposit(late["address"], "0.001")
    drain()
    _deliver_all(env)
    assert receiver.got and all(r["verified"] for r in receiver.got)
    for got in receiver.got:
        hook.on_record(json.loads(got["body"]))

    expected = Counter(
        {
            (overpaid["guid"], "payment.succeeded"): 1,
            (in_parts["guid"], "payment.succeeded"): 1,
            (late["guid"], "payment.failed"): 1,  # the expiry, and nothing for the late money
        }
    )
    assert poll.outcomes == expected
    assert hook.outcomes == expected
    # The money of every change is still recorded on the invoice.
    for guid, paid, payments in (
        (overpaid["guid"], "16", 3),
        (in_parts["guid"], "16", 5),
        (late["guid"], "12", 2),
    ):
        read = env.api.get(f"/invoice/{guid}").ok()
        assert (read["paidAmount"], len(read["payments"])) == (paid, payments), read
