"""Where prices come from and how every process agrees on them (issue 7).

- ``coingecko``: a CoinGecko-compatible HTTP source (``/simple/price``, ``/simple/token_price``).
- ``chainlink``: on-chain AggregatorV3 feeds read over JSON-RPC.
- ``paycore.prices.pricing.StaticPriceSource``: prices and stablecoin pegs from configuration.
- ``refresher``: the worker loop that asks the sources, in the configured order per token, and
  writes the last good price of each token to storage.
- ``service``: what the Gateway asks: the fresh table of a vsCurrency, a deposit's price, the
  quotes locked at invoice creation.
- ``plugin``: registers the CoinGecko and Chainlink sources from ``Settings``.

Kept free of imports on purpose: storage imports ``paycore.prices.records`` and must not pull
an HTTP client in with it.
"""
