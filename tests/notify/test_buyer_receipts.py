"""Receipts to the buyer, sent to a real SMTP server (aiosmtpd) on loopback: an invoice made
with a ``buyerEmail`` mails the buyer once when paid and once per confirmed refund, in the
invoice's language; the address never appears in the invoice's public record."""

from __future__ import annotations

import time
from decimal import Decimal
from typing import Any

import pytest
from mgmt_helpers import smtp_server

from paycore import NATIVE, ChainConfig, Deposit, Gateway, Settings
from paycore.chains.evm import plugin as evm_plugin
from paycore.chains.records import DepositBatch
from paycore.domain.records import RateSource, Refund, RefundStatus, Transaction, TxType
from paycore.errors import InvalidInput
from paycore.notify.email import EmailNotifier

CHAIN = 1
ETH = f"{CHAIN}:{NATIVE}"
OWNER = "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359"
PAYER = "0x2222222222222222222222222222222222222222"
BUYER = "buyer@shop.example"
NOW = 1_700_000_000


def make_gateway(port: int) -> Gateway:
    chains = {
        CHAIN: ChainConfig(
            chain_id=CHAIN,
            name="eth",
            rpc_url="http://127.0.0.1:9",
            factory="0x5FbDB2315678afecb367f032d93F642f64180aa3",
        )
    }
    settings = Settings(
        database_url="memory://",
        prices={ETH: "2000"},
        chains=chains,
        smtp_host="127.0.0.1",
        smtp_port=port,
        smtp_from="payments@gateway.example",
        smtp_starttls=False,
    )
    return Gateway(settings, entry_points=False, plugins=[evm_plugin], clock=lambda: NOW)


def mailer(gateway: Gateway) -> EmailNotifier:
    [found] = [n for n in gateway.notifiers if isinstance(n, EmailNotifier)]
    return found


def deposit(gateway: Gateway, to: str, eth: str, n: int) -> None:
    gateway.record_deposit(
        Deposit(CHAIN, f"0x{n:064x}", n, NATIVE, PAYER, to, Decimal(eth), NOW + n)
    )


def refund(gateway: Gateway, guid: str, n: int) -> None:
    pending = Refund(
        id=f"00000000-0000-4000-9000-{n:012d}",
        guid=guid,
        owner=OWNER,
        chain_id=CHAIN,
        token=NATIVE,
        to=PAYER,
        amount=Decimal("0.001"),
        vs_value=Decimal(2),
        rate=Decimal(2000),
        rate_source=RateSource.PAYMENT,
        status=RefundStatus.PENDING,
        created_at=NOW + n,
    )
    with gateway.storage.transaction() as tx:
        tx.insert_refund(pending)
    paid_out = Transaction(
        type=TxType.WITHDRAW,
        tx_hash=f"0x{100 + n:064x}",
        log_index=n,
        chain_id=CHAIN,
        token=NATIVE,
        from_="0x4444444444444444444444444444444444444444",
        amount=Decimal("0.001"),
        vs_value=Decimal(2),
        timestamp=NOW + 100 + n,
        owner=OWNER,
        to=PAYER,
    )
    gateway.ingest(DepositBatch(CHAIN, [], withdrawals=[paid_out]))


