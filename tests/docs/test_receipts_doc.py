"""docs/management.md's receipt example is what the notifier writes: the same invoice and
payment rendered by ``paycore.notify.receipts`` give the shown subject and body."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import attrs

from paycore import NATIVE, Settings
from paycore.domain.changes import EventPayload, EventType
from paycore.domain.records import Payment, Status
from paycore.notify.receipts import receipts
from paycore.testing.storage_records import invoice

DOC = Path(__file__).resolve().parents[2] / "docs" / "management.md"
GUID = "9629d9e4-9bef-4367-ab0f-9ba2d396b19a"
TX = "0x69533a410385ee88f50ddb74a9aa10e6f362f7cc64fbd9616a64b49eb1f9f137"


def test_the_documented_receipt_is_what_the_notifier_writes() -> None:
    text = DOC.read_text("utf-8")
    shown = text.split("<!-- receipt-example -->", 1)[1].split("```text\n", 1)[1]
    shown = shown.split("```", 1)[0]
    payment = Payment(
        tx_hash=TX,
        log_index=0,
        chain_id=1,
        token=NATIVE,
        from_="0x2222222222222222222222222222222222222222",
        amount=Decimal("0.005"),
        vs_value=Decimal(10),
        timestamp=1_700_000_000,
    )
    paid = attrs.evolve(
        invoice(GUID),
        status=Status.PAID,
        value=Decimal(10),
        token=f"1:{NATIVE}",
        description="Tasse",
        payments=(payment,),
        vs_currency="usd",
        buyer_email="buyer@shop.example",
        language="de",
    )
    payload = EventPayload(paid.to_wire(), EventType.PAID.value)
    [(key, notice)] = receipts(Settings(), paid, payload)
    assert key == f"receipt:paid:{GUID}"
    assert notice["to"] == "buyer@shop.example"
    assert f"Subject: {notice['subject']}\n\n{notice['body']}" == shown
