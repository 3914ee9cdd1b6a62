"""The contract's outbox: event ids, per-consumer queues, the host-signal and WebSocket
reads; and one rollback that must take back every kind of write of a unit of work."""

from __future__ import annotations

import logging
from decimal import Decimal

import attrs
import pytest

from paycore.domain.records import (
    ALL_OWNERS,
    NewEvent,
    PollToken,
    PowChallenge,
    Status,
    WebhookConfig,
)
from paycore.storage import Storage
from paycore.testing.storage_contract.basics import Boom, guid
from paycore.testing.storage_records import (
    OTHER_OWNER,
    OWNER,
    USDT,
    invoice,
    session_key,
    transaction,
)

# -- events -----------------------------------------------------------------------------------


def payload(n: int) -> dict[str, object]:
    return {"guid": guid(n), "status": "paid", "paidAmount": "1.5", "data": {"n": [n]}}


def test_event_ids_strictly_increase(storage: Storage) -> None:
    with storage.transaction() as tx:
        first = tx.add_event(OWNER, guid(1), payload(1), 10)
        second = tx.add_event(OTHER_OWNER, guid(2), payload(2), 10)
    with storage.transaction() as tx:
        third = tx.add_event(OWNER, guid(3), payload(3), 11)
    assert first < second < third


def test_queue_starts_after_existing_events_and_drains_its_owner_oldest_first(
    storage: Storage,
) -> None:
    with storage.transaction() as tx:
        tx.add_event(OWNER, guid(1), payload(1), 10)  # before the queue: never delivered
        tx.open_queue("key-a", OWNER)
        ids = [
            tx.add_event(OWNER, guid(2), payload(2), 20),
            tx.add_event(OTHER_OWNER, guid(3), payload(3), 21),
            tx.add_event(OWNER, guid(4), payload(4), 22),
        ]
    with storage.transaction() as tx:
        drained = tx.drain_queue("key-a", cap=100)
        assert [(e.id, e.owner, e.guid, e.created_at) for e in drained] == [
            (ids[0], OWNER, guid(2), 20),
            (ids[2], OWNER, guid(4), 22),
        ]
        assert drained[0].payload == payload(2)
        assert tx.drain_queue("key-a", cap=100) == []
    with storage.transaction() as tx:
        assert tx.drain_queue("key-a", cap=100) == []
        later = tx.add_event(OWNER, guid(5), payload(5), 30)
        tx.open_queue("key-a", OWNER)  # already open: the cursor must not jump
        assert [e.id for e in tx.drain_queue("key-a", cap=100)] == [later]


def test_queues_are_independent_per_consumer(storage: Storage) -> None:
    with storage.transaction() as tx:
        tx.open_queue("key-a", OWNER)
        tx.open_queue("key-b", OWNER)
        event_id = tx.add_event(OWNER, guid(1), payload(1), 10)
    with storage.transaction() as tx:
        assert [e.id for e in tx.drain_queue("key-a", 10)] == [event_id]
        assert [e.id for e in tx.drain_queue("key-b", 10)] == [event_id]
        assert tx.drain_queue("never-opened", 10) == []


def test_drain_keeps_only_the_newest_cap_and_warns(
    storage: Storage, caplog: pytest.LogCaptureFixture
) -> None:
    with storage.transaction() as tx:
        tx.open_queue("key-a", OWNER)
        ids = [tx.add_event(OWNER, guid(n), payload(n), n) for n in range(7)]
    with caplog.at_level(logging.WARNING, logger="paycore.events"), storage.transaction() as tx:
        drained = tx.drain_queue("key-a", cap=3)
    assert [e.id for e in drained] == ids[-3:]
    warnings = [r for r in caplog.records if r.name == "paycore.events"]
    assert len(warnings) == 1 and "dropped 4" in warnings[0].getMessage()
    with storage.transaction() as tx:
        assert tx.drain_queue("key-a", cap=3) == []


def test_closed_queue_drains_nothing_and_reopens_fresh(storage: Storage) -> None:
    with storage.transaction() as tx:
        tx.open_queue("key-a", OWNER)
        tx.add_event(OWNER, guid(1), payload(1), 10)
        tx.close_queue("key-a")
        tx.close_queue("key-a")  # closing twice is harmless
        assert tx.drain_queue("key-a", 10) == []
        tx.open_queue("key-a", OWNER)
        assert tx.drain_queue("key-a", 10) == []
        fresh = tx.add_event(OWNER, guid(2), payload(2), 11)
        assert [e.id for e in tx.drain_queue("key-a", 10)] == [fresh]


