"""The refresher: sources asked in the configured order per token, batched per source,
stale answers skipped, last good prices kept with their age, nothing fetched twice when
another process just did it, everything persisted so other processes see it."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from prices_helpers import ADDRESS, ETH, T0, USDC, USDT, WBTC, Board, Clock, gateway

from paycore.domain.records import Deposit
from paycore.prices import parking
from paycore.prices.pricing import StaticPriceSource
from paycore.prices.records import StoredPrice
from paycore_storage import SqlStorage


def stored(gw: object) -> dict[tuple[str, str], StoredPrice]:
    with gw.storage.transaction() as tx:  # type: ignore[attr-defined]
        return {(r.vs_currency, r.token): r for r in tx.get_prices()}


def test_first_source_wins_and_the_next_is_asked_only_for_the_rest() -> None:
    first, second = Board("first"), Board("second")
    first.put("usd", ETH, "3000")
    second.put("usd", ETH, "1")
    second.put("usd", USDC, "0.9999")
    gw = gateway(first, second, price_tokens=(ETH, USDC, USDT))
    report = gw.price_refresher.refresh()
    assert first.asked == [("usd", [ETH, USDC, USDT])]
    assert second.asked == [("usd", [USDC, USDT])]  # one batch, only the missing ones
    assert report.written == {"usd": 2} and report.missing == {"usd": [USDT]}
    rows = stored(gw)
    assert rows[("usd", ETH)] == StoredPrice(ETH, "usd", Decimal(3000), T0, "first", T0)
    assert rows[("usd", USDC)].source == "second"
    assert gw.price_snapshot().to_wire() == {
        "vsCurrency": "usd",
        "fetchedAt": T0,
        "prices": {ETH: 3000, USDC: 0.9999},
    }


def test_price_sources_setting_reorders_and_overrides_are_per_token() -> None:
    first, second = Board("first"), Board("second")
    for board, value in ((first, "1"), (second, "2")):
        board.put("usd", ETH, value)
        board.put("usd", USDC, value)
    gw = gateway(
        first,
        second,
        price_sources=("second", "first"),
        price_source_overrides={USDC: ["first"]},
    )
    gw.refresh_prices()
    assert gw.prices.prices == {ETH: Decimal(2), USDC: Decimal(1)}
    assert ("usd", [ETH]) in second.asked and ("usd", [USDC]) in first.asked


def test_an_answer_older_than_max_price_age_falls_through_to_the_next_source() -> None:
    feed, api = Board("chainlink"), Board("coingecko")
    feed.put("usd", ETH, "2900", as_of=T0 - 4000)  # a feed that stopped updating
    api.put("usd", ETH, "3000", as_of=T0 - 30)
    gw = gateway(feed, api, max_price_age=3600)
    gw.refresh_prices()
    row = stored(gw)[("usd", ETH)]
    assert (row.price, row.source, row.fetched_at) == (Decimal(3000), "coingecko", T0 - 30)


def test_a_failing_source_costs_only_its_turn() -> None:
    broken, good = Board("broken"), Board("good")
    broken.fail = True
    good.put("usd", ETH, "3000")
    gw = gateway(broken, good)
    assert gw.refresh_prices().prices == {ETH: Decimal(3000)}


def test_the_last_good_price_is_kept_and_ages_out_of_the_table() -> None:
    clock = Clock()
    api = Board("coingecko")
    api.put("usd", ETH, "3000")
    gw = gateway(api, clock=clock, max_price_age=600)
    gw.refresh_prices()
    api.prices.clear()  # the source stops answering
    clock.t += 300
    gw.refresh_prices()
    assert gw.price_snapshot().to_wire() == {
        "vsCurrency": "usd",
        "fetchedAt": T0,  # the age of the price, not of the last round
        "prices": {ETH: 3000},
    }
    clock.t += 301
    gw.pricing.invalidate()
    assert gw.price_snapshot().prices == {}
    assert stored(gw)[("usd", ETH)].price == Decimal(3000)  # kept, unused
    api.put("usd", ETH, "3100")
    gw.refresh_prices()
    assert gw.price_snapshot().to_wire()["prices"] == {ETH: 3100}


def test_an_older_quote_from_the_same_source_does_not_replace_a_newer_row() -> None:
    clock = Clock()
    api = Board("coingecko")
    api.put("usd", ETH, "3000", as_of=T0)
    gw = gateway(api, clock=clock)
    gw.refresh_prices()
    api.put("usd", ETH, "2999", as_of=T0 - 60)  # a cached answer from before
    clock.t += 30
    gw.refresh_prices()
    row = stored(gw)[("usd", ETH)]
    assert (row.price, row.fetched_at, row.checked_at) == (Decimal(3000), T0, T0 + 30)


def test_prices_are_stored_to_18_places() -> None:
    api = Board("coingecko")
    api.put("usd", ETH, "3000.1234567890123456789")
    api.put("usd", USDC, "0.0000000000000000000001")  # nothing left of it
    gw = gateway(api)
    gw.refresh_prices()
    assert gw.prices.prices == {ETH: Decimal("3000.123456789012345679")}


def test_wanted_tokens_come_from_configuration_parked_deposits_and_demand() -> None:
    api = Board("coingecko")
    static = StaticPriceSource({WBTC: Decimal(60000)}, vs_currency="usd")
    gw = gateway(api, static, price_tokens=(USDT,))
    dai = "0x6B175474E89094C44Da98b954EedeAC495271d0F"
    waiting = Deposit(1, "0x" + "ab" * 32, 0, dai, ADDRESS, ADDRESS, Decimal(1), T0)
    parking.park(gw, waiting, "no usd price")
    gw.pricing.demanded.add(USDC)
    gw.refresh_prices()
    (asked,) = api.asked
    assert asked == ("usd", [USDT, WBTC, f"1:{dai}", USDC])


def test_a_second_process_skips_a_round_another_just_did(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'shared.sqlite3'}"
    clock = Clock()
    one, two = Board("coingecko"), Board("coingecko")
    for board in (one, two):
        board.put("usd", ETH, "3000")
        board.put("usd", USDC, "1")
    worker_a = gateway(one, clock=clock, storage=SqlStorage(url))
    worker_b = gateway(two, clock=clock, storage=SqlStorage(url))
    assert not worker_a.price_refresher.refresh(force=False).skipped
    clock.t += 10
    assert worker_b.price_refresher.refresh(force=False).skipped
    assert two.asked == []
    assert worker_b.prices.prices == {ETH: Decimal(3000), USDC: Decimal(1)}  # A's rows
    clock.t += 31  # half an interval (60 s) has passed since A's round
    assert not worker_b.price_refresher.refresh(force=False).skipped
    assert len(two.asked) == 1


@pytest.mark.parametrize("vs", ["usd", "eur"])
def test_every_configured_currency_gets_its_own_table(vs: str) -> None:
    api = Board("coingecko")
    api.put("usd", ETH, "3000")
    api.put("eur", ETH, "2800")
    gw = gateway(api, vs_currencies=("EUR",))
    report = gw.refresh_prices()
    assert report.prices == {ETH: Decimal(3000)}
    assert gw.price_snapshot(vs).prices == {ETH: Decimal(3000 if vs == "usd" else 2800)}
    assert {v for v, _ in api.asked} == {"usd", "eur"}
