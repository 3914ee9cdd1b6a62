"""The checkout page as a buyer meets it, in a real Chromium, under both adapters: the
invoice's own currency, no second payment by accident, every outcome explained, and what
the buyer sends to. Each test drives a scenario of tests/node/checkout_browser.mjs.

Deposits are recorded by the test the way a chain watcher would, under the hash the page's
(fake, in-page) EIP-1193 wallet answered, so the page sees the very payment it sent.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import ROUND_CEILING, Decimal
from typing import Any

import pytest
from checkout_browser_driver import ARTIFACTS, Browser, has_event_stream, require_browser, serve
from checkout_helpers import (
    CHAIN,
    ETH,
    OWNER,
    PAYER,
    USDT,
    USDT_ADDRESS,
    make_gateway,
    new_invoice,
    pay,
)
from test_checkout_browser import AUDIT_LANGUAGES, explorer_chain

from paycore import NATIVE, Deposit, Gateway
from paycore.merchant import NewProfile

pytestmark = [pytest.mark.node, pytest.mark.browser]

FRAMEWORKS = ["litestar", "flask"]
SUPPORT = "help@shop.example"
#: Deposit addresses of their own, one an invoice, so a deposit names its invoice.
ADDRESSES = [
    "0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65",
    "0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc",
    "0x976EA74026E726554dB657fA54763abd0C3a0aa9",
    "0x14dC79964da2C08b23698B3D3cc7Ca32193d9955",
]


@pytest.fixture(scope="module", autouse=True)
def _tools() -> None:
    require_browser()


def tx_hash(n: int) -> str:
    return "0x" + f"{n:064x}"


@contextmanager
def browsing(
    framework: str, gateway: Gateway, scenario: str, **extra: Any
) -> Iterator[tuple[Browser, str]]:
    """``gateway`` served by ``framework``, and the scenario's browser on it."""
    try:
        with serve(framework, gateway) as base:
            artifacts = ARTIFACTS / "checkout" / scenario / framework
            browser = Browser(scenario, base, artifacts, payer=PAYER, **extra)
            try:
                yield browser, base
            finally:
                browser.close()
    finally:
        gateway.close()


def no_violations(audits: dict[str, list[str]], states: list[str]) -> None:
    """axe-core ran in each state x language x viewport x scheme and found nothing."""
    wanted = {
        f"{state}-{language}-{viewport}-{scheme}"
        for state in states
        for language in AUDIT_LANGUAGES
        for viewport in ("desktop", "phone")
        for scheme in ("light", "dark")
    }
    assert wanted <= set(audits)
    assert {name: audits[name] for name in wanted if audits[name]} == {}