def test_drained_payload_is_not_shared_with_storage(storage: Storage) -> None:
    with storage.transaction() as tx:
        tx.open_queue("key-a", OWNER)
        tx.open_queue("key-b", OWNER)
        sent = payload(1)
        tx.add_event(OWNER, guid(1), sent, 10)
        sent["status"] = "changed after add"
        tx.drain_queue("key-a", 10)[0].payload["data"]["n"].append("changed after drain")
        assert tx.drain_queue("key-b", 10)[0].payload == payload(1)


def test_events_of_one_invoice_drain_in_the_order_they_were_added(storage: Storage) -> None:
    with storage.transaction() as tx:
        tx.open_queue("key-a", OWNER)
    added: list[int] = []
    for n in (1, 2, 1, 3, 1):
        with storage.transaction() as tx:
            added.append(tx.add_event(OWNER, guid(n), payload(n), n))
    with storage.transaction() as tx:
        drained = tx.drain_queue("key-a", 10)
    assert [e.id for e in drained] == added


def test_event_types_round_trip_and_default_to_updated(storage: Storage) -> None:
    with storage.transaction() as tx:
        tx.open_queue("key-a", OWNER)
        tx.add_event(OWNER, guid(1), payload(1), 10, "invoice.paid")
        tx.add_event(OWNER, guid(1), payload(1), 11)
        tx.add_events([NewEvent(OWNER, guid(2), payload(2), 12, "invoice.overpaid")] * 2)
    with storage.transaction() as tx:
        drained = tx.drain_queue("key-a", 10)
    assert [e.type for e in drained] == [
        "invoice.paid",
        "invoice.updated",
        "invoice.overpaid",
        "invoice.overpaid",
    ]
    assert drained[0].payload == payload(1)  # the type is not mixed into the payload


def test_read_outbox_reads_every_owner_and_moves_only_when_told(storage: Storage) -> None:
    with storage.transaction() as tx:
        tx.add_event(OWNER, guid(1), payload(1), 10)  # before the queue: never read
        assert tx.read_outbox("signal:x", 10) is None
        tx.open_queue("signal:x", ALL_OWNERS)
        tx.open_queue("signal:x", ALL_OWNERS)  # again: kept
        ids = [
            tx.add_event(OWNER, guid(2), payload(2), 20, "invoice.paid"),
            tx.add_event(OTHER_OWNER, guid(3), payload(3), 21),
            tx.add_event(OWNER, guid(4), payload(4), 22),
        ]
    with storage.transaction() as tx:
        first = tx.read_outbox("signal:x", 2)
        assert first is not None
        assert [(e.id, e.owner, e.type) for e in first.events] == [
            (ids[0], OWNER, "invoice.paid"),
            (ids[1], OTHER_OWNER, "invoice.updated"),
        ]
        assert first.upto == ids[1]  # cut short by the cap: no further than the last read
        again = tx.read_outbox("signal:x", 2)  # not moved by reading
        assert again is not None and [e.id for e in again.events] == ids[:2]
        assert tx.drain_queue("signal:x", 10) == []  # no owner is empty
    with storage.transaction() as tx:
        assert tx.move_queue("signal:x", first.position, first.upto)
        assert not tx.move_queue("signal:x", first.position, first.upto)  # moved already
        assert not tx.move_queue("never-opened", 0, 5)
    with storage.transaction() as tx:
        rest = tx.read_outbox("signal:x", 10)
        assert rest is not None and [e.id for e in rest.events] == [ids[2]]
        assert rest.position == ids[1] and rest.upto >= ids[2]
        assert tx.move_queue("signal:x", rest.position, rest.upto)
        empty = tx.read_outbox("signal:x", 10)
        assert empty is not None and empty.events == []


