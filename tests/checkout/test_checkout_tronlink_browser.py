"""A Tron invoice's checkout page in a real Chromium: "Pay with TronLink" through an injected
fake TronLink that records every call, and the merchant's name, logo and support contact.

The fake answers with transaction ids; the test then records the transfer as the Tron
watcher would, and the open page turns paid by itself. Screenshots land in
test-artifacts/checkout/tronlink/.
"""

from __future__ import annotations

import time
from decimal import Decimal

import pytest
from checkout_browser_driver import ARTIFACTS, Browser, require_browser, serve
from checkout_helpers import OWNER, make_gateway

from paycore import NATIVE, ChainConfig
from paycore.domain.records import Deposit
from paycore.merchant import NewProfile

pytestmark = [pytest.mark.node, pytest.mark.browser]

TRON = 728126428
TRX = f"{TRON}:{NATIVE}"
USDT_CONTRACT = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"
USDT = f"{TRON}:{USDT_CONTRACT}"
DEPOSIT = "TJRabPrwbZy45sbavfcjinPJC18kjpRTv8"
PAYER = "TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf"
LOGO = "https://cdn.shop.example/brand/logo.svg"
TRX_TX = "11" * 32
USDT_TX = "22" * 32


def test_a_tron_invoice_is_paid_with_tronlink_from_a_named_shop() -> None:
    require_browser()
    tron = ChainConfig(TRON, "tron-mainnet", 19, None, "TRX", 6)
    # 0.12 USD a TRX: 25 USD is 208.3333... TRX, asked for rounded up to the sun
    gateway = make_gateway(chains={TRON: tron}, prices={TRX: "0.12", USDT: "1"})
    try:
        gateway.merchant.set(OWNER, NewProfile("Mugs & Co", LOGO, "help@shop.example"))
        invoice = gateway.create_invoice(
            OWNER,
            {
                "value": "25",
                "chainId": TRON,
                "description": "Order #2048: one teapot",
                "acceptedTokens": [TRX, USDT],
                "address": DEPOSIT,
                "data": {"decimals": {USDT: 6}, "symbol": {USDT: "USDT"}},
            },
        )
        with serve("litestar", gateway) as base:
            artifacts = ARTIFACTS / "checkout" / "tronlink"
            browser = Browser(
                "tronlink", base, artifacts, guid=invoice.guid, payer=PAYER, logo=LOGO
            )
            try:
                sent = browser.step("sent")
                gateway.record_deposit(
                    Deposit(
                        chain_id=TRON,
                        tx_hash=USDT_TX,
                        log_index=0,
                        token=USDT_CONTRACT,
                        from_=PAYER,
                        to=DEPOSIT,
                        amount=Decimal(25),
                        timestamp=int(time.time()),
                    )
                )
                browser.next()
                paid = browser.step("paid")
                done = browser.step("done")
            finally:
                browser.close()
    finally:
        gateway.close()

    merchant = sent["merchant"]
    assert merchant["name"] == "Mugs & Co" and merchant["logoSrc"] == LOGO
    assert merchant["logoAlt"] == "Mugs & Co logo"
    assert merchant["support"] == "Help with this payment: help@shop.example"
    assert merchant["supportHref"] == "mailto:help@shop.example"
    # the policy lets the logo's origin in, and no other
    assert merchant["blocked"] == {
        "uri": "https://elsewhere.example/pixel.svg",
        "directive": "img-src",
    }

    before = sent["before"]
    assert before["tronVisible"] and before["tronButton"] == "Pay with TronLink"
    assert not before["walletVisible"]  # no EIP-1193 wallet here, and not an EVM chain
    assert before["amountToken"] == "208.333334 TRX"

    trx = sent["trx"]
    assert [c["name"] for c in trx["calls"]] == ["request", "sendTransaction"]
    assert trx["calls"][0]["args"] == [{"method": "tron_requestAccounts"}]
    # recipient and amount in sun, as an exact integer number
    assert trx["calls"][1]["args"] == [DEPOSIT, 208333334]
    assert trx["calls"][1]["types"] == ["string", "number"]
    assert trx["tx"] == TRX_TX and trx["status"].startswith("Sent from your wallet")
    assert trx["blocked"]  # in flight: a second payment needs "Send another payment"

    usdt = sent["usdt"]
    assert usdt["amountToken"] == "25 USDT"
    names = [c["name"] for c in usdt["calls"]]
    assert names == ["request", "triggerSmartContract", "sign", "sendRawTransaction"]
    contract, function, options, params, issuer = usdt["calls"][1]["args"]
    assert (contract, function, issuer) == (USDT_CONTRACT, "transfer(address,uint256)", PAYER)
    assert params == [
        {"type": "address", "value": DEPOSIT},
        {"type": "uint256", "value": "25000000"},  # 25 USDT in 6-decimal base units, as text
    ]
    assert options == {"feeLimit": 100_000_000, "callValue": 0}
    assert usdt["calls"][2]["args"] == [{"txID": USDT_TX, "raw_data": {}}]
    assert usdt["calls"][3]["args"][0]["signature"] == ["5e"]
    assert usdt["tx"] == USDT_TX

    assert paid["paid"]["status"] == "paid" and not paid["tronVisible"]
    assert paid["receiptMerchant"] == f"Mugs & Co ({OWNER})"
    audits = paid["audits"]
    assert len(audits) == 8  # two states, desktop and phone, light and dark
    assert {name: found for name, found in audits.items() if found} == {}
    # nothing went wrong but the image the test had the policy block, on purpose
    assert [p for p in done["problems"] if "https://elsewhere.example/" not in p] == []
    # the logo alone comes from elsewhere (on the page and its receipt), besides the request
    # Chromium reports for the blocked image before the policy stops it
    assert set(done["foreign"]) == {LOGO, "https://elsewhere.example/pixel.svg"}, done["foreign"]
    assert gateway.get_invoice(invoice.guid).status.value == "paid"
    for name in ("tronlink-sent", "tronlink-paid"):
        assert (artifacts / f"checkout-{name}.png").stat().st_size > 5000
