"""Every price setting from its PAYCORE_* variable, and a typo refused at startup; the
static source's pegs and per-currency tables; parking's re-sighting keeps one copy."""

from __future__ import annotations

import json
from decimal import Decimal

import attrs
import pytest
from prices_helpers import ADDRESS, ETH, T0, USDC, USDT, gateway

from paycore import Deposit, Settings
from paycore.errors import InvalidInput
from paycore.prices import parking
from paycore.prices.options import ChainlinkFeed
from paycore.prices.pricing import StaticPriceSource

FEED = "0x5f4eC3Df9cbd43714FE2740f5E3616155c5b8419"


def test_every_price_setting_reads_from_the_environment() -> None:
    env = {
        "PAYCORE_VS_CURRENCIES": "EUR, gbp",
        "PAYCORE_MAX_PRICE_AGE": "120",
        "PAYCORE_PRICE_REFRESH_INTERVAL": "15",
        "PAYCORE_PRICE_SOURCES": "chainlink,coingecko,static",
        "PAYCORE_PRICE_SOURCE_OVERRIDES": json.dumps({USDT.lower(): ["static"]}),
        "PAYCORE_PRICE_TOKENS": f"{ETH},{USDC}",
        "PAYCORE_PRICE_PEGS": json.dumps({USDT: "USD"}),
        "PAYCORE_PRICES_BY_CURRENCY": json.dumps({"EUR": {ETH: "2800.5"}}),
        "PAYCORE_RATE_LOCK": "yes",
        "PAYCORE_COINGECKO_ENABLED": "1",
        "PAYCORE_COINGECKO_URL": "https://pro-api.coingecko.com",
        "PAYCORE_COINGECKO_API_KEY": "CG-key",
        "PAYCORE_COINGECKO_KEY_HEADER": "x-cg-pro-api-key",
        "PAYCORE_COINGECKO_COIN_IDS": json.dumps({"1": "ethereum"}),
        "PAYCORE_COINGECKO_PLATFORMS": json.dumps({"1": "ethereum"}),
        "PAYCORE_COINGECKO_TIMEOUT": "5",
        "PAYCORE_COINGECKO_BATCH_SIZE": "25",
        "PAYCORE_COINGECKO_MAX_RETRIES": "2",
        "PAYCORE_COINGECKO_MAX_BACKOFF": "10",
        "PAYCORE_CHAINLINK_FEEDS": json.dumps(
            {ETH: {"aggregator": FEED.lower(), "chain_id": 1, "max_age": "3600"}}
        ),
    }
    s = Settings.from_env(env)
    assert s.vs_currencies == ("eur", "gbp")
    assert (s.max_price_age, s.price_refresh_interval) == (120, 15.0)
    assert s.price_sources == ("chainlink", "coingecko", "static")
    assert s.price_source_overrides == {USDT: ("static",)}
    assert s.price_tokens == (ETH, USDC)
    assert s.price_pegs == {USDT: "usd"}
    assert s.prices_by_currency == {"eur": {ETH: Decimal("2800.5")}}
    assert s.rate_lock is True and s.coingecko_enabled is True
    assert (s.coingecko_url, s.coingecko_api_key, s.coingecko_key_header) == (
        "https://pro-api.coingecko.com",
        "CG-key",
        "x-cg-pro-api-key",
    )
    assert s.coingecko_coin_ids == {1: "ethereum"} and s.coingecko_platforms == {1: "ethereum"}
    assert (s.coingecko_timeout, s.coingecko_batch_size) == (5.0, 25)
    assert (s.coingecko_max_retries, s.coingecko_max_backoff) == (2, 10.0)
    assert s.chainlink_feeds == {ETH: ChainlinkFeed(ETH, FEED, chain_id=1, max_age=3600)}
    assert "CG-key" not in repr(s)


def test_defaults_are_off_and_spec_like() -> None:
    s = Settings()
    assert (s.vs_currencies, s.max_price_age, s.rate_lock, s.coingecko_enabled) == (
        (),
        900,
        False,
        False,
    )
    assert s.coingecko_coin_ids[56] == "binancecoin" and s.coingecko_platforms[8453] == "base"
    assert s.chainlink_feeds == {}


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("vs_currencies", "e u r"),
        ("max_price_age", "0"),
        ("max_price_age", "soon"),
        ("price_pegs", "{not json"),
        ("price_pegs", json.dumps({"nope": "usd"})),
        ("prices_by_currency", json.dumps({"eur": {ETH: "-1"}})),
        ("chainlink_feeds", json.dumps({ETH: {"chain_id": 1}})),
        ("chainlink_feeds", json.dumps({ETH: {"aggregator": FEED, "heartbeat": 1}})),
        ("coingecko_coin_ids", json.dumps({"mainnet": "ethereum"})),
        ("coingecko_batch_size", "0"),
    ],
)
def test_a_typo_fails_at_startup_naming_the_setting(name: str, value: str) -> None:
    with pytest.raises(InvalidInput, match=f"(?i){name}"):
        Settings.from_env({f"PAYCORE_{name.upper()}": value})


def test_the_static_source_pegs_and_tables_per_currency() -> None:
    static = StaticPriceSource(
        {ETH: Decimal(3000)},
        vs_currency="usd",
        by_currency={"EUR": {ETH: Decimal(2800)}},
        pegs={USDT: "usd", USDC: "eur"},
    )
    assert static.fetch("USD", [ETH, USDT, USDC]) == {ETH: Decimal(3000), USDT: Decimal(1)}
    assert static.fetch("eur", [ETH, USDT, USDC]) == {ETH: Decimal(2800), USDC: Decimal(1)}
    assert static.fetch("gbp", [ETH]) == {}
    assert sorted(static.known_tokens()) == sorted([ETH, USDT, USDC])


def test_a_deposit_sighted_again_is_parked_once_with_its_newest_block() -> None:
    gw = gateway()
    first = Deposit(1, "0x" + "ab" * 32, 0, USDT.split(":")[1], ADDRESS, ADDRESS, Decimal(1), T0)
    moved = attrs.evolve(first, block_number=9, block_hash="0x" + "cd" * 32)
    assert parking.park(gw, first, "no usd price")
    assert not parking.park(gw, moved, "no usd price")
    with gw.storage.transaction() as tx:
        assert [p.deposit for p in tx.parked_deposits(1, 10)] == [moved]


def test_a_token_priced_only_in_another_currency_is_known_so_it_is_refreshed() -> None:
    """The refresher asks for the tokens a source knows; a token whose only price is in
    another currency's table must be among them, or it is never refreshed."""
    static = StaticPriceSource({}, vs_currency="usd", by_currency={"eur": {ETH: Decimal(2800)}})
    assert static.known_tokens() == [ETH]
