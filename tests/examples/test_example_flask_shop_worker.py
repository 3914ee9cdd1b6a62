"""examples/flask_shop with a separate worker process, as in production: the web process
takes the order, the fake chain pays it, and ``flask --app shop paycore worker`` (which
builds the app, so its ``connect_signals`` receiver) ships it, exactly once, through an
overpayment; the web process shows the order shipped. On SQLite and PostgreSQL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from example_loader import EXAMPLES, load
from sqlalchemy.engine import URL

from paycore import NATIVE
from paycore.testing.chain import FakeChain
from paycore_flask import state
from paycore_storage.engine import database_url

pytestmark = pytest.mark.slow  # a worker process, waited on

shop = load("flask_shop/shop.py")
QUEUE = "signal:flask:shop"  # connect_signals names it for the app, "shop" in the worker


def wait_until(check: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def shop_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'shop.sqlite3'}"
    new_schema: Callable[[], URL] = request.getfixturevalue("postgres_schema")
    return database_url(new_schema()).render_as_string(hide_password=False)


def test_a_separate_worker_ships_the_order_once(shop_url: str, tmp_path: Path) -> None:
    app = shop.create_app({"DATABASE_URL": shop_url})  # the web process
    gateway = state(app).gateway
    browser = app.test_client()
    env = {**os.environ, "SHOP_DATABASE_URL": shop_url, "PAYCORE_WORKER_POLL_INTERVAL": "0.1"}
    log_path = tmp_path / "worker.log"
    command = [sys.executable, "-m", "flask", "--app", str(EXAMPLES / "flask_shop" / "shop.py")]
    command += ["paycore", "worker", "--no-dispatch", "--no-sweep", "--no-watch", "--no-prices"]
    command += ["--no-prune"]
    with open(log_path, "wb") as log:
        worker = subprocess.Popen(
            command, cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT
        )
    try:

        def opened() -> bool:
            with gateway.storage.transaction() as tx:
                return tx.read_outbox(QUEUE, 1) is not None

        wait_until(opened, "the worker to open the shop's signal queue", timeout=60)
        guid = browser.post("/buy/tee").headers["location"].split("invoice=")[1]
        chain = FakeChain(gateway, chain_id=1, token=NATIVE, price="3000")
        chain.overpay(guid, "0.001")  # invoice.paid, then invoice.overpaid
        wait_until(lambda: browser.get(f"/orders/{guid}").json["shipped"], "the order to ship")
        time.sleep(1.0)  # a second call would have come by now
    finally:
        worker.send_signal(signal.SIGTERM)
        code = worker.wait(timeout=30)
    text = log_path.read_text(errors="replace")
    assert code == 0, text
    assert "signal handlers: 1 served (flask:shop)" in text
    assert [line for line in text.splitlines() if guid in line] == [
        line for line in text.splitlines() if f"order {guid} paid" in line and "shipped" in line
    ]
    [shipped] = [line for line in text.splitlines() if f"order {guid} paid" in line]
    assert shipped.endswith(": shipped")
    order = browser.get(f"/orders/{guid}").json
    assert (order["status"], order["shipped"]) == ("paid", True)
    assert list(app.extensions["shop.orders"].shipped()) == [guid]
    gateway.close()
