"""``TronBackend``: the ChainBackend and WalletBackend of every configured Tron chain.

Like ``EvmBackend`` it only routes (``paycore.chains.routing``): a chain id picks a
:class:`TronChain`, the owner's invoices come from storage, and the work is done by
``operations`` (helpers) and ``watcher`` (deposits). Construction does no I/O, so a gateway
starts while a node is down.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from paycore.chains import WithdrawRequest
from paycore.chains.common import TokenMeta
from paycore.chains.routing import RoutingBackend, allocated_indexes, invoices_of
from paycore.config import ChainConfig
from paycore.domain.records import Json
from paycore.errors import InvalidInput
from paycore.payouts.backend import BuiltPayouts, MinedCall
from paycore.payouts.rows import PayoutRow

from . import operations as _operations
from .chain import TronChain
from .payouts import TronPayouts

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

    # -- PayoutBackend (paycore.payouts.backend) --------------------------------------------
    def build_payouts(
        self, chain_id: int, owner: str, contract: str, ref: bytes, rows: Sequence[PayoutRow]
    ) -> BuiltPayouts:
        return TronPayouts(self.chain(chain_id)).build_payouts(owner, contract, ref, rows)

    def token_facts(self, chain_id: int, tokens: Sequence[str]) -> dict[str, TokenMeta]:
        return self.chain(chain_id).token_meta(tokens)

    def mined_call(self, chain_id: int, tx_hash: str) -> MinedCall | None:
        return TronPayouts(self.chain(chain_id)).mined_call(tx_hash)
