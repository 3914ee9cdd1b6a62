"""``TronBackend``: the ChainBackend and WalletBackend of every configured Tron chain.

Like ``EvmBackend`` it only routes (``paycore.chains.routing``): a chain id picks a
:class:`TronChain`, the owner's invoices come from storage, and the work is done by
``operations`` (helpers) and ``watcher`` (deposits). Construction does no I/O, so a gateway
starts while a node is down.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from paycore.chains import WithdrawRequest
from paycore.chains.routing import RoutingBackend, allocated_indexes, invoices_of
from paycore.config import ChainConfig
from paycore.domain.records import Json
from paycore.errors import InvalidInput

from . import operations as _operations
from .chain import TronChain

if TYPE_CHECKING:
    from paycore.chains.host import ChainHost


class TronBackend(RoutingBackend[TronChain]):
    name = "tron"
    label = "Tron"
    operations = _operations

    def _new_chain(self, config: ChainConfig) -> TronChain:
        return TronChain(config)

    # -- ChainBackend / WatchingBackend ---------------------------------------------------
    def watch(self, gateway: ChainHost, stop_event: threading.Event) -> None:
        """Scan every chain of this backend for deposits until ``stop_event`` is set."""
        from .watcher import run_watchers

        run_watchers(gateway, list(self.chains.values()), stop_event)

    # -- WalletBackend --------------------------------------------------------------------
    def init_withdraw(
        self, gateway: ChainHost, owner: str, chain_id: int, request: WithdrawRequest
    ) -> Json:
        chain = self.chain(chain_id)
        indexes = allocated_indexes(chain, owner, invoices_of(gateway, owner, chain_id))
        return _operations.init_withdraw(chain, owner, indexes, request)

    def faucet(self, chain_id: int, to: str) -> Json:
        raise InvalidInput("chainId", "the faucet exists on chain 1337 and 31337 only")
