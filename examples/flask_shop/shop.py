"""A tiny Flask shop that takes crypto payments through paycore.

Everything except the lines marked ``paycore`` is the shop it was before: a product list, a
product page and an order page. paycore adds its HTTP interface under /paycore and a
gateway the "buy" route asks for an invoice.

    flask --app shop run        # from this folder, or: python shop.py

An order is fulfilled when its invoice is paid: a receiver of the ``invoice.paid`` signal
(``paycore_flask.signals``) ships it. The signal is sent once per change, after commit, by
the signal consumer: a thread of this process (``python shop.py``), or a separate worker
process in production, ``flask --app shop paycore worker``, which builds the app and so
connects the same receiver. An overpayment or a late payment, which send
``invoice.overpaid`` and ``invoice.late_payment``, never ships the order twice.

The order book (which orders shipped) lives in the shop's database, beside paycore's
tables, so the web process shows what a worker process shipped. Settings come from
``create_app({...})`` or ``SHOP_*`` environment variables (``SHOP_DATABASE_URL``).
"""

from __future__ import annotations

import threading
import time
from decimal import Decimal
from typing import Any

from flask import Flask, abort, jsonify, redirect, render_template_string
from sqlalchemy import BigInteger, Column, MetaData, String, Table, create_engine, select
from sqlalchemy.exc import IntegrityError
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

SHIPMENTS = Table(
    "shop_shipments",
    MetaData(),
    Column("guid", String(64), primary_key=True),
    Column("event_id", BigInteger, nullable=False),
    Column("shipped_at", BigInteger, nullable=False),
)


class Orders:
    """The shop's order book: which orders shipped, in the shop's database (its own table
    beside paycore's), so every process of the shop agrees; ``memory://`` keeps it in
    this process only."""

    def __init__(self, database_url: str) -> None:
        self._memory: dict[str, int] | None = None
        self._lock = threading.Lock()
        if database_url.startswith("memory:"):
            self._memory = {}
            return
        self._engine = create_engine(database_url)
        SHIPMENTS.metadata.create_all(self._engine)

    def ship(self, guid: str, event_id: int) -> bool:
        """Mark ``guid`` shipped; False if it already was (a repeat changes nothing)."""
        if self._memory is not None:
            with self._lock:
                if guid in self._memory:
                    return False
                self._memory[guid] = event_id
                return True
        try:
            with self._engine.begin() as db:
                row = {"guid": guid, "event_id": event_id, "shipped_at": int(time.time())}
                db.execute(SHIPMENTS.insert().values(row))
        except IntegrityError:
            return False
        return True

    def shipped(self) -> dict[str, int]:
        """Every shipped order's guid, with the id of the event that shipped it."""
        if self._memory is not None:
            with self._lock:
                return dict(self._memory)
        with self._engine.connect() as db:
            return {r.guid: r.event_id for r in db.execute(select(SHIPMENTS))}


INDEX = """<!doctype html><title>{{ name }}</title><h1>{{ name }}</h1>
<ul>{% for slug, p in products.items() %}
<li><a href="{{ url_for('product', slug=slug) }}">{{ p.name }}</a> - {{ p.price }} USD
<form method="post" action="{{ url_for('buy', slug=slug) }}"><button>Buy</button></form>
{% endfor %}</ul>"""


def create_app(config: dict[str, Any] | None = None) -> Flask:
    app = Flask(__name__)
    app.config.from_mapping(DEFAULTS)
    app.config.from_prefixed_env("SHOP")  # SHOP_DATABASE_URL=... in production
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

    # paycore: the shop's order book, and the receiver that ships a paid order. Whichever
    # process runs the signal consumer (a thread of this one, or `flask --app shop paycore
    # worker`) calls it, once per change.
    orders = Orders(app.config["DATABASE_URL"])
    app.extensions["shop.orders"] = orders
    connect_signals(app, state(app).gateway)

    def ship(sender: Flask, event: InvoiceEvent) -> None:
        # Once per change; keyed by invoice all the same, so that the one call a killed
        # worker may repeat (docs/signals.md) ships nothing twice.
        shipped = orders.ship(event.guid, event.id)
        sender.logger.info(
            "order %s paid (event %d): %s",
            event.guid,
            event.id,
            "shipped" if shipped else "already shipped",
        )

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
            shipped=guid in orders.shipped(),
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
