"""Prices through the Gateway: GET /prices with its fetchedAt and vsCurrency, deposits that
wait for a fresh price and are valued at it, several vsCurrencies, the rate lock, pegs and
static fallbacks, one table across processes, and the worker's refresher loop."""

from __future__ import annotations

import json
import threading
import time
from decimal import Decimal
from pathlib import Path

import pytest
from prices_helpers import ADDRESS, ETH, OWNER, T0, USDC, USDT, Board, Clock, gateway, new_invoice

from paycore import Deposit, Gateway, Status
from paycore.api.http import Request
from paycore.api.routing import dispatch
from paycore.api.table import build_router
from paycore.errors import InvalidInput
from paycore.runtime.worker import run_worker
from paycore_storage import SqlStorage


def deposit(n: int, amount: str, ts: int, token: str = USDC) -> Deposit:
    address = token.split(":")[1]
    return Deposit(1, f"0x{n:064x}", 0, address, "0x" + "22" * 20, ADDRESS, Decimal(amount), ts)


def get_prices(gw: Gateway, query: str = "") -> tuple[int, object]:
    answer = dispatch(gw, build_router(), Request("GET", "/prices", query))
    body = answer.body.decode()
    return answer.status, json.loads(body) if answer.status == 200 else body


def test_get_prices_shows_the_table_in_force_and_its_fetched_at() -> None:
    clock = Clock()
    api = Board("coingecko")
    api.put("usd", ETH, "3000.5", as_of=T0 - 40)
    api.put("usd", USDC, "1", as_of=T0 - 10)
    gw = gateway(api, clock=clock)
    gw.refresh_prices()
    assert get_prices(gw) == (
        200,
        {"vsCurrency": "usd", "fetchedAt": T0 - 40, "prices": {ETH: 3000.5, USDC: 1}},
    )
    clock.t += 10_000
    gw.pricing.invalidate()
    assert get_prices(gw) == (200, {"vsCurrency": "usd", "fetchedAt": T0 + 10_000, "prices": {}})


def test_get_prices_per_vs_currency() -> None:
    api = Board("coingecko")
    api.put("usd", ETH, "3000")
    api.put("eur", ETH, "2750")
    gw = gateway(api, vs_currencies=("eur",))
    gw.refresh_prices()
    assert get_prices(gw, "vsCurrency=EUR")[1] == {
        "vsCurrency": "eur",
        "fetchedAt": T0,
        "prices": {ETH: 2750},
    }
    assert get_prices(gw, "vsCurrency=gbp") == (
        400,
        "invalid request: vsCurrency: must be one of usd, eur",
    )


def test_a_deposit_waits_for_a_fresh_price_and_is_valued_at_it() -> None:
    """record_deposit parks a deposit with a stale price, as the watcher's ingest does,
    instead of raising; recorded again once the price is fresh, it is valued at it."""
    clock = Clock()
    api = Board("coingecko")
    api.put("usd", USDC, "0.5")  # a rate that will be stale by the time money arrives
    gw = gateway(api, clock=clock, max_price_age=600)
    gw.refresh_prices()
    guid = new_invoice(gw)
    api.prices.clear()
    clock.t += 601
    assert gw.record_deposit(deposit(1, "100", clock.t)) == []
    [parked] = gw.parking.of_chain(1, 10)
    assert parked.deposit == deposit(1, "100", clock.t) and "601 s old" in parked.reason
    assert gw.get_invoice(guid).payments == ()
    assert gw.list_transactions(OWNER, offset=None, limit=None)[1] == 0
    # A later deposit to the same address waits behind it, priced or not.
    assert gw.record_deposit(deposit(2, "1", clock.t)) == []
    assert [p.deposit.tx_hash for p in gw.parking.of_chain(1, 10)] == [
        deposit(1, "100", clock.t).tx_hash,
        deposit(2, "1", clock.t).tx_hash,
    ]
    api.put("usd", USDC, "1")
    gw.refresh_prices()
    paid, overpaid = gw.record_deposit(deposit(1, "100", clock.t))
    assert paid.status is Status.PAID and paid.payments[0].vs_value == Decimal(100)
    assert len(overpaid.payments) == 2  # the one parked behind it, in order
    assert gw.parking.of_chain(1, 10) == []
    assert gw.record_deposit(deposit(1, "100", clock.t)) == []  # counted once


