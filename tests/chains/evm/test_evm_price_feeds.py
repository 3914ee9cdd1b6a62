"""The Chainlink price source against MockAggregator contracts on anvil: real eth_calls,
real ABI encoding, one JSON-RPC batch per node; stale, negative and incomplete rounds are
no price, and a dead node or a contract that is no feed costs only its own tokens."""

from __future__ import annotations

import socket
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import pytest
from evm_chain import Chain, Deployment
from web3.contract import Contract

from paycore.chains.evm.rpc import Call
from paycore.prices.chainlink import ChainlinkSource
from paycore.prices.options import ChainlinkFeed
from paycore.prices.pricing import Quote

NATIVE = "0x0000000000000000000000000000000000000000"
ETH = f"31337:{NATIVE}"
BTC = "31337:0x2260FAC5E5542a773Aa44fBCfeDf7C193bc2C599"
NOW = 1_800_000_000


def aggregator(chain: Chain, decimals: int, description: str = "ETH / USD") -> Contract:
    return chain.deploy(chain.accounts[0], "MockAggregator", decimals, description)


def set_round(
    chain: Chain, feed: Contract, answer: int, updated: int, round_id: int = 7, answered: int = 7
) -> None:
    call = feed.functions.setRound(round_id, answer, updated, updated, answered)
    chain.transact(chain.accounts[0], call)


def source(chain: Chain, feeds: dict[str, Contract], **kwargs: object) -> ChainlinkSource:
    configured = {
        token: ChainlinkFeed(token, contract.address, rpc_url=chain.rpc_url)
        for token, contract in feeds.items()
    }
    options: dict[str, object] = {"max_age": 3600, "clock": lambda: NOW}
    options.update(kwargs)
    return ChainlinkSource(configured, **options)  # type: ignore[arg-type]


def test_a_fresh_answer_is_a_price_aged_from_updated_at(evm: Deployment) -> None:
    chain = evm.chain
    eth = aggregator(chain, 8)
    set_round(chain, eth, 3_012_12345678, NOW - 120)
    quotes = source(chain, {ETH: eth}).fetch_quotes("usd", [ETH])
    assert quotes == {ETH: Quote(Decimal("3012.12345678"), NOW - 120)}


def test_feeds_of_one_node_are_read_in_one_batch_with_their_own_decimals(
    evm: Deployment,
) -> None:
    chain = evm.chain
    eth, btc = aggregator(chain, 8), aggregator(chain, 18, "BTC / USD")
    set_round(chain, eth, 2_000 * 10**8, NOW - 10)
    set_round(chain, btc, 65_000_5 * 10**17, NOW - 20)
    src = source(chain, {ETH: eth, BTC: btc})
    calls: list[int] = []
    rpc = src._rpc(chain.rpc_url)
    original = rpc.batch_outcomes

    def counted(batch: Sequence[Call]) -> list[Any]:
        calls.append(len(batch))
        return original(batch)

    rpc.batch_outcomes = counted  # type: ignore[method-assign,assignment]
    assert src.fetch("usd", [ETH, BTC]) == {ETH: Decimal(2000), BTC: Decimal("65000.5")}
    assert calls == [4]


@pytest.mark.parametrize(
    ("answer", "updated", "round_id", "answered"),
    [
        (2_000 * 10**8, NOW - 3601, 7, 7),  # older than max_age
        (0, NOW - 10, 7, 7),  # no price
        (-5 * 10**8, NOW - 10, 7, 7),  # negative
        (2_000 * 10**8, 0, 7, 7),  # round never completed
        (2_000 * 10**8, NOW - 10, 7, 6),  # answered in an earlier round
        (2_000 * 10**8, NOW + 3600, 7, 7),  # from the future
    ],
)
def test_answers_that_must_not_value_money(
    evm: Deployment, answer: int, updated: int, round_id: int, answered: int
) -> None:
    chain = evm.chain
    feed = aggregator(chain, 8)
    set_round(chain, feed, answer, updated, round_id, answered)
    assert source(chain, {ETH: feed}).fetch("usd", [ETH]) == {}


def test_the_feed_max_age_overrides_the_default(evm: Deployment) -> None:
    chain = evm.chain
    feed = aggregator(chain, 8)
    set_round(chain, feed, 2_000 * 10**8, NOW - 7200)
    configured = {ETH: ChainlinkFeed(ETH, feed.address, rpc_url=chain.rpc_url, max_age=86400)}
    src = ChainlinkSource(configured, max_age=3600, clock=lambda: NOW)
    assert src.fetch("usd", [ETH]) == {ETH: Decimal(2000)}


def test_a_contract_that_is_no_feed_costs_only_its_token(evm: Deployment) -> None:
    chain = evm.chain
    eth = aggregator(chain, 8)
    set_round(chain, eth, 2_000 * 10**8, NOW - 10)
    src = source(chain, {ETH: eth, BTC: evm.token})  # a TestToken has no latestRoundData
    assert src.fetch("usd", [ETH, BTC]) == {ETH: Decimal(2000)}
    nobody = {BTC: ChainlinkFeed(BTC, "0x" + "ab" * 20, rpc_url=chain.rpc_url)}
    assert ChainlinkSource(nobody, clock=lambda: NOW).fetch("usd", [BTC]) == {}


def test_only_feeds_in_the_asked_currency_answer(evm: Deployment) -> None:
    chain = evm.chain
    feed = aggregator(chain, 8, "ETH / EUR")
    set_round(chain, feed, 2_500 * 10**8, NOW - 10)
    configured = {ETH: ChainlinkFeed(ETH, feed.address, rpc_url=chain.rpc_url, vs_currency="eur")}
    src = ChainlinkSource(configured, clock=lambda: NOW)
    assert src.fetch("usd", [ETH]) == {}
    assert src.fetch("eur", [ETH]) == {ETH: Decimal(2500)}


def test_the_node_comes_from_the_chain_config_when_the_feed_names_none(
    evm: Deployment,
) -> None:
    chain = evm.chain
    feed = aggregator(chain, 8)
    set_round(chain, feed, 1_999 * 10**8, NOW - 10)
    configured = {ETH: ChainlinkFeed(ETH, feed.address)}  # chain 31337, the token's own
    src = ChainlinkSource(configured, rpc_urls={31337: chain.rpc_url}, clock=lambda: NOW)
    assert src.fetch("usd", [ETH]) == {ETH: Decimal(1999)}
    assert ChainlinkSource(configured, clock=lambda: NOW).fetch("usd", [ETH]) == {}


def test_a_dead_node_is_no_prices(evm: Deployment) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    configured = {ETH: ChainlinkFeed(ETH, "0x" + "ab" * 20, rpc_url=f"http://127.0.0.1:{port}")}
    assert ChainlinkSource(configured, timeout=2, clock=lambda: NOW).fetch("usd", [ETH]) == {}
