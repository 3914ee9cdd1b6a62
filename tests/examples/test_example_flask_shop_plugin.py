"""docs/testing.md's example, run: the Flask shop tested with paycore's pytest plugin ships
an overpaid order once."""

from __future__ import annotations

import pytest
from example_loader import load

from paycore import NATIVE, Settings
from paycore.testing.chain import FakeChain
from paycore_flask import state

shop = load("flask_shop/shop.py")


@pytest.mark.parametrize("paycore_backend", ["memory", "sqlite"])
def test_an_order_ships_once(paycore_settings: Settings) -> None:
    app = shop.create_app({"DATABASE_URL": paycore_settings.database_url})
    gateway = state(app).gateway
    signals = gateway.signal_consumer()
    signals.run_once()
    chain = FakeChain(gateway, chain_id=1, token=NATIVE, price="3000")

    guid = app.test_client().post("/buy/tee").headers["location"].split("invoice=")[1]
    chain.overpay(guid, "0.001")
    signals.run_once()
    assert app.test_client().get(f"/orders/{guid}").json["shipped"] is True
    assert len(app.extensions["shop.orders"].shipped()) == 1
    gateway.close()
