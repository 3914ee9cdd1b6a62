"""Parsing of the price settings (``Settings.vs_currencies``, ``chainlink_feeds``, ...).

Every converter accepts both the Python value and the ``PAYCORE_*`` environment string (JSON
for mappings, comma-separated for lists), so that a typo fails at startup with the field's
name rather than at the first deposit.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

import attrs

from ..domain.money import parse_amount
from ..domain.tokens import TokenId, to_checksum
from ..errors import InvalidInput
from ..ops.redaction import redacted_repr

_CURRENCY = re.compile(r"^[a-z0-9]{2,12}$")

#: Native coins on CoinGecko (``/simple/price?ids=``) for the chains paycore knows.
DEFAULT_COIN_IDS: dict[int, str] = {
    1: "ethereum",
    10: "ethereum",
    56: "binancecoin",
    137: "polygon-ecosystem-token",
    8453: "ethereum",
    42161: "ethereum",
    728126428: "tron",
}
#: CoinGecko asset platforms (``/simple/token_price/{platform}``) per chain id.
DEFAULT_PLATFORMS: dict[int, str] = {
    1: "ethereum",
    10: "optimistic-ethereum",
    56: "binance-smart-chain",
    137: "polygon-pos",
    8453: "base",
    42161: "arbitrum-one",
    728126428: "tron",
}


def currency(raw: object, field: str = "vs_currency") -> str:
    """A vsCurrency code, lowercase as the interface's price snapshot shows it."""
    code = str(raw).strip().lower()
    if not _CURRENCY.match(code):
        raise InvalidInput(field, f"not a currency code: {str(raw)[:20]!r}")
    return code


def _json(raw: object, field: str) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw) if raw.strip() else {}
        except ValueError as exc:
            raise InvalidInput(field, f"not JSON: {exc}") from None
    return raw


def _items(raw: object, field: str) -> list[str]:
    if isinstance(raw, str):
        return [p.strip() for p in raw.split(",") if p.strip()]
    if not isinstance(raw, Iterable):
        raise InvalidInput(field, "must be a list")
    return [str(p).strip() for p in raw if str(p).strip()]


def currencies(raw: object) -> tuple[str, ...]:
    return tuple(dict.fromkeys(currency(c, "vs_currencies") for c in _items(raw, "vs_currencies")))


def token_ids(raw: object) -> tuple[str, ...]:
    return tuple(dict.fromkeys(str(TokenId.parse(t, "price_tokens")) for t in _items(raw, "x")))


def source_names(raw: object) -> tuple[str, ...]:
    return tuple(dict.fromkeys(_items(raw, "price_sources")))


def source_overrides(raw: object) -> dict[str, tuple[str, ...]]:
    """``{"1:0x...": ["chainlink", "coingecko"]}``: a token's own source order."""
    data = _json(raw, "price_source_overrides")
    if not isinstance(data, Mapping):
        raise InvalidInput("price_source_overrides", "must be an object")
    return {
        str(TokenId.parse(k, "price_source_overrides")): source_names(v) for k, v in data.items()
    }


def pegs(raw: object) -> dict[str, str]:
    """``{"1:0xA0b8...": "usd"}``: a stablecoin worth exactly 1 of that currency."""
    data = _json(raw, "price_pegs")
    if not isinstance(data, Mapping):
        raise InvalidInput("price_pegs", "must be an object")
    return {str(TokenId.parse(k, "price_pegs")): currency(v, "price_pegs") for k, v in data.items()}


def price_tables(raw: object) -> dict[str, dict[str, Decimal]]:
    """``{"eur": {"1:0x0000...": "2800"}}``: static prices in currencies besides vs_currency."""
    data = _json(raw, "prices_by_currency")
    if not isinstance(data, Mapping):
        raise InvalidInput("prices_by_currency", "must be an object")
    tables: dict[str, dict[str, Decimal]] = {}
    for code, table in data.items():
        if not isinstance(table, Mapping):
            raise InvalidInput("prices_by_currency", f"{code}: must be an object")
        tables[currency(code, "prices_by_currency")] = {
            str(TokenId.parse(k, "prices_by_currency")): parse_amount(v, f"prices_by_currency.{k}")
            for k, v in table.items()
        }
    return tables


