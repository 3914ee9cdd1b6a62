"""The CoinGecko source against a real HTTP server on loopback speaking the public API's
shapes: native coins and tokens, batching, API keys, 429 with Retry-After, 5xx, timeouts,
refused connections and garbage -- never an exception, never a float."""

from __future__ import annotations

import logging
import socket
import time
from decimal import Decimal
from email.utils import formatdate

import pytest
from fake_coingecko import FakeCoinGecko

from paycore.prices.coingecko import CoinGeckoSource, retry_after
from paycore.prices.pricing import Quote

NATIVE = "0x0000000000000000000000000000000000000000"
ETH = f"1:{NATIVE}"
ETH_ON_BASE = f"8453:{NATIVE}"
BNB = f"56:{NATIVE}"
USDT = "1:0xdAC17F958D2ee523a2206206994597C13D831ec7"
USDC = "1:0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48"
WBTC = "1:0x2260FAC5E5542a773Aa44fBCfeDf7C193bc2C599"
BASE_USDC = "8453:0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
COINS = {1: "ethereum", 8453: "ethereum", 56: "binancecoin"}
PLATFORMS = {1: "ethereum", 8453: "base"}


class Sleeps:
    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


def source(fake: FakeCoinGecko, **kwargs: object) -> CoinGeckoSource:
    options: dict[str, object] = {
        "base_url": fake.url,
        "coin_ids": COINS,
        "platforms": PLATFORMS,
        "sleep": Sleeps(),
        "timeout": 2.0,
    }
    options.update(kwargs)
    return CoinGeckoSource(**options)  # type: ignore[arg-type]


def test_native_coins_by_coin_id_keep_every_digit(coingecko: FakeCoinGecko) -> None:
    coingecko.coins = {
        "ethereum": {"usd": "3012.123456789012345678", "eur": "2790.5"},
        "binancecoin": {"usd": "590"},
    }
    coingecko.updated_at = 1_700_000_000
    quotes = source(coingecko).fetch_quotes("USD", [ETH, ETH_ON_BASE, BNB])
    assert quotes == {
        ETH: Quote(Decimal("3012.123456789012345678"), 1_700_000_000),
        ETH_ON_BASE: Quote(Decimal("3012.123456789012345678"), 1_700_000_000),
        BNB: Quote(Decimal(590), 1_700_000_000),
    }
    (seen,) = coingecko.requests_to("/api/v3/simple/price")
    assert seen.query["ids"] == "binancecoin,ethereum"  # one id for two chains
    assert seen.query["vs_currencies"] == "usd"
    assert seen.query["include_last_updated_at"] == "true"


def test_tokens_by_platform_and_contract(coingecko: FakeCoinGecko) -> None:
    coingecko.tokens = {
        "ethereum": {
            USDT.split(":")[1].lower(): {"usd": "0.9998"},
            USDC.split(":")[1].lower(): {"usd": "1.0001"},
        },
        "base": {BASE_USDC.split(":")[1].lower(): {"usd": "1"}},
    }
    prices = source(coingecko).fetch("usd", [USDT, USDC, BASE_USDC, WBTC])
    assert prices == {USDT: Decimal("0.9998"), USDC: Decimal("1.0001"), BASE_USDC: Decimal(1)}
    assert all(isinstance(p, Decimal) for p in prices.values())
    paths = sorted(s.path for s in coingecko.requests_to("/api/v3/simple/token_price/"))
    assert paths == ["/api/v3/simple/token_price/base", "/api/v3/simple/token_price/ethereum"]


def test_unmapped_chains_and_foreign_ids_are_not_asked(coingecko: FakeCoinGecko) -> None:
    assert source(coingecko).fetch("usd", [f"31337:{NATIVE}", "137:0x" + "11" * 20, "junk"]) == {}
    assert coingecko.seen == []


