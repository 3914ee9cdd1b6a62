"""What a store hands out is the caller's own: a record's ``data`` or an event's ``payload``
changed by the caller after a read (or after the write) is not what the next reader gets.
A store that keeps records as objects (the in-memory one) must copy on the way in and out;
one that reads rows from a database gets this for free."""

from __future__ import annotations

from decimal import Decimal

from paycore.domain.records import ALL_OWNERS
from paycore.links.records import PaymentLink
from paycore.storage import Storage
from paycore.testing.storage_records import DEPOSIT, OWNER, USDT, invoice


def _link() -> PaymentLink:
    return PaymentLink(
        id="lnk-shared",
        owner=OWNER,
        created_at=1_000,
        chain_id=1,
        description="a mug",
        accepted_tokens=(f"1:{USDT}",),
        token=f"1:{USDT}",
        vs_currency="eur",
        amount=Decimal("1.5"),
        data={"sku": "mug", "nested": [1]},
    )


def test_every_invoice_read_hands_out_its_own_data(storage: Storage) -> None:
    original = invoice()
    with storage.transaction() as tx:
        tx.insert_invoice(original)
    with storage.transaction() as tx:
        reads = [
            tx.list_invoices()[0][0],
            tx.invoices_at_address(1, DEPOSIT)[0],
            tx.invoices_at_addresses(1, [DEPOSIT])[DEPOSIT][0],
            (tx.invoices_after(limit=1) or [original])[0],
            tx.export_invoices(OWNER, start=0, end=None, after=None, limit=1)[0],
        ]
        for n, read in enumerate(reads):
            read.data["nested"]["list"].append(f"changed by read {n}")
    with storage.transaction() as tx:
        assert tx.get_invoice(original.guid) == original
        assert tx.list_invoices()[0] == [original]


def test_an_inserted_invoice_is_not_changed_by_its_callers_dict(storage: Storage) -> None:
    mine = invoice()
    with storage.transaction() as tx:
        tx.insert_invoice(mine)
    mine.data["nested"]["list"].append("changed after insert")
    with storage.transaction() as tx:
        stored = tx.get_invoice(mine.guid)
    assert stored is not None and stored.data == invoice().data


def test_a_links_data_is_the_callers_own(storage: Storage) -> None:
    link = _link()
    with storage.transaction() as tx:
        tx.insert_payment_link(link)
    link.data["nested"].append("changed after insert")
    with storage.transaction() as tx:
        read = tx.get_payment_link(link.id)
        assert read is not None
        read.data["nested"].append("changed after read")
        tx.list_payment_links(OWNER)[0][0].data["sku"] = "changed after list"
    with storage.transaction() as tx:
        assert tx.get_payment_link(link.id) == _link()


def test_outbox_reads_hand_out_their_own_payloads(storage: Storage) -> None:
    payload = {"guid": "g1", "data": {"n": [1]}}
    with storage.transaction() as tx:
        tx.open_queue("signal:x", ALL_OWNERS)
        start = tx.outbox_since(None, 10).upto
        tx.add_event(OWNER, "g1", payload, 10)
    payload["data"]["n"].append("changed after add")  # type: ignore[index]
    with storage.transaction() as tx:
        first = tx.read_outbox("signal:x", 10)
        assert first is not None
        first.events[0].payload["data"]["n"].append("changed after read_outbox")
        tx.outbox_since(start, 10).events[0].payload["data"]["n"].append("changed after since")
    with storage.transaction() as tx:
        again = tx.outbox_since(start, 10, OWNER)
        assert [e.payload for e in again.events] == [{"guid": "g1", "data": {"n": [1]}}]
