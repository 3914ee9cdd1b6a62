"""The EVM chain plugin: one ``EvmBackend`` for every EVM chain with an RPC URL and a factory.

Registered under the ``paycore`` entry-point group (``evm_chains``), so an operator can
block it by that name (``PAYCORE_BLOCKED_PLUGINS=evm_chains``) like any other plugin.
"""

from __future__ import annotations

from paycore.chains.common import configured
from paycore.config import Settings
from paycore.domain.tokens import ChainKind
from paycore.plugins.hookspecs import RegisterChainBackend, hookimpl


@hookimpl
def paycore_chain_backends(settings: Settings, register: RegisterChainBackend) -> None:
    configs = configured(settings, ChainKind.EVM)
    if configs:
        from .backend import EvmBackend  # web3 is imported only where a chain is configured

        register(EvmBackend(configs))