def ether(tx: dict[str, str]) -> str:
    """The ETH amount of a wallet transaction's hex wei value."""
    return str(Decimal(int(tx["value"], 16)) / Decimal(10) ** 18)


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_an_invoice_in_eur_or_jpy_is_quoted_and_paid_in_its_own_currency(framework: str) -> None:
    gateway = make_gateway(
        vs_currencies=("eur", "jpy"),
        prices_by_currency={
            "eur": {ETH: "1840", USDT: "0.92"},
            "jpy": {ETH: "300000", USDT: "150"},
        },
    )
    eur = new_invoice(gateway, value="1234.5", vsCurrency="eur", address=ADDRESSES[0])
    jpy = new_invoice(gateway, value="3000", vsCurrency="jpy", address=ADDRESSES[1])
    hashes = [tx_hash(101), tx_hash(102)]
    guids = {"eur": eur.guid, "jpy": jpy.guid}
    sent: dict[str, Any] = {}
    with browsing(framework, gateway, "currencies", guids=guids, hashes=hashes) as (browser, _):
        for n, name in enumerate(guids):
            step = browser.step("sent")
            assert step["name"] == name
            sent[name] = step
            pay(gateway, ether(step["tx"]), tx=101 + n, to=ADDRESSES[n])
            browser.next()
        paid = browser.step("paid")["results"]
        assert browser.step("done")["problems"] == []
    eur_due = (Decimal("1234.5") / Decimal("1840")).quantize(Decimal("1e-8"), ROUND_CEILING)
    before = sent["eur"]["before"]
    assert (before["amountVs"], before["amountToken"]) == ("€1,234.50", f"{eur_due} ETH")
    assert sent["eur"]["tx"]["value"] == hex(int(eur_due * 10**18))
    assert sent["eur"]["tx"]["chainId"] == hex(CHAIN)
    before = sent["jpy"]["before"]
    assert (before["amountVs"], before["amountToken"]) == ("¥3,000", "0.01 ETH")  # no decimals
    assert sent["jpy"]["tx"]["value"] == hex(10**16)
    assert (paid["eur"]["badge"], paid["eur"]["paidVs"]) == ("Paid", "€1,234.50")
    assert (paid["jpy"]["badge"], paid["jpy"]["paidVs"]) == ("Paid", "¥3,000")
    assert gateway.get_invoice(eur.guid).status.value == "paid"
    assert gateway.get_invoice(jpy.guid).status.value == "paid"


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_sent_payment_is_not_paid_twice_by_accident(framework: str) -> None:
    gateway = make_gateway(chains={CHAIN: explorer_chain()})
    invoice = new_invoice(gateway)
    other = new_invoice(gateway, address=ADDRESSES[0])
    sent_hash = tx_hash(201)
    extra = {"guid": invoice.guid, "other": other.guid, "hashes": [sent_hash]}
    with browsing(framework, gateway, "safety", **extra) as (browser, _):
        step = browser.step("sent")
        pay(gateway, ether(step["sent"]["wallet"]["sent"][0]), tx=201)
        browser.next()
        done = browser.step("paid")
        assert browser.step("done")["problems"] == []
    # The wallet said it switched to anvil but stayed on chain 1: nothing was sent there.
    refused = step["refused"]
    assert "wallet_switchEthereumChain" in refused["calls"]
    assert "eth_sendTransaction" not in refused["calls"] and refused["chain"] == "0x1"
    assert "still on chain 1" in refused["status"] and "nothing was sent" in refused["status"]
    assert not refused["disabled"]  # nothing is in flight: the payer may try again

    sent = step["sent"]
    [tx] = sent["wallet"]["sent"]
    assert tx["chainId"] == hex(CHAIN) and tx["to"].lower() == invoice.address.lower()
    assert (sent["inflight"], sent["badge"]) == ("true", "Payment sent")
    assert not sent["payVisible"] and not sent["walletVisible"] and sent["walletDisabled"]
    assert sent["inflightItems"] == [
        {
            "tx": sent_hash,
            "stage": "sent",
            "text": "Sent from this browser, not yet seen on the network: 0x0000…00c9",
        }
    ]
    assert sent["payAgain"] == "Send another payment ($25.00 still due)"
    # A reload mid-payment: the transaction is remembered, the pay controls stay away.
    reloaded = step["reloaded"]
    assert (reloaded["inflight"], reloaded["badge"]) == ("true", "Payment sent")
    assert reloaded["inflightItems"] == sent["inflightItems"]
    assert not reloaded["payVisible"] and not reloaded["walletVisible"]
    assert reloaded["payAgain"] == "Send another payment ($25.00 still due)"
    # Paying again is an explicit choice; then the controls come back, enabled.
    again = step["again"]
    assert again["payVisible"] and again["walletVisible"] and not again["walletDisabled"]
    assert again["payAgain"] is None and again["focused"] == "wallet-pay"
    no_violations(step["audits"], ["sent"])

    for seen in (done["paid"], done["reloaded"]):
        assert (seen["badge"], seen["inflight"], seen["inflightVisible"]) == (
            "Paid",
            "false",
            False,
        )
    fresh = done["other"]
    assert (fresh["badge"], fresh["inflight"]) == ("Awaiting payment", "false")
    assert fresh["payVisible"] and fresh["walletVisible"] and not fresh["walletDisabled"]
    assert gateway.get_invoice(invoice.guid).paid_amount == Decimal(25)


