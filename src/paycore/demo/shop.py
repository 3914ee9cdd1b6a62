"""The demo's shop: a small Flask app that adds paycore with ``PayCore(app)``, served by
werkzeug's threaded server on a free loopback port.

It mirrors ``examples/flask_shop`` rather than importing it: that example hard-wires its
``Settings`` (mainnet, a fixed deposit address) inside ``create_app``, while the demo needs
paycore pointed at its own anvil, token and factory -- and an installed paycore has no
``examples/`` folder to import from. The paycore part is the same one line.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from paycore import Settings

from .errors import DemoError

PRODUCTS = {
    "mug": ("Enamel mug", "12.50"),
    "tee": ("T-shirt, size M", "10.00"),
}


def create_shop(settings: Settings) -> Any:
    """The shop's Flask app; paycore answers under /paycore."""
    try:
        from flask import Flask, abort, jsonify

        from paycore_flask import PayCore
    except ImportError:
        raise DemoError("the demo shop needs Flask: pip install 'paycore[flask]'") from None

    app = Flask("paycore_demo_shop")
    paycore = PayCore(app, settings=settings)  # the one line that adds the gateway

    @app.get("/")
    def index() -> Any:
        return jsonify(
            [{"slug": s, "name": name, "price": price} for s, (name, price) in PRODUCTS.items()]
        )

    @app.get("/orders/<guid>")
    def order(guid: str) -> Any:
        """What the shop's order page knows: paycore's view of the invoice."""
        from paycore.errors import InvoiceNotFound

        try:
            wire = paycore.gateway.invoice_wire(paycore.gateway.get_invoice(guid))
        except InvoiceNotFound:
            abort(404)
        return jsonify(order=guid, status=wire["status"], paid=wire["paidAmount"], of=wire["value"])

    return app


class _Late:
    """A WSGI app filled in after the socket is bound, so the shop's settings can name the
    port the server actually got (the invoice's paymentUrl points at it)."""

    def __init__(self) -> None:
        self.app: Any = None

    def __call__(self, environ: Any, start_response: Any) -> Any:
        return self.app(environ, start_response)


class ShopServer:
    """werkzeug's threaded WSGI server, bound at construction, serving on a thread."""

    def __init__(self) -> None:
        from werkzeug.serving import make_server

        # werkzeug would otherwise add its own handler and log every request to stderr.
        logging.getLogger("werkzeug").setLevel(logging.WARNING)
        self._late = _Late()
        self.server = make_server("127.0.0.1", 0, self._late, threaded=True)
        self.port = int(self.server.server_port)
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread: threading.Thread | None = None
        self._on_stop: Callable[[], None] | None = None

    def serve(self, app: Any, on_stop: Callable[[], None]) -> None:
        """Serve ``app``; ``on_stop`` (the gateway's close) runs once nothing is served."""
        self._late.app = app
        self._on_stop = on_stop
        self._thread = threading.Thread(
            target=self.server.serve_forever,
            kwargs={"poll_interval": 0.1},
            name="demo-shop-server",
            daemon=True,
        )
        self._thread.start()

    def stop(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            self.server.shutdown()
            self._thread.join(timeout=5)
        self.server.server_close()
        if self._on_stop is not None:
            self._on_stop()
