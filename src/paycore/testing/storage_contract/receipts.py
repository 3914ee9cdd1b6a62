"""The buyer's receipt fields of an invoice (``Invoice.buyer_email`` and ``language``) in the
``paycore.storage`` contract: stored with the invoice and read back as given, through a
whole-record update and a state update alike, on every backend."""

from __future__ import annotations

import attrs

from paycore.domain.records import Status
from paycore.storage import Storage
from paycore.testing.storage_records import invoice


def test_the_buyers_receipt_fields_round_trip(storage: Storage) -> None:
    mailed = attrs.evolve(invoice(), buyer_email="buyer@shop.example", language="fr")
    plain = invoice("00000000-0000-4000-8000-000000000002", address="0x" + "77" * 20)
    with storage.transaction() as tx:
        tx.insert_invoice(mailed)
        tx.insert_invoice(plain)
    with storage.transaction() as tx:
        assert tx.get_invoice(mailed.guid) == mailed
        read = tx.get_invoice(plain.guid)
        assert read is not None and read.buyer_email is None and read.language is None
        tx.update_invoice_states([attrs.evolve(mailed, status=Status.PAID)])
    with storage.transaction() as tx:
        assert tx.get_invoice(mailed.guid) == attrs.evolve(mailed, status=Status.PAID)
        tx.update_invoice(attrs.evolve(mailed, status=Status.EXPIRED))
    with storage.transaction() as tx:
        assert tx.get_invoice(mailed.guid) == attrs.evolve(mailed, status=Status.EXPIRED)