def test_a_token_nobody_prices_is_parked_not_zero() -> None:
    gw = gateway(Board("coingecko"))
    guid = new_invoice(gw)
    assert gw.record_deposit(deposit(1, "100", T0)) == []
    assert [p.deposit.tx_hash for p in gw.parking.of_chain(1, 10)] == [
        deposit(1, "100", T0).tx_hash
    ]
    assert gw.get_invoice(guid).paid_amount == 0
    assert USDC in gw.pricing.demanded  # the refresher will ask for it


@pytest.mark.parametrize(
    ("change", "text"),
    [
        ({"amount": Decimal("-1")}, "invalid request: deposit.amount: must be at least 0"),
        ({"amount": Decimal("NaN")}, "invalid request: deposit.amount: must be a finite Decimal"),
        ({"amount": 1.5}, "invalid request: deposit.amount: must be a finite Decimal"),
        ({"to": "0x1234"}, "invalid request: deposit.to: not a 20-byte hex address"),
        ({"token": "usdc"}, "invalid request: deposit.token: not a 20-byte hex address"),
        ({"chain_id": "1"}, "invalid request: deposit.chain_id: must be an integer"),
        ({"tx_hash": ""}, "invalid request: deposit.tx_hash: must be a non-empty string"),
    ],
)
def test_a_malformed_deposit_is_a_paycore_error_with_one_line(
    change: dict[str, object], text: str
) -> None:
    import attrs

    from paycore.errors import PaycoreError

    gw = gateway(Board("coingecko"))
    new_invoice(gw)
    with pytest.raises(PaycoreError) as raised:
        gw.record_deposit(attrs.evolve(deposit(1, "100", T0), **change))
    assert raised.value.text.startswith(text) and "\n" not in raised.value.text
    assert gw.parking.of_chain(1, 10) == []
    assert gw.list_transactions(OWNER, offset=None, limit=None)[1] == 0


def test_the_invoice_vs_currency_picks_the_table() -> None:
    api = Board("coingecko")
    api.put("usd", USDC, "1")
    api.put("eur", USDC, "0.92")
    gw = gateway(api, vs_currencies=("eur",))
    gw.refresh_prices()
    eur = new_invoice(gw, vsCurrency="EUR")
    assert gw.get_invoice(eur).vs_currency == "eur"
    (change,) = gw.record_deposit(deposit(1, "50", T0))
    assert change.guid == eur and change.paid_amount == Decimal(46)
    with pytest.raises(InvalidInput, match="vsCurrency"):
        new_invoice(gw, vsCurrency="jpy")


def test_rate_lock_values_deposits_before_the_deadline_at_the_creation_quote() -> None:
    clock = Clock()
    api = Board("coingecko")
    api.put("usd", ETH, "2000")
    api.put("usd", USDC, "1")
    gw = gateway(api, clock=clock, rate_lock=True, max_price_age=600)
    gw.refresh_prices()
    guid = new_invoice(gw, tokens=(ETH, USDT), value="4000", deadlineSecs=3600)  # USDT unpriced
    with gw.storage.transaction() as tx:
        quotes = tx.get_quotes(guid)
    assert [(q.token, q.price) for q in quotes] == [(ETH, Decimal(2000))]
    api.put("usd", ETH, "2500")
    clock.t += 700  # the locked quote is older than max_price_age: a lock does not age
    gw.refresh_prices()
    (change,) = gw.record_deposit(deposit(1, "1", clock.t, token=ETH))
    assert change.payments[0].vs_value == Decimal(2000)
    clock.t += 3600  # past the deadline: a late payment is valued from the table
    gw.refresh_prices()
    changes = gw.record_deposit(deposit(2, "1", clock.t, token=ETH))
    assert changes[-1].payments[-1].vs_value == Decimal(2500)


