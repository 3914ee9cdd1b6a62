"""The invoice's own vsCurrency travels on its JSON record, so a reader (the checkout page, a
client) formats ``value``, ``paidAmount`` and each ``vsValue`` in the right currency."""

from __future__ import annotations

from decimal import Decimal

import attrs

from paycore import NATIVE, Gateway, Settings
from paycore.domain.records import Invoice, Status

ETH = f"1:{NATIVE}"
OWNER = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
DEPOSIT = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC"


def _invoice(vs_currency: str) -> Invoice:
    return Invoice(
        guid="g-1",
        created_at=1,
        deadline=2,
        status=Status.INIT,
        value=Decimal("1234.5"),
        token=ETH,
        chain_id=1,
        description="",
        address=DEPOSIT,
        owner=OWNER,
        accepted_tokens=(ETH,),
        vs_currency=vs_currency,
    )


def test_the_wire_record_names_its_currency_and_reads_back() -> None:
    eur = _invoice("eur")
    wire = eur.to_wire()
    assert wire["vsCurrency"] == "eur"
    assert Invoice.from_wire(wire) == eur  # the record's own currency wins over the default
    older = {k: v for k, v in wire.items() if k != "vsCurrency"}
    assert Invoice.from_wire(older, "jpy") == attrs.evolve(eur, vs_currency="jpy")


def test_the_public_read_carries_the_currency_named_at_creation() -> None:
    settings = Settings(
        database_url="memory://",
        prices={ETH: "2000"},
        vs_currencies=("eur", "jpy"),
        prices_by_currency={"eur": {ETH: "1850"}, "jpy": {ETH: "300000"}},
    )
    gateway = Gateway(settings, entry_points=False)
    try:
        body = {"value": "25", "chainId": 1, "acceptedTokens": [ETH], "address": DEPOSIT}
        body["description"] = "two mugs"
        plain = gateway.create_invoice(OWNER, body)
        eur = gateway.create_invoice(OWNER, {**body, "vsCurrency": "EUR"})
        assert gateway.invoice_wire(gateway.get_invoice(plain.guid))["vsCurrency"] == "usd"
        assert gateway.invoice_wire(gateway.get_invoice(eur.guid))["vsCurrency"] == "eur"
    finally:
        gateway.close()
