"""The Tron (TVM) chain backend: TronGrid / java-tron HTTP API through tronpy's provider.

Mirrors ``paycore.chains.evm``: ``address`` derives deposit addresses offline (TVM CREATE2,
prefix 0x41, the same contract artifacts), ``watcher`` attributes TRC20 and TRX deposits,
``operations`` and ``txbuild`` build the unsigned transactions of the wallet helpers, and
``backend`` routes a chain id to them. See docs/tron.md.
"""
