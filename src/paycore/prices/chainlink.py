"""A price source reading Chainlink AggregatorV3 feeds over JSON-RPC.

Each configured token has one feed (``ChainlinkFeed``): ``decimals()`` and
``latestRoundData()`` are read with ``eth_call``, all feeds of one node in one JSON-RPC batch.
An answer is used only when it is positive, its round is complete (``updatedAt`` set,
``answeredInRound >= roundId``) and ``updatedAt`` is within the feed's ``max_age``: a feed
that stopped updating reports its last answer forever, and that answer must not value a
deposit. The price's age is its ``updatedAt``, not the time we asked.

A node that fails or a feed that reverts costs only its own tokens (logged); the refresher
asks the next source for them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal

from ..chains.evm import abi
from ..chains.evm.rpc import Rpc, RpcError
from ..domain.money import MONEY_CONTEXT
from .options import ChainlinkFeed
from .pricing import Quote, is_usable

log = logging.getLogger("paycore.prices.chainlink")

DECIMALS = abi.view_data("decimals()")
LATEST_ROUND_DATA = abi.view_data("latestRoundData()")
#: Seconds an ``updatedAt`` may lie ahead of our clock (node and host clocks differ a little);
#: further ahead, the answer is not believed.
CLOCK_SKEW = 300


def _words(result: object, count: int) -> list[bytes] | None:
    if not isinstance(result, str) or not result.startswith("0x"):
        return None
    try:
        raw = bytes.fromhex(result[2:])
    except ValueError:
        return None
    if len(raw) < 32 * count:
        return None
    return [raw[i * 32 : (i + 1) * 32] for i in range(count)]


def decode_round(result: object) -> tuple[int, int, int, int, int] | None:
    """(roundId, answer, startedAt, updatedAt, answeredInRound) from ``latestRoundData``."""
    words = _words(result, 5)
    if words is None:
        return None
    round_id, answer, started, updated, answered = words
    return (
        int.from_bytes(round_id, "big"),
        int.from_bytes(answer, "big", signed=True),
        int.from_bytes(started, "big"),
        int.from_bytes(updated, "big"),
        int.from_bytes(answered, "big"),
    )


def decode_decimals(result: object) -> int | None:
    words = _words(result, 1)
    if words is None:
        return None
    value = int.from_bytes(words[0], "big")
    return value if value <= 36 else None


class ChainlinkSource:
    """Chainlink feeds, one per token, read on demand (nothing is cached but connections)."""

    name = "chainlink"

    def __init__(
        self,
        feeds: Mapping[str, ChainlinkFeed],
        *,
        rpc_urls: Mapping[int, str] | None = None,
        max_age: int = 3600,
        timeout: float = 10.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.feeds = dict(feeds)
        self.rpc_urls = dict(rpc_urls or {})
        self.default_max_age = max_age
        self.timeout = timeout
        self.clock = clock
        self._rpcs: dict[str, Rpc] = {}

    def known_tokens(self) -> list[str]:
        return list(self.feeds)

    def _node(self, feed: ChainlinkFeed) -> str | None:
        if feed.rpc_url:
            return feed.rpc_url
        chain_id = feed.chain_id if feed.chain_id is not None else int(feed.token.split(":")[0])
        return self.rpc_urls.get(chain_id)

    def _rpc(self, url: str) -> Rpc:
        rpc = self._rpcs.get(url)
        if rpc is None:
            rpc = self._rpcs[url] = Rpc(url, timeout=self.timeout)
        return rpc

    # -- the PriceSource protocol -----------------------------------------------------------
    def fetch(self, vs_currency: str, tokens: Sequence[str]) -> dict[str, Decimal]:
        return {t: q.price for t, q in self.fetch_quotes(vs_currency, tokens).items()}

    def fetch_quotes(self, vs_currency: str, tokens: Sequence[str]) -> dict[str, Quote]:
        vs = vs_currency.lower()
        by_node: dict[str, list[ChainlinkFeed]] = {}
        for token in tokens:
            feed = self.feeds.get(token)
            if feed is None or feed.vs_currency != vs:
                continue
            url = self._node(feed)
            if url is None:
                log.warning("chainlink: no rpc_url for the feed of %s", token)
                continue
            by_node.setdefault(url, []).append(feed)
        found: dict[str, Quote] = {}
        for url, feeds in by_node.items():
            found.update(self._read(url, feeds))
        return found

    def _read(self, url: str, feeds: list[ChainlinkFeed]) -> dict[str, Quote]:
        calls = []
        for feed in feeds:
            calls.append(("eth_call", [{"to": feed.aggregator, "data": DECIMALS}, "latest"]))
            calls.append(
                ("eth_call", [{"to": feed.aggregator, "data": LATEST_ROUND_DATA}, "latest"])
            )
        try:
            outcomes = self._rpc(url).batch_outcomes(calls)
        except RpcError as exc:
            log.warning("chainlink: node failed, %d feeds unread: %s", len(feeds), exc)
            return {}
        now = int(self.clock())
        found: dict[str, Quote] = {}
        for i, feed in enumerate(feeds):
            quote = self._judge(feed, outcomes[2 * i], outcomes[2 * i + 1], now)
            if quote is not None:
                found[feed.token] = quote
        return found

    def _judge(
        self, feed: ChainlinkFeed, decimals_out: object, round_out: object, now: int
    ) -> Quote | None:
        """The feed's answer as a Quote, or None (logged) when it must not be used."""
        where = f"chainlink: feed {feed.aggregator} for {feed.token}"
        for outcome in (decimals_out, round_out):
            if isinstance(outcome, RpcError):
                log.warning("%s: call failed: %s", where, outcome)
                return None
        decimals = decode_decimals(decimals_out)
        data = decode_round(round_out)
        if decimals is None or data is None:
            log.warning("%s: not an AggregatorV3 answer", where)
            return None
        round_id, answer, _started, updated, answered_in = data
        if answer <= 0:
            log.warning("%s: answer %d is not a price", where, answer)
            return None
        if updated == 0 or answered_in < round_id:
            log.warning("%s: round %d is incomplete", where, round_id)
            return None
        if updated > now + CLOCK_SKEW:
            log.warning("%s: updatedAt %d is in the future", where, updated)
            return None
        max_age = feed.max_age if feed.max_age is not None else self.default_max_age
        if now - updated > max_age:
            log.warning("%s: stale, updated %d s ago (max %d)", where, now - updated, max_age)
            return None
        price = Decimal(answer).scaleb(-decimals, MONEY_CONTEXT)
        return Quote(price, min(updated, now)) if is_usable(price) else None
