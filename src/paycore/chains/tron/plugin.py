"""The Tron chain plugin: one ``TronBackend`` for every Tron chain with an RPC URL and a factory.

Registered under the ``paycore`` entry-point group (``tron_chains``), so an operator can
block it by that name (``PAYCORE_BLOCKED_PLUGINS=tron_chains``) like any other plugin. tronpy
is imported only when a Tron chain is configured: it is the optional ``tron`` extra.
"""

from __future__ import annotations

from paycore.chains.common import configured
from paycore.config import Settings
from paycore.domain.tokens import ChainKind
from paycore.plugins.hookspecs import RegisterChainBackend, hookimpl


@hookimpl
def paycore_chain_backends(settings: Settings, register: RegisterChainBackend) -> None:
    configs = configured(settings, ChainKind.TRON)
    if configs:
        from .backend import TronBackend

        register(TronBackend(configs))
