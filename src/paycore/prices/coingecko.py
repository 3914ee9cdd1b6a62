"""A price source speaking CoinGecko's public API (or anything answering in its shapes).

- Native coins: ``GET /api/v3/simple/price?ids=ethereum,tron&vs_currencies=usd``, the coin id
  of each chain from ``coin_ids``.
- Tokens: ``GET /api/v3/simple/token_price/{platform}?contract_addresses=0x..,0x..&
  vs_currencies=usd``, the platform of each chain from ``platforms``.

Both ask for ``include_last_updated_at`` so a price is aged from when CoinGecko last saw it
move, not from when we asked. Ids and addresses go ``batch_size`` to a request. A 429 (or a
5xx) is retried after ``Retry-After`` (or an exponential backoff) as long as the wait stays
under ``max_backoff``; a longer one ends this round's requests and the source stays quiet
until then, since asking earlier only prolongs a ban. Timeouts, refused connections, error
statuses and answers that are not the expected JSON are logged and cost only the prices of
that request: the refresher then asks the next source. Numbers are parsed straight into
Decimal (``parse_float=Decimal``): a float never touches a price.
"""

from __future__ import annotations

import email.utils
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from decimal import Decimal
from typing import Any

import httpx

from ..domain.tokens import TokenId
from .pricing import Quote, is_usable

log = logging.getLogger("paycore.prices.coingecko")

PUBLIC_URL = "https://api.coingecko.com"
PRO_URL = "https://pro-api.coingecko.com"
#: Header names CoinGecko reads a key from: the Pro plan's and the free Demo plan's.
KEY_HEADERS = ("x-cg-pro-api-key", "x-cg-demo-api-key")


class _GiveUp(Exception):
    """This request will not succeed this round; the message says why (already logged)."""


