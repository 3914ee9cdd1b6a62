"""A tiny Flask shop that takes crypto payments through paycore.

Everything except the lines marked ``paycore`` is the shop it was before: a product list, a
product page and an order page. paycore adds its HTTP interface under /paycore and a
gateway the "buy" route asks for an invoice.

    flask --app shop run        # from this folder, or: python shop.py

An order is fulfilled when its invoice is paid: a receiver of the ``invoice.paid`` signal
(``paycore_flask.signals``) ships it. The signal is sent once per change, after commit, by
the signal consumer (a thread here; ``paycore worker --signals shop`` in production), so an
overpayment or a late payment, which send ``invoice.overpaid`` and
``invoice.late_payment``, never ships the order twice.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from flask import Flask, abort, jsonify, redirect, render_template_string
from werkzeug.wrappers import Response

from paycore import NATIVE, InvoiceEvent, Settings  # paycore
from paycore.errors import InvoiceNotFound  # paycore
from paycore_flask import PayCore, checkout_url, state  # paycore
from paycore_flask.signals import connect_signals, invoice_signal  # paycore

PRODUCTS: dict[str, dict[str, Any]] = {
    "mug": {"name": "Enamel mug", "price": Decimal("12.50")},
    "tee": {"name": "T-shirt, size M", "price": Decimal("25.00")},
    "cap": {"name": "Baseball cap", "price": Decimal("18.00")},
}

CHAIN_ID = 1
ETH = f"{CHAIN_ID}:{NATIVE}"
USDC = f"{CHAIN_ID}:0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48"

DEFAULTS: dict[str, Any] = {
    "SHOP_NAME": "Corner Shop",
    # The merchant's wallet: invoices belong to it, and only it can withdraw.
    "MERCHANT_ADDRESS": "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
    # A deposit address the merchant controls. Leave it out of the invoice once a chain
    # backend is installed: paycore then derives a fresh address per invoice.
    "DEPOSIT_ADDRESS": "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
    "DATABASE_URL": "sqlite:///shop.sqlite3",
    # The address buyers reach the shop at; None: the address each request came in at.
    "PUBLIC_URL": None,
}

INDEX = """<!doctype html><title>{{ name }}</title><h1>{{ name }}</h1>
<ul>{% for slug, p in products.items() %}
<li><a href="{{ url_for('product', slug=slug) }}">{{ p.name }}</a> - {{ p.price }} USD
<form method="post" action="{{ url_for('buy', slug=slug) }}"><button>Buy</button></form>
{% endfor %}</ul>"""


def create_app(config: dict[str, Any] | None = None) -> Flask:
    app = Flask(__name__)
    app.config.from_mapping(DEFAULTS)
    app.config.update(config or {})

    # paycore: one line mounts the whole interface under /paycore.
    paycore = PayCore(
        app,
        settings=Settings(
            database_url=app.config["DATABASE_URL"],
            public_url=app.config["PUBLIC_URL"],
            prices={ETH: "3000", USDC: "1"},  # a static price table; price plugins can replace it
        ),
    )

    # paycore: the shop's own order book; a real shop keeps it in its database.
    shipped: dict[str, int] = {}
    app.extensions["shop.shipped"] = shipped
    connect_signals(app, state(app).gateway)

    def ship(sender: Flask, event: InvoiceEvent) -> None:
        # At least once: a repeat after a crash must not ship twice, so key by invoice.
        if event.guid not in shipped:
            shipped[event.guid] = event.id

    invoice_signal("invoice.paid").connect(ship, sender=app, weak=False)

    @app.get("/")
    def index() -> str:
        return render_template_string(INDEX, name=app.config["SHOP_NAME"], products=PRODUCTS)

    @app.get("/products")
    def products() -> Response:
        return jsonify(
            [{"slug": s, "name": p["name"], "price": str(p["price"])} for s, p in PRODUCTS.items()]
        )

    @app.get("/products/<slug>")
    def product(slug: str) -> Response:
        item = PRODUCTS.get(slug) or abort(404)
        return jsonify(slug=slug, name=item["name"], price=str(item["price"]))

    # paycore: "buy" asks the gateway for an invoice and sends the buyer to its payment page.
    @app.post("/buy/<slug>")
    def buy(slug: str) -> Response:
        item = PRODUCTS.get(slug) or abort(404)
        invoice = paycore.gateway.create_invoice(
            app.config["MERCHANT_ADDRESS"],
            {
                "value": str(item["price"]),
                "chainId": CHAIN_ID,
                "description": item["name"],
                "acceptedTokens": [USDC, ETH],
                "address": app.config["DEPOSIT_ADDRESS"],
                "data": {"product": slug},
            },
            # The page under this app's /paycore, at the address the buyer came in at.
            checkout_url=checkout_url(),
        )
        return redirect(paycore.gateway.invoice_wire(invoice)["paymentUrl"], code=303)

    @app.get("/orders/<guid>")
    def order(guid: str) -> Response:
        try:
            invoice = paycore.gateway.get_invoice(guid)
        except InvoiceNotFound:
            abort(404)
        wire = paycore.gateway.invoice_wire(invoice)  # the JSON form, as /paycore serves it
        return jsonify(
            order=guid,
            product=wire["data"].get("product"),
            status=wire["status"],
            paid=wire["paidAmount"],
            of=wire["value"],
            shipped=guid in shipped,
        )

    @app.errorhandler(404)
    def not_found(error: Exception) -> tuple[str, int]:
        return "no such page in this shop", 404

    return app


if __name__ == "__main__":
    import threading

    from paycore_flask.signals import start_signal_thread

    shop = create_app()
    start_signal_thread(state(shop).gateway, threading.Event())
    shop.run(debug=True, use_reloader=False)
