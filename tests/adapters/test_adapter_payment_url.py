"""An invoice's ``paymentUrl`` is fixed when it is created: under the host's mount prefix, at
the address the creating request came in at (or ``public_url``), and the same in every later
reply and in the events a worker process emits without any request to look at."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import attrs
import pytest
from flask import Flask
from flask.testing import FlaskClient
from litestar import Litestar, Request, post
from litestar.testing import TestClient

from paycore import Gateway, InvoiceEvent, Settings
from paycore.testing.chain import FakeChain
from paycore.testing.client import PaycoreClient
from paycore_flask import PayCore
from paycore_flask import checkout_url as flask_checkout_url
from paycore_litestar import PayCoreConfig, PayCorePlugin
from paycore_litestar import checkout_url as litestar_checkout_url
from paycore_storage import SqlStorage

pytestmark = pytest.mark.parametrize("paycore_backend", ["sqlite"])


@pytest.fixture
def settings(paycore_settings: Settings) -> Settings:
    """The plugin's settings without a fixed checkout page: the address is derived."""
    return attrs.evolve(paycore_settings, checkout_url=None)


class Clock:
    """The worker's clock, moved forward by the test."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def web(settings: Settings) -> Iterator[Gateway]:
    """The host app's gateway."""
    gateway = Gateway(settings, storage=SqlStorage(settings.database_url), entry_points=False)
    yield gateway
    gateway.close()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def worker(settings: Settings, clock: Clock) -> Iterator[Gateway]:
    """A second process's gateway on the same database, as ``paycore worker`` builds it:
    no adapter, no request, no mount prefix of its own."""
    storage = SqlStorage(settings.database_url)
    gateway = Gateway(settings, storage=storage, entry_points=False, clock=clock)
    yield gateway
    gateway.close()