def chain_names(raw: object, field: str) -> dict[int, str]:
    """``{"1": "ethereum"}``: CoinGecko ids per chain id."""
    data = _json(raw, field)
    if not isinstance(data, Mapping):
        raise InvalidInput(field, "must be an object")
    try:
        return {int(k): str(v).strip() for k, v in data.items() if str(v).strip()}
    except ValueError:
        raise InvalidInput(field, "keys must be chain ids") from None


def coin_ids(raw: object) -> dict[int, str]:
    return chain_names(raw, "coingecko_coin_ids")


def platforms(raw: object) -> dict[int, str]:
    return chain_names(raw, "coingecko_platforms")


def default_coin_ids() -> dict[int, str]:
    return dict(DEFAULT_COIN_IDS)


def default_platforms() -> dict[int, str]:
    return dict(DEFAULT_PLATFORMS)


@attrs.frozen
class ChainlinkFeed:
    """One AggregatorV3 feed that prices ``token`` in ``vs_currency``.

    The node is ``rpc_url``, or else the ``rpc_url`` of chain ``chain_id`` in
    ``Settings.chains`` (the token's own chain when neither is given). ``max_age`` is the
    feed's heartbeat: an answer whose ``updatedAt`` is older is not used (None:
    ``Settings.max_price_age``).
    """

    token: str
    aggregator: str
    rpc_url: str | None = attrs.field(default=None, repr=redacted_repr)  # may hold a key
    chain_id: int | None = None
    vs_currency: str = "usd"
    max_age: int | None = None


def chainlink_feeds(raw: object) -> dict[str, ChainlinkFeed]:
    """``{"1:0x0000...": {"aggregator": "0x5f4e...", "chain_id": 1, "vs_currency": "usd"}}``."""
    data = _json(raw, "chainlink_feeds")
    if not isinstance(data, Mapping):
        raise InvalidInput("chainlink_feeds", "must be an object")
    feeds: dict[str, ChainlinkFeed] = {}
    for key, entry in data.items():
        token = str(TokenId.parse(key, "chainlink_feeds"))
        if isinstance(entry, ChainlinkFeed):
            feeds[token] = attrs.evolve(entry, token=token)
            continue
        if not isinstance(entry, Mapping) or "aggregator" not in entry:
            raise InvalidInput("chainlink_feeds", f"{key}: needs an aggregator address")
        unknown = set(entry) - {"aggregator", "rpc_url", "chain_id", "vs_currency", "max_age"}
        if unknown:
            raise InvalidInput("chainlink_feeds", f"{key}: unknown keys {sorted(unknown)}")
        max_age = entry.get("max_age")
        chain_id = entry.get("chain_id")
        feeds[token] = ChainlinkFeed(
            token=token,
            aggregator=to_checksum(str(entry["aggregator"]), "chainlink_feeds"),
            rpc_url=entry.get("rpc_url") or None,
            chain_id=None if chain_id in (None, "") else int(chain_id),
            vs_currency=currency(entry.get("vs_currency", "usd"), "chainlink_feeds"),
            max_age=None if max_age in (None, "") else int(max_age),
        )
    return feeds


def _int(raw: object) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int | str):
        raise TypeError(f"not an integer: {raw!r}")
    return int(raw)


def whole_seconds(raw: object) -> int:
    """A positive number of seconds (``max_price_age``)."""
    try:
        value = _int(raw.strip() if isinstance(raw, str) else raw)
    except (TypeError, ValueError):
        raise InvalidInput("max_price_age", f"not a whole number of seconds: {raw!r}") from None
    if value < 1:
        raise InvalidInput("max_price_age", "must be at least 1 second")
    return value


def at_least_one(raw: object) -> int:
    try:
        value = _int(raw)
    except (TypeError, ValueError):
        raise InvalidInput("coingecko_batch_size", f"not an integer: {raw!r}") from None
    if value < 1:
        raise InvalidInput("coingecko_batch_size", "must be at least 1")
    return value
