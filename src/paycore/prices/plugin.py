"""The price-source plugin: CoinGecko and Chainlink, each on when configured.

Registered through the ``paycore`` entry-point group (``prices = "paycore.prices.plugin"``).
The static source is a built-in (``paycore.plugins.builtins``) and comes last unless
``Settings.price_sources`` orders otherwise.
"""

from __future__ import annotations

from ..config import Settings
from ..plugins.hookspecs import RegisterPriceSource, hookimpl


@hookimpl
def paycore_price_sources(settings: Settings, register: RegisterPriceSource) -> None:
    if settings.chainlink_feeds:
        from .chainlink import ChainlinkSource

        register(
            ChainlinkSource(
                settings.chainlink_feeds,
                rpc_urls={c.chain_id: c.rpc_url for c in settings.chains.values() if c.rpc_url},
                max_age=settings.max_price_age,
            )
        )
    if settings.coingecko_enabled:
        from .coingecko import CoinGeckoSource

        register(
            CoinGeckoSource(
                base_url=settings.coingecko_url,
                coin_ids=settings.coingecko_coin_ids,
                platforms=settings.coingecko_platforms,
                api_key=settings.coingecko_api_key,
                key_header=settings.coingecko_key_header,
                timeout=settings.coingecko_timeout,
                batch_size=settings.coingecko_batch_size,
                max_retries=settings.coingecko_max_retries,
                max_backoff=settings.coingecko_max_backoff,
            )
        )
