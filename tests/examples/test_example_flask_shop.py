"""examples/flask_shop: the shop still works, and a purchase becomes a payable invoice."""

from __future__ import annotations

from decimal import Decimal
from urllib.parse import parse_qs, urlsplit

from example_loader import load
from flask.testing import FlaskClient

from paycore import NATIVE, Deposit
from paycore_flask import state

shop = load("flask_shop/shop.py")


def client() -> FlaskClient:
    app = shop.create_app({"DATABASE_URL": "memory://"})
    return app.test_client()


def test_the_shop_pages_are_untouched() -> None:
    browser = client()
    page = browser.get("/")
    assert page.status_code == 200 and b"Enamel mug" in page.data and b"/buy/mug" in page.data
    assert browser.get("/products").json[0] == {
        "slug": "mug",
        "name": "Enamel mug",
        "price": "12.50",
    }
    assert browser.get("/products/none").data == b"no such page in this shop"
    # Under /paycore the gateway answers in its own words, not with the shop's 404 page.
    assert browser.get("/paycore/nope").data == b"not found: /nope"


def test_buying_redirects_to_the_payment_page_and_payment_completes_the_order() -> None:
    browser = client()
    bought = browser.post("/buy/tee")
    assert bought.status_code == 303
    location = urlsplit(bought.headers["location"])
    # The shop's own /paycore page, at the address the buyer came in at.
    assert f"{location.scheme}://{location.netloc}{location.path}" == (
        "http://localhost/paycore/checkout/"
    )
    assert browser.get(f"{location.path}?{location.query}").status_code == 200
    guid = parse_qs(location.query)["invoice"][0]

    invoice = browser.get(f"/paycore/invoice/{guid}").json  # the buyer's page reads this
    assert (invoice["value"], invoice["status"], invoice["description"]) == (
        "25",
        "init",
        "T-shirt, size M",
    )
    assert browser.get(f"/orders/{guid}").json["status"] == "init"

    # What the chain watcher does when the buyer pays 25 USD worth of ETH (3000 USD each).
    gateway = state(browser.application).gateway
    signals = gateway.signal_consumer()
    signals.run_once()  # the consumer the shop runs in a thread, one pass at a time here

    def pay(eth: str, n: int) -> None:
        gateway.record_deposit(
            Deposit(
                1,
                "0x" + f"{n:02x}" * 32,
                -1,
                NATIVE,
                "0x" + "11" * 20,
                invoice["address"],
                Decimal(eth),
                gateway.now(),
            )
        )

    pay("0.0084", 0xAB)
    assert browser.get(f"/orders/{guid}").json["shipped"] is False  # not before the consumer
    signals.run_once()
    assert browser.get(f"/orders/{guid}").json == {
        "order": guid,
        "product": "tee",
        "status": "paid",
        "paid": "25.2",  # 0.0084 ETH at 3000 USD
        "of": "25",
        "shipped": True,
    }
    shipped = browser.application.extensions["shop.orders"].shipped()
    pay("0.001", 0xAC)  # an overpayment: invoice.overpaid, so nothing ships again
    signals.run_once()
    assert browser.application.extensions["shop.orders"].shipped() == shipped
    assert browser.get("/orders/no-such-guid").status_code == 404
    assert browser.post("/buy/nothing").status_code == 404