def _batches(items: Sequence[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


def retry_after(value: str | None, now: float) -> float | None:
    """Seconds to wait from a ``Retry-After`` header: delta-seconds or an HTTP date."""
    if not value:
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - now)


class CoinGeckoSource:
    """CoinGecko-compatible HTTP source; thread-safe, one pooled connection per host."""

    name = "coingecko"

    def __init__(
        self,
        *,
        base_url: str = PUBLIC_URL,
        coin_ids: Mapping[int, str],
        platforms: Mapping[int, str],
        api_key: str | None = None,
        key_header: str = "x-cg-demo-api-key",
        timeout: float = 10.0,
        batch_size: int = 50,
        max_retries: int = 3,
        max_backoff: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.coin_ids = dict(coin_ids)
        self.platforms = dict(platforms)
        self.batch_size = max(1, batch_size)
        self.max_retries = max(0, max_retries)
        self.max_backoff = max_backoff
        self.sleep = sleep
        self.clock = clock
        headers = {"accept": "application/json", "user-agent": "paycore-prices"}
        if api_key:
            headers[key_header] = api_key
        self._client = httpx.Client(
            timeout=httpx.Timeout(timeout), headers=headers, transport=transport
        )
        self._quiet_until = 0.0
        self._lock = threading.Lock()

    def close(self) -> None:
        self._client.close()

    # -- the PriceSource protocol -----------------------------------------------------------
    def fetch(self, vs_currency: str, tokens: Sequence[str]) -> dict[str, Decimal]:
        return {t: q.price for t, q in self.fetch_quotes(vs_currency, tokens).items()}

    def fetch_quotes(self, vs_currency: str, tokens: Sequence[str]) -> dict[str, Quote]:
        vs = vs_currency.lower()
        coins: dict[str, list[str]] = {}  # coin id -> token ids it prices
        contracts: dict[str, dict[str, str]] = {}  # platform -> lower(address) -> token id
        for token in tokens:
            try:
                parsed = TokenId.parse(token)
            except Exception:  # not a token id: nobody can price it
                continue
            if parsed.is_native:
                coin = self.coin_ids.get(parsed.chain_id)
                if coin:
                    coins.setdefault(coin, []).append(token)
            else:
                platform = self.platforms.get(parsed.chain_id)
                if platform:
                    contracts.setdefault(platform, {})[parsed.address.lower()] = token
        found: dict[str, Quote] = {}
        try:
            for ids in _batches(sorted(coins), self.batch_size):
                answer = self._get(
                    "/api/v3/simple/price", {"ids": ",".join(ids), "vs_currencies": vs}
                )
                for coin in ids:
                    quote = _quote(answer.get(coin), vs)
                    if quote is not None:
                        found.update(dict.fromkeys(coins[coin], quote))
            for platform, by_address in sorted(contracts.items()):
                for addresses in _batches(sorted(by_address), self.batch_size):
                    answer = self._get(
                        f"/api/v3/simple/token_price/{platform}",
                        {"contract_addresses": ",".join(addresses), "vs_currencies": vs},
                    )
                    lowered = {str(k).lower(): v for k, v in answer.items()}
                    for address in addresses:
                        quote = _quote(lowered.get(address), vs)
                        if quote is not None:
                            found[by_address[address]] = quote
        except _GiveUp:
            pass  # what was found before the ban still counts
        return found

    # -- HTTP -------------------------------------------------------------------------------
    def _get(self, path: str, params: dict[str, str]) -> dict[str, Any]:
        """One GET with retries; the decoded JSON object, or ``{}`` for a lost request.

        Raises ``_GiveUp`` when the server asked us to stay away longer than we wait.
        """
        params = {**params, "include_last_updated_at": "true", "precision": "full"}
        url = self.base_url + path
        for attempt in range(self.max_retries + 1):
            with self._lock:
                quiet = self._quiet_until - self.clock()
            if quiet > 0:
                raise _GiveUp(f"rate limited for {quiet:.0f} s more")
            try:
                response = self._client.get(url, params=params)
            except httpx.TimeoutException:
                log.warning("coingecko: %s timed out; no prices from this request", path)
                return {}
            except httpx.HTTPError as exc:
                log.warning("coingecko: %s failed: %s", path, exc)
                return {}
            status = response.status_code
            if status == 429 or status >= 500:
                wait = retry_after(response.headers.get("retry-after"), self.clock())
                if wait is None:
                    wait = min(2.0**attempt, self.max_backoff)
                if attempt == self.max_retries or wait > self.max_backoff:
                    if status == 429:
                        with self._lock:
                            self._quiet_until = self.clock() + wait
                        log.warning("coingecko: rate limited (429); quiet for %.0f s", wait)
                        raise _GiveUp("rate limited")
                    log.warning("coingecko: %s answered %d; giving up this round", path, status)
                    return {}
                log.info("coingecko: %s answered %d; retrying in %.1f s", path, status, wait)
                self.sleep(wait)
                continue
            if status != 200:
                log.warning("coingecko: %s answered %d: %s", path, status, response.text[:200])
                return {}
            return _decode(response.content, path)
        return {}


def _decode(body: bytes, path: str) -> dict[str, Any]:
    try:
        data = json.loads(body, parse_float=Decimal)
    except ValueError as exc:
        log.warning("coingecko: %s answered something that is not JSON: %s", path, exc)
        return {}
    if not isinstance(data, dict):
        log.warning("coingecko: %s answered %s, not an object", path, type(data).__name__)
        return {}
    return data


def _quote(entry: object, vs: str) -> Quote | None:
    """``{"usd": 3012.5, "last_updated_at": 1711356300}`` -> Quote; anything else -> None."""
    if not isinstance(entry, dict):
        return None
    raw = entry.get(vs)
    if isinstance(raw, bool) or not isinstance(raw, Decimal | int):
        return None
    price = Decimal(raw)
    if not is_usable(price):
        return None
    updated = entry.get("last_updated_at")
    as_of = updated if isinstance(updated, int) and not isinstance(updated, bool) else None
    return Quote(price, as_of if as_of and as_of > 0 else None)