def test_outbox_since_reads_after_a_held_position_without_storing_one(storage: Storage) -> None:
    with storage.transaction() as tx:
        tx.add_event(OWNER, guid(1), payload(1), 10)
    with storage.transaction() as tx:
        start = tx.outbox_since(None, 10)  # a new reader starts at the horizon
        assert start.events == [] and start.position == start.upto
        ids = [
            tx.add_event(OWNER, guid(2), payload(2), 20, "invoice.paid"),
            tx.add_event(OTHER_OWNER, guid(3), payload(3), 21),
            tx.add_event(OWNER, guid(4), payload(4), 22),
        ]
    with storage.transaction() as tx:
        every = tx.outbox_since(start.upto, 10)
        assert [(e.id, e.owner, e.type) for e in every.events] == [
            (ids[0], OWNER, "invoice.paid"),
            (ids[1], OTHER_OWNER, "invoice.updated"),
            (ids[2], OWNER, "invoice.updated"),
        ]
        assert every.position == start.upto and every.upto >= ids[2]
        cut = tx.outbox_since(start.upto, 2)
        assert [e.id for e in cut.events] == ids[:2] and cut.upto == ids[1]
        mine = tx.outbox_since(start.upto, 10, OWNER)
        assert [e.id for e in mine.events] == [ids[0], ids[2]]
        assert [e.payload for e in mine.events] == [payload(2), payload(4)]
        assert tx.outbox_since(ids[2], 10).events == []
        assert tx.outbox_since(None, 10).upto >= ids[2]
        with pytest.raises(ValueError):
            tx.outbox_since(0, 0)


# -- rollback ---------------------------------------------------------------------------------


def test_exception_rolls_back_every_write(storage: Storage) -> None:
    with storage.transaction() as tx:
        tx.insert_invoice(invoice(guid(1)))
        tx.put_session_key(session_key(last_seen_nonce=1))
        tx.put_challenge(PowChallenge("kept", OWNER, 1, 1))
        tx.open_queue("key-a", OWNER)
        kept_event = tx.add_event(OWNER, guid(1), payload(1), 1)
    with pytest.raises(Boom), storage.transaction() as tx:
        tx.insert_invoice(invoice(guid(2)))
        tx.update_invoice(attrs.evolve(invoice(guid(1)), status=Status.PAID))
        tx.insert_transaction(transaction())
        tx.put_session_key(session_key("0xnew"))
        tx.advance_nonce(session_key().address, 99)
        assert tx.allocate_wallet_index(OWNER, 1) == 0
        assert tx.take_challenge("kept") is not None
        tx.put_challenge(PowChallenge("new", OWNER, 1, 1))
        tx.remember_signature("digest", 2_000_000_000)
        tx.put_webhook(WebhookConfig(OWNER, "https://x.example", "s"))
        tx.add_event(OWNER, guid(2), payload(2), 2)
        assert len(tx.drain_queue("key-a", 10)) == 2
        tx.open_queue("key-b", OWNER)
        tx.put_poll_token(PollToken("tok", OWNER, 1))
        raise Boom
    with storage.transaction() as tx:
        assert tx.list_invoices() == ([invoice(guid(1))], 1)
        assert tx.list_transactions(OWNER) == ([], 0)
        assert tx.get_session_key("0xnew") is None
        key = tx.get_session_key(session_key().address)
        assert key is not None and key.last_seen_nonce == 1
        assert tx.allocate_wallet_index(OWNER, 1) == 0
        assert tx.take_challenge("new") is None
        assert tx.take_challenge("kept") is not None
        assert tx.remember_signature("digest", 2_000_000_000) is True
        assert tx.get_webhook(OWNER) is None
        assert [e.id for e in tx.drain_queue("key-a", 10)] == [kept_event]
        assert tx.drain_queue("key-b", 10) == []
        assert tx.get_poll_token("tok") is None


def test_tip_jar_and_tron_sized_values_survive(storage: Storage) -> None:
    tron = invoice(guid(1), chain_id=3448148188, value=Decimal(0))
    with storage.transaction() as tx:
        tx.insert_invoice(tron)
        tx.insert_transaction(transaction(chain_id=3448148188, log_index=-1, token=USDT))
    with storage.transaction() as tx:
        stored = tx.get_invoice(tron.guid)
        assert stored == tron and stored.is_tip_jar
        [row], _ = tx.list_transactions(OWNER, chain_id=3448148188)
        assert row.log_index == -1