def test_without_rate_lock_the_table_at_attribution_values_the_deposit() -> None:
    api = Board("coingecko")
    api.put("usd", ETH, "2000")
    gw = gateway(api)
    gw.refresh_prices()
    guid = new_invoice(gw, tokens=(ETH,), value="4000")
    api.put("usd", ETH, "2500")
    gw.refresh_prices()
    with gw.storage.transaction() as tx:
        assert tx.get_quotes(guid) == []
    (change,) = gw.record_deposit(deposit(1, "1", T0, token=ETH))
    assert change.payments[0].vs_value == Decimal(2500)


def test_pegged_stablecoins_are_worth_one_in_their_currency_only() -> None:
    gw = gateway(price_pegs={USDT: "usd"}, vs_currencies=("eur",), price_tokens=())
    assert gw.price_snapshot().prices == {USDT: Decimal(1)}
    assert gw.price_snapshot("eur").prices == {}


def test_static_prices_stand_in_when_the_api_price_is_stale() -> None:
    clock = Clock()
    api = Board("coingecko")
    api.put("usd", USDC, "0.9995")
    gw = gateway(api, clock=clock, prices={USDC: "1"}, max_price_age=600)
    gw.refresh_prices()
    assert gw.prices.prices == {USDC: Decimal("0.9995")}  # the API comes first
    api.prices.clear()
    clock.t += 601
    gw.pricing.invalidate()
    assert gw.prices.prices == {USDC: Decimal(1)}  # configuration does not age
    new_invoice(gw)
    (change,) = gw.record_deposit(deposit(1, "100", clock.t))
    assert change.paid_amount == Decimal(100)


def test_static_prices_work_with_no_refresher_at_all() -> None:
    gw = gateway(
        prices={ETH: "3000"}, prices_by_currency={"eur": {ETH: "2800"}}, vs_currencies=("eur",)
    )
    assert gw.price_snapshot().to_wire() == {
        "vsCurrency": "usd",
        "fetchedAt": T0,
        "prices": {ETH: 3000},
    }
    assert gw.price_snapshot("eur").prices == {ETH: Decimal(2800)}


def test_web_and_worker_processes_share_one_table(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'shared.sqlite3'}"
    api = Board("coingecko")
    api.put("usd", USDC, "0.999")
    worker = gateway(api, storage=SqlStorage(url))
    web = gateway(Board("coingecko"), storage=SqlStorage(url))  # its source never answers
    assert web.price_snapshot().prices == {}
    worker.refresh_prices()
    web.pricing.invalidate()
    assert web.price_snapshot().prices == {USDC: Decimal("0.999")}
    guid = new_invoice(web)
    worker.record_deposit(deposit(1, "10", T0))
    assert web.get_invoice(guid).paid_amount == Decimal("9.99")


def test_the_worker_refreshes_prices_on_its_interval() -> None:
    api = Board("coingecko")
    api.put("usd", ETH, "3000")
    gw = gateway(api, price_refresh_interval=0.05)
    gw.clock = time.time
    gw.pricing.clock = time.time
    stop = threading.Event()
    thread = threading.Thread(
        target=run_worker,
        args=(gw,),
        kwargs={"stop_event": stop, "dispatch": False, "sweep": False, "watch": False},
    )
    thread.start()
    try:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not gw.pricing.fresh_prices():
            time.sleep(0.02)
        api.put("usd", ETH, "3100")
        while time.monotonic() < deadline:
            gw.pricing.invalidate()
            if gw.prices.prices.get(ETH) == Decimal(3100):
                break
            time.sleep(0.02)
    finally:
        stop.set()
        thread.join(timeout=10)
    assert gw.prices.prices == {ETH: Decimal(3100)}
    assert len(api.asked) >= 2