def test_requests_are_batched(coingecko: FakeCoinGecko) -> None:
    addresses = [f"0x{i:040x}" for i in range(1, 6)]
    coingecko.tokens = {"ethereum": {a: {"usd": str(i)} for i, a in enumerate(addresses, 1)}}
    tokens = [f"1:{a}" for a in addresses]
    from paycore.domain.tokens import TokenId

    tokens = [str(TokenId.parse(t)) for t in tokens]
    prices = source(coingecko, batch_size=2).fetch("usd", tokens)
    assert sorted(prices.values()) == [Decimal(i) for i in range(1, 6)]
    batches = [s.query["contract_addresses"] for s in coingecko.requests_to("/api/v3/simple/")]
    assert [len(b.split(",")) for b in batches] == [2, 2, 1]


@pytest.mark.parametrize("header", ["x-cg-demo-api-key", "x-cg-pro-api-key"])
def test_api_key_goes_in_the_configured_header(coingecko: FakeCoinGecko, header: str) -> None:
    coingecko.coins = {"ethereum": {"usd": "3000"}}
    source(coingecko, api_key="CG-secret", key_header=header).fetch("usd", [ETH])
    (seen,) = coingecko.seen
    assert seen.headers[header] == "CG-secret"


def test_no_key_no_header(coingecko: FakeCoinGecko) -> None:
    source(coingecko).fetch("usd", [ETH])
    assert not any(h.startswith("x-cg-") for h in coingecko.seen[0].headers)


def test_429_waits_retry_after_then_succeeds(coingecko: FakeCoinGecko) -> None:
    coingecko.coins = {"ethereum": {"usd": "3000"}}
    coingecko.answer_next("/api/v3/simple/price", status=429, headers={"Retry-After": "2"})
    sleeps = Sleeps()
    assert source(coingecko, sleep=sleeps).fetch("usd", [ETH]) == {ETH: Decimal(3000)}
    assert sleeps.calls == [2.0]
    assert len(coingecko.seen) == 2


def test_429_with_an_http_date(coingecko: FakeCoinGecko) -> None:
    coingecko.coins = {"ethereum": {"usd": "3000"}}
    when = formatdate(time.time() + 5, usegmt=True)
    coingecko.answer_next("/api/v3/simple/price", status=429, headers={"Retry-After": when})
    sleeps = Sleeps()
    assert source(coingecko, sleep=sleeps).fetch("usd", [ETH]) == {ETH: Decimal(3000)}
    assert len(sleeps.calls) == 1 and 3 <= sleeps.calls[0] <= 6


def test_429_without_retry_after_backs_off_exponentially(coingecko: FakeCoinGecko) -> None:
    coingecko.coins = {"ethereum": {"usd": "3000"}}
    for _ in range(3):
        coingecko.answer_next("/api/v3/simple/price", status=429)
    sleeps = Sleeps()
    assert source(coingecko, sleep=sleeps).fetch("usd", [ETH]) == {ETH: Decimal(3000)}
    assert sleeps.calls == [1.0, 2.0, 4.0]


def test_a_long_ban_ends_the_round_and_keeps_the_source_quiet(coingecko: FakeCoinGecko) -> None:
    coingecko.coins = {"ethereum": {"usd": "3000"}}
    coingecko.tokens = {"ethereum": {USDT.split(":")[1].lower(): {"usd": "1"}}}
    coingecko.answer_next("/api/v3/simple/price", status=429, headers={"Retry-After": "600"})
    now = [1_000.0]
    cg = source(coingecko, max_backoff=30.0, clock=lambda: now[0])
    assert cg.fetch("usd", [ETH, USDT]) == {}
    assert len(coingecko.seen) == 1  # the token request was not even tried
    assert cg.fetch("usd", [ETH]) == {}
    assert len(coingecko.seen) == 1  # still inside Retry-After: nothing sent
    now[0] += 601
    assert cg.fetch("usd", [ETH, USDT]) == {ETH: Decimal(3000), USDT: Decimal(1)}


