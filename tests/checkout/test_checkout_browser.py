"""The checkout page in a real Chromium against a real server, under both adapters.

The server runs in this process on a loopback port with a memory gateway the test holds, so
the test can record deposits the way a chain watcher would and watch the open page go from
init to partialPaid to paid without a reload. Screenshots land in test-artifacts/.

Needs Debian's chromium (``apt-get install -y chromium``) and the npm package playwright-core;
skipped without them unless ``PAYCORE_REQUIRE_NODE=1`` (CI), where that is a failure.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from checkout_browser_driver import ARTIFACTS, Browser, require_browser, serve
from checkout_helpers import CHAIN, DEPOSIT, OWNER, USDT_ADDRESS, make_gateway, new_invoice, pay

from paycore import ChainConfig, Gateway

pytestmark = [pytest.mark.node, pytest.mark.browser]


@pytest.fixture(scope="module", autouse=True)
def _tools() -> None:
    require_browser()


#: Languages each state is audited in (the page's own switcher chooses them).
AUDIT_LANGUAGES = ("en", "de", "ja")


def explorer_chain() -> ChainConfig:
    """anvil with block explorer links, so the page's transaction and contract links are
    there to audit (without them a link's name cannot mismatch its text)."""
    return ChainConfig(
        CHAIN,
        "anvil",
        0,
        None,
        "ETH",
        18,
        explorer_url="https://scan.example/tx/{tx}",
        explorer_address_url="https://scan.example/address/{address}",
    )


@pytest.fixture(params=["litestar", "flask"])
def served(request: pytest.FixtureRequest) -> Iterator[tuple[str, Gateway, str]]:
    gateway = make_gateway(chains={CHAIN: explorer_chain()})
    try:
        with serve(request.param, gateway) as base:
            yield base, gateway, request.param
    finally:
        gateway.close()


def test_checkout_page_follows_an_invoice_to_paid(served: tuple[str, Gateway, str]) -> None:
    base, gateway, framework = served
    invoice = new_invoice(gateway)
    artifacts = ARTIFACTS / "checkout" / framework
    browser = Browser("deposits", base, artifacts, guid=invoice.guid)
    try:
        _follow(browser, gateway, invoice.guid)
    finally:
        browser.close()
    for name in (
        "init",
        "init-mobile",
        "init-mobile-dark",
        "init-dark",
        "partial",
        "paid",
        "not-found",
        "expired",
    ):
        assert (artifacts / f"checkout-{name}.png").stat().st_size > 5000
    for state in ("awaiting", "partial", "paid", "receipt", "expired"):
        for language in AUDIT_LANGUAGES:
            for variant in ("desktop-light", "desktop-dark", "phone-light", "phone-dark"):
                path = artifacts / f"state-{state}-{language}-{variant}.png"
                assert path.stat().st_size > 5000


def _follow(browser: Browser, gateway: Gateway, guid: str) -> None:
    step = browser.step("rendered")
    first, later = step["first"], step["later"]
    assert (first["state"], first["status"], first["badge"]) == ("init", "init", "Awaiting payment")
    assert first["description"] == "Order #1042: two mugs"
    assert first["amountVs"] == "$25.00"
    assert first["amountToken"] == "0.0125 ETH"  # 25 USD at 2000 USD/ETH
    assert first["address"] == DEPOSIT
    assert first["network"] == f"anvil (chain {CHAIN})"
    link = f"ethereum:{DEPOSIT}@{CHAIN}?value=12500000000000000"
    assert first["walletHref"] == link
    assert first["qrSrc"].endswith("checkout/qr?data=" + _quoted(link))
    assert first["qrWidth"] > 0 and first["qrVisible"] and first["qrReason"] == "exact"
    assert "0.0125 ETH" in first["qrAlt"]
    assert first["choices"] == ["ETH", "USDT", "0xe7f1…0512"]
    assert not first["paidVisible"] and not first["paymentsVisible"]
    # 90 hours by default, counting down
    assert 89 * 3600 < first["seconds"] <= 90 * 3600 and first["countdown"].startswith("3 d 17 h")
    assert later["seconds"] < first["seconds"]

    usdt, unpriced = step["usdt"], step["unpriced"]
    assert usdt["amountToken"] == "25 USDT"
    assert usdt["walletHref"] == (
        f"ethereum:{USDT_ADDRESS}@{CHAIN}/transfer?address={DEPOSIT}&uint256=25000000"
    )
    assert unpriced["qrReason"] == "price" and "no price" in unpriced["amountToken"]
    assert unpriced["walletHref"] == f"ethereum:{DEPOSIT}@{CHAIN}"
    assert step["copied"] == {
        "button": "Copied",
        "clipboard": DEPOSIT,
        "announced": f"Copied {DEPOSIT}",  # for screen readers, in a live region
    }

    pay(gateway, "0.005", tx=1)  # $10 of $25
    browser.next()
    step = browser.step("partial")
    partial = step["partial"]
    assert (partial["state"], partial["badge"]) == ("partialPaid", "Partially paid")
    assert partial["marker"] == "no reload" and f"?invoice={guid}" in step["url"]
    assert partial["paidVisible"] and partial["paidVs"] == "$10.00"
    assert (partial["tokenLabel"], partial["amountToken"]) == ("Still to send", "0.0075 ETH")
    assert partial["walletHref"] == f"ethereum:{DEPOSIT}@{CHAIN}?value=7500000000000000"
    assert partial["waitedMs"] < 8000  # polled every 2.5 s
    assert partial["paymentsVisible"]
    payments = [p.split("\n") for p in partial["payments"]]
    assert payments == [["0.005 ETH", "$10.00", "0x0000…0001"]]  # amount, value, tx

    pay(gateway, "0.0075", tx=2)  # the remaining $15
    browser.next()
    paid = browser.step("paid")["paid"]
    assert (paid["state"], paid["badge"]) == ("paid", "Paid")
    assert paid["marker"] == "no reload"
    assert paid["paidVs"] == "$25.00" and paid["countdown"] == "Paid"
    assert not paid["qrVisible"]  # nothing left to send
    assert len(paid["payments"]) == 2 and paid["payments"][1].startswith("0.0075 ETH")
    assert paid["title"].startswith("Paid")

    errors = browser.step("errors")
    missing = "00000000-0000-4000-8000-000000000000"
    assert f'No invoice "{missing}" exists' in errors["notFound"]["text"]
    assert not errors["notFound"]["invoiceVisible"]
    assert "names no invoice" in errors["noGuid"]
    assert "exists" in errors["badGuid"]

    expiring = new_invoice(gateway, deadlineSecs=5, description="A quick one")
    browser.next(expiring.guid)
    expiry = browser.step("expired")
    assert expiry["before"]["status"] == "init" and expiry["before"]["seconds"] <= 5
    assert expiry["before"]["description"] == "A quick one"
    expired = expiry["expired"]
    assert (expired["badge"], expired["countdown"]) == ("Expired", "Expired")
    assert not expired["qrVisible"] and "Do not send" in expired["statusText"]
    # axe-core (WCAG 2.1 A and AA, and best practice): no violation in any state, in three
    # languages, on a desktop and a phone, light and dark, with explorer links on the page
    audits = expiry["audits"]
    assert audits.pop("control") == ["button-name"]  # the check does find a violation
    assert sorted(audits) == sorted(
        f"{state}-{language}-{viewport}-{scheme}"
        for state in ("awaiting", "partial", "paid", "receipt", "expired")
        for language in AUDIT_LANGUAGES
        for viewport in ("desktop", "phone")
        for scheme in ("light", "dark")
    )
    assert {name: found for name, found in audits.items() if found} == {}

    done = browser.step("done")
    assert done["problems"] == [] and done["foreign"] == []  # no errors, nothing off-origin
    assert gateway.get_invoice(guid).status.value == "paid"


def _quoted(text: str) -> str:
    from urllib.parse import quote

    # encodeURIComponent leaves A-Z a-z 0-9 - _ . ! ~ * ' ( ) alone
    return quote(text, safe="-_.!~*'()")


def test_checkout_page_speaks_the_payers_language() -> None:
    """German and Japanese by ?lang=, Spanish from the browser's languages: translated words,
    the html lang attribute, and amounts in the locale's own format."""
    gateway = make_gateway()
    try:
        with serve("litestar", gateway) as base:
            invoice = new_invoice(gateway, value="1234.5")
            browser = Browser(
                "languages", base, ARTIFACTS / "checkout" / "languages", guid=invoice.guid
            )
            try:
                pages = browser.step("languages")
                done = browser.step("done")
            finally:
                browser.close()
    finally:
        gateway.close()
    de, ja, es = pages["de"], pages["ja"], pages["es"]
    assert de["htmlLang"] == "de" and ja["htmlLang"] == "ja" and es["htmlLang"] == "es-ES"
    assert (de["badge"], de["heading"], de["copyAddressText"]) == (
        "Zahlung ausstehend",
        "Zahlung",
        "Adresse kopieren",
    )
    assert de["amountVs"] == "1.234,50\xa0$"  # German separators, the sign after the number
    assert de["amountToken"] == "0,61725 ETH"  # 1234.5 USD at 2000 USD/ETH, every digit kept
    assert de["addressLabel"].startswith("Einzahlungsadresse auf anvil (Chain 31337)")
    assert de["countdown"].startswith("3 T 17 Std")
    assert de["legend"] == "Bezahlen mit" and de["title"].startswith("Zahlung ausstehend:")
    assert (ja["badge"], ja["countdownLabel"]) == ("支払い待ち", "残り時間")
    assert ja["amountVs"] == "$1,234.50" and ja["amountToken"] == "0.61725 ETH"
    assert ja["addressLabel"].startswith("anvil（チェーン 31337） の入金アドレス")
    assert (es["badge"], es["heading"]) == ("Esperando el pago", "Pago")
    assert es["amountVs"] == "1234,50\xa0US$"  # es-ES: no grouping below 10 000
    assert es["amountToken"] == "0,61725 ETH"
    assert "red" in es["qrNote"] and "0,61725 ETH" in es["qrNote"]
    # the link keeps the exact wire amount whatever the locale shows
    assert es["walletHref"].endswith("?value=617250000000000000")
    assert done["problems"] == [] and done["foreign"] == []
    for name in ("de", "ja", "es"):
        for variant in ("", "-mobile-dark"):
            path = ARTIFACTS / "checkout" / "languages" / f"checkout-lang-{name}{variant}.png"
            assert path.stat().st_size > 5000


def test_checkout_page_leads_back_to_the_shop_and_shows_a_receipt() -> None:
    """redirectUrl, cancelUrl and redirectAutomatically on the page; explorer links from the
    chain's configured template; the receipt view, translated, on screen and in print."""
    from paycore import ChainConfig

    anvil = ChainConfig(
        31337, "anvil", 0, None, "ETH", 18, explorer_url="https://scan.example/tx/{tx}"
    )
    gateway = make_gateway(chains={31337: anvil})
    try:
        with serve("litestar", gateway) as base:
            redirect = f"{base}/prices?from=checkout"
            invoice = new_invoice(
                gateway,
                redirectUrl=redirect,
                cancelUrl="https://shop.example/cart",
                redirectAutomatically=True,
            )
            artifacts = ARTIFACTS / "checkout" / "return"
            browser = Browser("returning", base, artifacts, guid=invoice.guid, redirect=redirect)
            try:
                opened = browser.step("open")["open"]
                pay(gateway, "0.0125", tx=7)
                browser.next()
                paid = browser.step("paid")
                receipt = browser.step("receipt")
                done = browser.step("done")
            finally:
                browser.close()
    finally:
        gateway.close()
    open_ = opened
    assert open_["cancelVisible"] and open_["cancelHref"] == "https://shop.example/cart"
    assert not open_["returnVisible"]
    assert open_["warning"].startswith("Send only on anvil (chain 31337).")
    assert open_["quoteVisible"] and open_["quote"].startswith("Exchange rate of ")
    seen = paid["paid"]
    assert seen["badge"] == "Paid" and seen["returnVisible"] and seen["backHref"] == redirect
    assert not seen["cancelVisible"] and not seen["quoteVisible"]
    assert seen["redirectText"].startswith("Returning to the shop in ")
    assert seen["receiptHref"].endswith("view=receipt")
    tx = "0x" + f"{7:064x}"
    assert seen["txHref"] == f"https://scan.example/tx/{tx}"
    assert 2000 < paid["redirectedAfterMs"] < 9000 and paid["landed"] == redirect
    stayed = receipt["stayed"]
    assert "view=" not in stayed["url"] and "/checkout/" in stayed["url"]
    assert not stayed["noteVisible"]
    shown = receipt["shown"]
    assert not shown["invoiceVisible"] and shown["title"] == "Zahlungsbeleg"
    assert shown["heading"] == "Order #1042: two mugs"
    assert shown["merchant"] == OWNER and shown["amount"] == "25,00\xa0$"
    assert shown["network"] == "anvil (Chain 31337)" and "UTC" in shown["date"]
    assert shown["payments"] == [f"0,0125 ETH\n{tx}"]
    assert shown["txHrefs"] == [f"https://scan.example/tx/{tx}"]
    assert shown["printVisible"] and not shown["printButtonPrinted"]
    assert done["problems"] == [] and done["foreign"] == []
    for name in ("paid-return", "receipt", "receipt-mobile-dark", "receipt-print"):
        assert (artifacts / f"checkout-{name}.png").stat().st_size > 5000
