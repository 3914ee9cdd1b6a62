"""examples/litestar_service: the API still works, and a checkout becomes a payable invoice."""

from __future__ import annotations

from decimal import Decimal
from urllib.parse import parse_qs, urlsplit

from example_loader import load
from litestar.testing import TestClient

from paycore import Deposit, Settings

service = load("litestar_service/service.py")


def app_settings() -> Settings:
    return Settings(
        database_url="memory://",
        checkout_url="https://pay.example.com/checkout",
        prices={service.POL: "0.5", service.USDC: "1"},
    )


def test_the_service_routes_are_untouched() -> None:
    with TestClient(service.create_app(app_settings())) as client:
        assert [p["plan"] for p in client.get("/plans").json()] == ["starter", "pro"]
        assert client.get("/plans/pro").json()["credits"] == 25_000
        assert client.get("/plans/gold").status_code == 404


def test_checkout_redirects_to_the_payment_page_and_payment_completes_the_order() -> None:
    with TestClient(service.create_app(app_settings())) as client:
        started = client.post("/plans/starter/checkout", follow_redirects=False)
        assert started.status_code == 303
        location = urlsplit(started.headers["location"])
        assert location.netloc == "pay.example.com"
        guid = parse_qs(location.query)["invoice"][0]

        invoice = client.get(f"/paycore/invoice/{guid}").json()
        assert (invoice["value"], invoice["status"], invoice["chainId"]) == ("5", "init", 137)

        gateway = client.app.state.paycore
        gateway.record_deposit(
            Deposit(
                137,
                "0x" + "cd" * 32,
                0,
                service.USDC[4:],
                "0x" + "22" * 20,
                invoice["address"],
                Decimal("5"),
                gateway.now(),
            )
        )
        assert client.get(f"/orders/{guid}").json() == {
            "order": guid,
            "plan": "starter",
            "status": "paid",
        }
        assert client.get("/orders/missing").status_code == 404