def test_paid_and_refunded_receipts_in_the_invoices_language_once_each() -> None:
    with smtp_server() as (inbox, port):
        gateway = make_gateway(port)
        body: dict[str, Any] = {
            "value": "10",
            "chainId": CHAIN,
            "description": "Tasse",
            "acceptedTokens": [ETH],
            "buyerEmail": BUYER,
            "language": "de",
        }
        invoice = gateway.create_invoice(OWNER, body)
        assert invoice.buyer_email == BUYER
        wire = gateway.invoice_wire(gateway.get_invoice(invoice.guid))
        assert BUYER not in str(wire) and "buyerEmail" not in wire  # private

        deposit(gateway, invoice.address, "0.002", 1)  # partial: no receipt
        assert mailer(gateway).flush() and inbox.messages == []
        deposit(gateway, invoice.address, "0.003", 2)  # paid
        deposit(gateway, invoice.address, "0.001", 3)  # overpaid: no second receipt
        assert mailer(gateway).flush()
        [(recipients, paid)] = inbox.wait_for(1)
        assert recipients == [BUYER]
        assert paid["Subject"] == "Beleg: Ihre Zahlung für Tasse"
        text = paid.get_content()
        assert "Vielen Dank" in text and invoice.guid in text and "0.003 ETH" in text
        assert f"0x{2:064x}" in text

        refund(gateway, invoice.guid, 1)
        assert mailer(gateway).flush()
        messages = inbox.wait_for(2)
        assert len(messages) == 2
        refunded = messages[1][1]
        assert refunded["Subject"] == "Beleg: Ihre Erstattung für Tasse"
        assert "0.001 ETH (2 USD)" in refunded.get_content()
        assert f"0x{101:064x}" in refunded.get_content()

        refund(gateway, invoice.guid, 2)  # a second refund: its own receipt, the first not again
        assert mailer(gateway).flush()
        messages = inbox.wait_for(3)
        time.sleep(0.2)
        assert len(inbox.messages) == 3
        assert f"0x{102:064x}" in messages[2][1].get_content()
        gateway.close()


def test_no_buyer_email_no_receipt_and_bad_fields_are_refused() -> None:
    with smtp_server() as (inbox, port):
        gateway = make_gateway(port)
        body: dict[str, Any] = {
            "value": "10", "chainId": CHAIN, "description": "x", "acceptedTokens": [ETH]
        }  # fmt: skip
        invoice = gateway.create_invoice(OWNER, body)
        deposit(gateway, invoice.address, "0.005", 1)
        assert mailer(gateway).flush()
        time.sleep(0.2)
        assert inbox.messages == []
        with pytest.raises(InvalidInput, match="buyerEmail: must be an e-mail address"):
            gateway.create_invoice(OWNER, {**body, "buyerEmail": "a@b.c\r\nBcc: x@evil.example"})
        with pytest.raises(InvalidInput, match="buyerEmail: must be ASCII"):
            gateway.create_invoice(OWNER, {**body, "buyerEmail": "käufer@shop.example"})
        with pytest.raises(InvalidInput, match="language"):
            gateway.create_invoice(OWNER, {**body, "buyerEmail": "a@b.co", "language": "xx"})
        gateway.close()


def test_receipts_speak_every_checkout_language() -> None:
    """The receipts' languages are the checkout page's catalogues, read from messages.js."""
    from pathlib import Path

    import paycore.checkout
    from paycore.domain.invoices import RECEIPT_LANGUAGES
    from paycore.notify.receipts import TEXTS

    source = Path(paycore.checkout.__file__).parent / "assets" / "messages.js"
    line = next(x for x in source.read_text().splitlines() if "export const MESSAGES" in x)
    catalogues = line.split("{", 1)[1].split("}", 1)[0].replace(" ", "").split(",")
    assert len(catalogues) == 9
    assert set(RECEIPT_LANGUAGES) == set(catalogues) == set(TEXTS)
    keys = set(TEXTS["en"])
    assert all(set(texts) == keys for texts in TEXTS.values())


@pytest.mark.parametrize(
    ("language", "subject", "intro"),
    [
        ("ru", "Квитанция: ваш платёж за Чашка", "Спасибо: ваш платёж получен."),
        ("ja", "領収書：Чашка のお支払い", "ありがとうございます。お支払いを受け取りました。"),
    ],
)
def test_a_receipt_in_a_non_latin_script_arrives_decoded(
    language: str, subject: str, intro: str
) -> None:
    with smtp_server() as (inbox, port):
        gateway = make_gateway(port)
        body: dict[str, Any] = {
            "value": "10",
            "chainId": CHAIN,
            "description": "Чашка",
            "acceptedTokens": [ETH],
            "buyerEmail": BUYER,
            "language": language,
        }
        invoice = gateway.create_invoice(OWNER, body)
        deposit(gateway, invoice.address, "0.005", 1)
        assert mailer(gateway).flush()
        [(recipients, paid)] = inbox.wait_for(1)
        assert recipients == [BUYER]
        assert paid["Subject"] == subject  # RFC 2047 encoded on the wire, decoded here
        text = paid.get_content()
        assert text.startswith(intro) and "Чашка" in text and "0.005 ETH" in text
        assert invoice.guid in text
        gateway.close()