class ShopClient(FlaskClient):
    """Flask's test client sending ``Host: shop.example:8443``, as a browser would."""

    def open(self, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("base_url", "http://shop.example:8443")
        return super().open(*args, **kwargs)


def flask_client(gateway: Gateway) -> Any:
    app = Flask("shop")
    app.test_client_class = ShopClient
    PayCore(app, gateway=gateway, prefix="/pay")
    return app.test_client()


def litestar_client(gateway: Gateway) -> Iterator[Any]:
    app = Litestar([], plugins=[PayCorePlugin(PayCoreConfig(gateway=gateway, prefix="/pay"))])
    with TestClient(app, base_url="http://shop.example:8443") as client:
        yield client


def _clients(kind: str, gateway: Gateway) -> Iterator[Any]:
    if kind == "flask":
        yield flask_client(gateway)
    else:
        yield from litestar_client(gateway)


@pytest.mark.parametrize("kind", ["flask", "litestar"])
def test_payment_url_follows_the_host_and_prefix_into_worker_events(
    kind: str, web: Gateway, worker: Gateway
) -> None:
    paid: list[InvoiceEvent] = []
    worker.on("invoice.paid", name="test.paid")(paid.append)
    signals = worker.signal_consumer()
    signals.run_once()  # the handler's position starts here
    for http in _clients(kind, web):
        client = PaycoreClient(http, prefix="/pay")
        client.register()
        chain = FakeChain(worker)
        made = client.post("/invoice", chain.invoice_fields("5"))
        assert made.status == 201, made.body
        guid = made.json["guid"]
        url = made.json["paymentUrl"]
        assert url == f"http://shop.example:8443/pay/checkout/?invoice={guid}"

        page = http.get(url.removeprefix("http://shop.example:8443"))
        assert page.status_code == 200
        assert "text/html" in page.headers["content-type"]

        chain.pay_exact(guid)  # attributed by the worker's gateway, outside any request
        signals.run_once()
        assert [e.invoice["paymentUrl"] for e in paid] == [url]
        assert client.get(f"/invoice/{guid}").json["paymentUrl"] == url
        assert worker.invoice_wire(worker.get_invoice(guid))["paymentUrl"] == url


def test_public_url_wins_over_the_request_address(
    settings: Settings, worker: Gateway, clock: Clock
) -> None:
    public = attrs.evolve(settings, public_url="https://pay.shop.example/")
    gateway = Gateway(public, storage=SqlStorage(settings.database_url), entry_points=False)
    try:
        client = PaycoreClient(flask_client(gateway), prefix="/pay")
        client.register()
        made = client.post("/invoice", FakeChain(gateway).invoice_fields("5"))
        guid = made.json["guid"]
        assert made.json["paymentUrl"] == f"https://pay.shop.example/pay/checkout/?invoice={guid}"
        # The worker has no public_url of its own: the stored page still wins.
        expired: list[InvoiceEvent] = []
        worker.on("invoice.expired", name="test.expired")(expired.append)
        signals = worker.signal_consumer()
        signals.run_once()
        clock.now = made.json["deadline"] + 1
        assert worker.expire_due() == 1  # the sweeper's pass
        signals.run_once()
        assert [e.invoice["paymentUrl"] for e in expired] == [made.json["paymentUrl"]]
    finally:
        gateway.close()


def test_an_invoice_made_by_host_code_links_under_the_mount_prefix(settings: Settings) -> None:
    gateway = Gateway(
        attrs.evolve(settings, public_url="https://shop.example"),
        storage=SqlStorage(settings.database_url),
        entry_points=False,
    )
    try:
        PayCore(Flask("shop"), gateway=gateway, prefix="/pay")
        chain = FakeChain(gateway)
        invoice = gateway.create_invoice("0x" + "11" * 20, chain.invoice_fields("1"))
        assert invoice.checkout_url == "https://shop.example/pay/checkout"
    finally:
        gateway.close()


def test_a_configured_checkout_url_is_kept_as_given(settings: Settings) -> None:
    mine = attrs.evolve(settings, checkout_url="https://shop.example/pay-here/")
    assert mine.checkout_url == "https://shop.example/pay-here"
    with pytest.raises(Exception, match="public_url: must be an absolute http"):
        Settings(public_url="shop.example")


def test_host_views_creating_invoices_get_the_same_link(web: Gateway) -> None:
    """``paycore_flask.checkout_url()`` and ``paycore_litestar.checkout_url(request, gw)``
    resolve the page as paycore's own POST /invoice does."""
    owner = "0x" + "22" * 20
    fields = FakeChain(web).invoice_fields("1")

    app = Flask("shop")
    app.test_client_class = ShopClient
    PayCore(app, gateway=web, prefix="/pay")

    @app.post("/buy")
    def buy() -> str:
        made = web.create_invoice(owner, dict(fields), checkout_url=flask_checkout_url())
        return str(web.invoice_wire(made)["paymentUrl"])

    bought = app.test_client().post("/buy").text
    assert bought.startswith("http://shop.example:8443/pay/checkout/?invoice=")

    @post("/buy")
    async def buy_here(request: Request[Any, Any, Any]) -> str:
        page = litestar_checkout_url(request, web)
        return str(
            web.invoice_wire(web.create_invoice(owner, dict(fields), checkout_url=page))[
                "paymentUrl"
            ]
        )

    plugin = PayCorePlugin(PayCoreConfig(gateway=web, prefix="/pay"))
    with TestClient(Litestar([buy_here], plugins=[plugin]), base_url="https://shop.example") as c:
        assert c.post("/buy").text.startswith("https://shop.example/pay/checkout/?invoice=")


@pytest.mark.parametrize(
    "root",
    ['http://evil.example/"><script>', "http://shop.example/?x=1", "javascript:alert(1)", ""],
)
def test_an_address_that_is_no_plain_base_makes_no_link(web: Gateway, root: str) -> None:
    assert web.checkout_url_for(root, "/pay") == "http://127.0.0.1:8000/pay/checkout"
