"""WebSocket pushes by event type (docs/interface.md §Events, §WebSocket frames): a socket
is pushed the status changes unless its register frame lists other types, a list the
session key signs. Over real servers on SQLite and PostgreSQL (the outbox feed), and
through the Hub alone for the direct pushes of ``memory://``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

import pytest
from eth_account.signers.local import LocalAccount
from realtime_helpers import Client, Merchant, Nonces, account, sign
from test_realtime_outbox import (  # the servers and databases of the outbox walk
    base,
    db_url,
    other,
    register_key,
    web,
)

from paycore import Gateway
from paycore.domain.changes import EventPayload
from paycore.realtime import CLOSE_AUTH, CLOSE_BAD_FRAME, Hub

__all__ = ["base", "db_url", "other", "web"]

OWNER = "0xdBB105387e6f362A7b58c1C8DD2aF3Bf16E6Bb22"
MONEY = ["invoice.partially_paid", "invoice.further_payment", "invoice.paid", "invoice.overpaid"]


def typed_frame(
    client: Client, key: LocalAccount, nonce: int, types: Sequence[str], *, after: int | None = None
) -> str:
    """A register frame listing ``types``: the key signs ``{challenge}[:after=N]:events=..``."""
    signed = client.challenge + ("" if after is None else f":after={after}")
    signed += ":events=" + ",".join(types)
    digest = hashlib.sha256(signed.encode("ascii")).hexdigest()
    frame: dict[str, Any] = {
        "type": "register",
        "nonce": nonce,
        "signature": sign(key, f"sess:{nonce}:{digest}"),
        "events": list(types),
    }
    if after is not None:
        frame["after"] = after
    return json.dumps(frame)


def frames_until(client: Client, count: int) -> list[dict[str, Any]]:
    """Push frames until ``count`` events came, however the server batched them."""
    frames: list[dict[str, Any]] = []
    while sum(len(f["events"]) for f in frames) < count:
        frames.append(client.recv())
    return frames


@pytest.mark.slow
def test_a_socket_gets_status_changes_unless_it_lists_types(
    base: str, web: Gateway, other: Gateway
) -> None:
    owner, key, nonces = account("typed owner"), account("typed key"), Nonces()
    register_key(base, owner, key)
    plain, typed = Client(base), Client(base)
    assert plain.register(key, nonces.next())["type"] == "registered"
    typed.send(typed_frame(typed, key, nonces.next(), MONEY))
    assert typed.recv()["type"] == "registered"
    merchant = Merchant(other, owner)
    invoice = merchant.invoice(value="20")  # 0.01 ETH at 2000
    for eth in ("0.002", "0.002", "0.006", "0.001"):  # partial, further, paid, overpaid
        merchant.pay(invoice, eth)

    got = frames_until(typed, 4)
    types = [t for f in got for t in f["eventTypes"]]
    assert types == MONEY
    statuses = [e["status"] for f in got for e in f["events"]]
    assert statuses == ["partialPaid", "partialPaid", "paid", "paid"]
    ids = [i for f in got for i in f["eventIds"]]

    status_only = frames_until(plain, 2)
    assert all("eventTypes" not in f for f in status_only)  # the interface's frame, as before
    assert [e["status"] for f in status_only for e in f["events"]] == ["partialPaid", "paid"]
    assert [i for f in status_only for i in f["eventIds"]] == [ids[0], ids[2]]
    assert plain.nothing_within(0.3)  # no second "paid" for the overpayment

    # Resuming with types replays the typed events after the position, then goes on live.
    again = Client(base)
    again.send(typed_frame(again, key, nonces.next(), ["invoice.overpaid"], after=ids[0]))
    assert again.recv()["type"] == "registered"
    [replayed] = frames_until(again, 1)
    assert (replayed["eventIds"], replayed["eventTypes"]) == ([ids[3]], ["invoice.overpaid"])
    for client in (plain, typed, again):
        client.close()


@pytest.mark.slow
def test_the_type_list_is_signed_and_checked(base: str, web: Gateway) -> None:
    owner, key, nonces = account("typed owner 2"), account("typed key 2"), Nonces()
    register_key(base, owner, key)
    widened = Client(base)
    frame = json.loads(typed_frame(widened, key, nonces.next(), ["invoice.paid"]))
    frame["events"] = ["invoice.paid", "invoice.refunded"]  # not what the key signed
    widened.send(json.dumps(frame))
    assert widened.closed().code == CLOSE_AUTH
    for events, said in (
        (["invoice.shipped"], "bad frame: events unknown event type 'invoice.shipped'"),
        ([], "bad frame: events must be a non-empty array of event types"),
        ("invoice.paid", "bad frame: events must be a non-empty array of event types"),
    ):
        client = Client(base)
        client.send(
            json.dumps({"type": "register", "nonce": 1, "signature": "0x", "events": events})
        )
        closed = client.closed()
        assert closed.code == CLOSE_BAD_FRAME and closed.frames[-1]["message"] == said


def test_direct_pushes_filter_by_the_type_the_gateway_gives() -> None:
    """Without the outbox feed (``memory://``) the Hub learns the type from the payload."""
    hub = Hub(queue_size=10)
    plain = hub.subscribe(OWNER, lambda: None)
    typed = hub.subscribe(OWNER, lambda: None, ["invoice.overpaid", "invoice.paid"])
    hub.invoice_changed(OWNER, EventPayload({"guid": "g", "status": "paid"}, "invoice.paid"))
    hub.invoice_changed(OWNER, EventPayload({"guid": "g", "status": "paid"}, "invoice.overpaid"))
    hub.invoice_changed(OWNER, EventPayload({"guid": "h", "status": "expired"}, "invoice.expired"))
    assert [(json.loads(e)["guid"], t) for _, e, t in typed.take_typed()] == [
        ("g", "invoice.paid"),
        ("g", "invoice.overpaid"),
    ]
    assert [json.loads(e)["status"] for e in plain.take()] == ["paid", "expired"]