class Clock:
    """The gateway's clock, moved on by the test to put deadlines behind."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_every_outcome_is_explained_with_whom_to_contact(framework: str) -> None:
    clock = Clock()
    gateway = make_gateway(clock=clock, chains={CHAIN: explorer_chain()})
    gateway.merchant.set(OWNER, NewProfile("Mugs & Co", None, SUPPORT))
    overpaid = new_invoice(gateway, address=ADDRESSES[0])
    late = new_invoice(gateway, deadlineSecs=60, address=ADDRESSES[1])
    partial = new_invoice(gateway, deadlineSecs=60, address=ADDRESSES[2])
    reversed_ = new_invoice(gateway, address=ADDRESSES[3])
    pay(gateway, "0.015", tx=11, to=overpaid.address)  # $30 on $25
    pay(gateway, "0.005", tx=13, to=partial.address)  # $10, then the deadline passes
    pay(gateway, "0.005", tx=14, to=reversed_.address)  # $10, then a reorg takes it back
    clock.now += 120
    pay(gateway, "0.0125", tx=12, to=late.address)  # all of it, after the deadline
    guids = {
        "reversed": reversed_.guid,
        "overpaid": overpaid.guid,
        "late": late.guid,
        "expiredPartial": partial.guid,
    }
    with browsing(framework, gateway, "outcomes", guids=guids) as (browser, _):
        browser.step("seen")
        [taken] = [
            t
            for t in gateway.list_transactions(OWNER, offset=0, limit=50)[0]
            if t.tx_hash == tx_hash(14)
        ]
        gateway.reorg_deposit(taken)
        browser.next()
        step = browser.step("outcomes")
        assert browser.step("done")["problems"] == []
    found = step["found"]
    contact = f"contact {SUPPORT}"
    assert found["overpaid"]["title"] == "Paid more than asked"
    assert found["overpaid"]["text"] == (
        f"You paid $5.00 more than the $25.00 due. To get the excess back, {contact}."
    )
    assert found["overpaid"]["contactHref"] == f"mailto:{SUPPORT}"
    assert found["overpaid"]["de"].startswith(
        "Sie haben 5,00\xa0$ mehr als die fälligen 25,00\xa0$"
    )
    assert found["late"]["title"] == "Paid after the deadline"
    assert found["late"]["text"].startswith("$25.00 arrived after this invoice had expired.")
    assert contact in found["late"]["text"] and found["late"]["badge"] == "Expired"
    assert found["expiredPartial"]["title"] == "Partly paid, then expired"
    assert found["expiredPartial"]["text"].startswith(
        "$10.00 of $25.00 arrived before this invoice expired; $15.00 was never paid."
    )
    assert (
        f"{contact} to complete the order or to get $10.00 back"
        in (found["expiredPartial"]["text"])
    )
    assert found["reversed"]["title"] == "Payment reversed"
    assert found["reversed"]["text"].startswith(
        "The payment of 0.005 ETH in transaction 0x0000…000e no longer counts"
    )
    assert found["reversed"]["badge"] == "Awaiting payment"  # and the page asks for all of it
    assert found["reversed"]["amountToken"] == "0.0125 ETH"
    assert {kind: seen["after"] for kind, seen in found.items()} == {kind: kind for kind in guids}
    no_violations(step["audits"], [f"outcome-{kind}" for kind in guids])
    assert gateway.get_invoice(reversed_.guid).paid_amount == 0


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_the_buyer_sees_what_they_send_to_on_any_screen(framework: str) -> None:
    gateway = make_gateway(chains={CHAIN: explorer_chain()})
    word = "Order" + "X" * 89  # 94 characters without a break
    invoice = new_invoice(
        gateway,
        description=f"Two mugs {word}",
        redirectUrl="https://shop.example/thanks",
        redirectAutomatically=True,
    )
    with browsing(framework, gateway, "trust", guid=invoice.guid) as (browser, _):
        opened = browser.step("open")
        pay(gateway, "25", token=USDT_ADDRESS, tx=21)
        browser.next()
        receipt = browser.step("receipt")["stayed"]
        assert browser.step("done")["problems"] == []
    for name, width in opened["widths"].items():
        assert width["document"] <= width["viewport"], (name, width)
    phone = opened["layout"]["phone"]
    assert phone["wallet"]["bottom"] <= phone["height"]  # above the fold
    assert phone["wallet"]["top"] < phone["qr"]["top"]  # the primary action first
    contract = opened["contract"]
    assert contract["label"] == "USDT contract"
    assert contract["shown"] == "0x5FbD…0aa3" and contract["title"] == USDT_ADDRESS
    assert contract["href"] == f"https://scan.example/address/{USDT_ADDRESS}"
    assert contract["clipboard"] == USDT_ADDRESS
    assert not contract["nativeRowVisible"]  # the coin has no contract to show
    no_violations(opened["audits"], ["token"])
    switched = opened["switched"]
    assert "lang=ja" in switched["url"] and switched["badge"] == "支払い待ち"
    assert switched["marker"] == "no reload" and len(switched["options"]) == 9
    assert "日本語" in switched["options"] and "Deutsch" in switched["options"]
    # The receipt of a paid invoice with redirectAutomatically stays to be read and printed.
    assert "view=receipt" in receipt["url"] and receipt["receiptVisible"]
    assert not receipt["noteVisible"] and receipt["width"]


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_the_page_follows_the_invoice_by_push_or_else_by_polling(framework: str) -> None:
    """With the invoice's event stream on the server, an update reaches the page with no
    read of the invoice; without it (404) the page polls every 2.5 s and still updates."""
    gateway = make_gateway()
    invoice = new_invoice(gateway)
    with browsing(framework, gateway, "following", guid=invoice.guid) as (browser, _):
        idle = browser.step("idle")
        pay(gateway, "0.0125", tx=31)
        browser.next()
        paid = browser.step("paid")
        assert browser.step("done")["problems"] == []
    assert paid["badge"] == "Paid"
    if has_event_stream():
        assert idle["stream"]["status"] == 200
        assert idle["stream"]["type"].startswith("text/event-stream")
        assert idle["idleReads"] <= 2  # the first read, and at most one safety poll
        assert paid["readsWhileWaiting"] <= 1 and paid["latencyMs"] < 2000
    else:
        assert idle["stream"]["status"] == 404  # asked for, refused: polling alone
        assert idle["idleReads"] >= 3  # the first read and a poll every 2.5 s
        assert paid["readsWhileWaiting"] >= 1 and paid["latencyMs"] < 8000


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_mined_payment_shows_as_detected_and_confirming_until_it_counts(framework: str) -> None:
    """The worker paused between "mined" and "confirmed": the record's provisional detected
    list (Gateway.record_detected, as a watcher's pass reports it) shows as "Payment
    detected, confirming (n of m)" with the pay controls put away, across a reload, until
    the transfer is confirmed and counted."""
    gateway = make_gateway(chains={CHAIN: explorer_chain()})
    invoice = new_invoice(gateway)
    sent_hash = tx_hash(301)
    extra = {"guid": invoice.guid, "hashes": [sent_hash]}
    with browsing(framework, gateway, "confirming", **extra) as (browser, _):
        sent = browser.step("sent")
        transfer = Deposit(
            chain_id=CHAIN,
            tx_hash=sent_hash,
            log_index=-1,
            token=NATIVE,
            from_=PAYER,
            to=invoice.address,
            amount=Decimal(ether(sent["tx"])),
            timestamp=int(gateway.now()),
            block_number=50,
            block_hash="0x" + f"{50:064x}",
        )
        gateway.record_detected(CHAIN, [transfer], {50: 1}, 3)  # mined, 1 of 3
        browser.next()
        step = browser.step("confirming")
        gateway.record_detected(CHAIN, [transfer], {50: 2}, 3)  # a block deeper
        browser.next()
        deeper = browser.step("deeper")["deeper"]
        gateway.record_deposit(transfer)  # deep enough: counted
        gateway.record_detected(CHAIN, [], {}, 3)
        browser.next()
        paid = browser.step("paid")["paid"]
        assert browser.step("done")["problems"] == []
    assert sent["sent"]["badge"] == "Payment sent"
    item = f"0.0125 ETH on the network, 1 of 3 confirmations: {sent_hash[:6]}…{sent_hash[-4:]}"
    for seen in (step["first"], step["reloaded"], step["stranger"]):
        assert seen["badge"] == "Payment detected, confirming (1 of 3)"
        assert seen["inflightItems"] == [{"tx": sent_hash, "stage": "confirming", "text": item}]
        assert not seen["payVisible"] and not seen["walletVisible"]
        assert seen["payAgain"] == "Send another payment ($25.00 still due)"
        assert seen["paidVs"] in ("", None) or not seen["paidVisible"]  # never counted yet
    assert deeper["badge"] == "Payment detected, confirming (2 of 3)"
    assert (paid["badge"], paid["inflight"], paid["paidVs"]) == ("Paid", "false", "$25.00")
    no_violations(step["audits"], ["confirming"])