def test_server_errors_are_retried_then_given_up(coingecko: FakeCoinGecko) -> None:
    coingecko.coins = {"ethereum": {"usd": "3000"}}
    coingecko.answer_next("/api/v3/simple/price", status=502, body=b"<html>bad gateway</html>")
    assert source(coingecko).fetch("usd", [ETH]) == {ETH: Decimal(3000)}
    for _ in range(4):
        coingecko.answer_next("/api/v3/simple/price", status=503)
    assert source(coingecko, max_retries=3).fetch("usd", [ETH]) == {}


def test_a_slow_server_times_out_without_raising(
    coingecko: FakeCoinGecko, caplog: pytest.LogCaptureFixture
) -> None:
    coingecko.coins = {"ethereum": {"usd": "3000"}}
    coingecko.answer_next("/api/v3/simple/price", delay=2.0)
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, "paycore.prices.coingecko"):
        assert source(coingecko, timeout=0.3).fetch("usd", [ETH]) == {}
    assert time.monotonic() - started < 1.5
    assert "timed out" in caplog.text


def test_a_refused_connection_is_no_prices() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cg = CoinGeckoSource(base_url=f"http://127.0.0.1:{port}", coin_ids=COINS, platforms={})
    assert cg.fetch("usd", [ETH]) == {}


@pytest.mark.parametrize(
    "body",
    [
        b"<!doctype html><title>Just a moment...</title>",
        b'{"ethereum": {"usd": 30',
        b"[1, 2, 3]",
        b'"ethereum"',
        b"",
        b"\xff\xfe\x00",
    ],
)
def test_garbage_is_no_prices_and_logged(
    coingecko: FakeCoinGecko, caplog: pytest.LogCaptureFixture, body: bytes
) -> None:
    coingecko.answer_next("/api/v3/simple/price", body=body)
    with caplog.at_level(logging.WARNING, "paycore.prices.coingecko"):
        assert source(coingecko).fetch("usd", [ETH]) == {}
    assert "coingecko" in caplog.text


def test_odd_entries_are_skipped_good_ones_kept(coingecko: FakeCoinGecko) -> None:
    tokens = {
        USDT: b'{"usd": "1.0"}',  # a string, not a number
        USDC: b'{"usd": -1}',
        WBTC: b'{"usd": null}',
        "1:0x6B175474E89094C44Da98b954EedeAC495271d0F": b'{"usd": 0}',
        "1:0x514910771AF9Ca656af840dff83E8264EcF986CA": b'{"usd": 1e400}',
        "1:0x7Fc66500c84A76Ad7e9c93437bFc5Ac33E2DDaE9": b'{"usd": 97.5, "last_updated_at": true}',
    }
    body = (
        b"{"
        + b",".join(b'"' + t.split(":")[1].lower().encode() + b'":' + v for t, v in tokens.items())
        + b', "0xnot-asked": {"usd": 5}}'
    )
    coingecko.answer_next("/api/v3/simple/token_price/ethereum", body=body)
    quotes = source(coingecko, batch_size=10).fetch_quotes("usd", list(tokens))
    assert quotes == {"1:0x7Fc66500c84A76Ad7e9c93437bFc5Ac33E2DDaE9": Quote(Decimal("97.5"))}


def test_an_error_status_is_no_prices(coingecko: FakeCoinGecko) -> None:
    coingecko.answer_next(
        "/api/v3/simple/price", status=401, body=b'{"status":{"error_code":10002}}'
    )
    assert source(coingecko).fetch("usd", [ETH]) == {}
    assert len(coingecko.seen) == 1  # a 401 is not retried


def test_retry_after_parsing() -> None:
    assert retry_after("7", 0) == 7.0
    assert retry_after(None, 0) is None
    assert retry_after("soon", 0) is None
    assert retry_after(formatdate(100, usegmt=True), 40) == pytest.approx(60)
    assert retry_after(formatdate(10, usegmt=True), 40) == 0.0
