"""``EvmBackend``: the ChainBackend and WalletBackend of every configured EVM chain.

The backend only routes (``paycore.chains.routing``): a chain id picks an
:class:`EvmChain`, the owner's invoices come from storage, and the work is done by
``operations`` (helpers) and ``watcher`` (deposits). What is EVM's own: the watcher runs
every EVM chain of the gateway, withdrawals skip disabled indexes, dev chains have a
faucet, and wallets carry app keys. Construction does no I/O, so a gateway starts even
while a node is down; the first call that needs the node reports it (502).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from paycore.chains import WithdrawRequest
from paycore.chains.admin import ChainSync
from paycore.chains.routing import RoutingBackend, allocated_indexes, invoices_of
from paycore.config import ChainConfig
from paycore.domain.records import Json
from paycore.domain.registry import TokenMeta
from paycore.payouts.backend import BuiltPayouts, MinedCall
from paycore.payouts.rows import PayoutRow

from . import operations as _operations
from . import wallet_admin
from .chain import EvmChain
from .payouts import EvmPayouts
from .staking import EvmStaking

if TYPE_CHECKING:
    from paycore.chains.host import ChainHost


class EvmBackend(RoutingBackend[EvmChain]):
    name = "evm"
    label = "EVM"
    operations = _operations

    def _new_chain(self, config: ChainConfig) -> EvmChain:
        return EvmChain(config)

    # -- ChainBackend ---------------------------------------------------------------------
    def watch(self, gateway: ChainHost, stop_event: threading.Event) -> None:
        """Scan every chain of this backend for deposits until ``stop_event`` is set."""
        from .watcher import run_watchers

        run_watchers(gateway, stop_event)

    # -- WalletBackend --------------------------------------------------------------------
    def init_withdraw(
        self, gateway: ChainHost, owner: str, chain_id: int, request: WithdrawRequest
    ) -> Json:
        chain = self.chain(chain_id)
        indexes = allocated_indexes(chain, owner, invoices_of(gateway, owner, chain_id))
        # /disableWalletIndex takes effect here at once, before (or without) the on-chain
        # call; operations also skips the indexes the wallet itself has disabled.
        off = gateway.management.disabled_indexes(owner, chain_id)
        return _operations.init_withdraw(
            chain, owner, [i for i in indexes if i not in off], request
        )

    def faucet(self, chain_id: int, to: str) -> Json:
        return _operations.faucet(self.chain(chain_id), to)

    # -- WalletAdminBackend (paycore.chains.admin): app keys and disabled indexes ----------
    def wallet_deployed(self, chain_id: int, owner: str) -> bool:
        return wallet_admin.wallet_deployed(self.chain(chain_id), owner)

    def wallet_admin(
        self, chain_id: int, owner: str, signer: str, action: str, argument: str | int
    ) -> ChainSync:
        return wallet_admin.wallet_admin(self.chain(chain_id), owner, signer, action, argument)

    def app_keys_on_chain(self, chain_id: int, owner: str) -> list[str] | None:
        return wallet_admin.app_keys_on_chain(self.chain(chain_id), owner)

    # -- StakingProvider (paycore.management.staking) -------------------------------------
    def staking(self, chain_id: int, contract: str) -> EvmStaking:
        return EvmStaking(self.chain(chain_id), contract)

    # -- PayoutBackend (paycore.payouts.backend) --------------------------------------------
    def build_payouts(
        self, chain_id: int, owner: str, contract: str, ref: bytes, rows: Sequence[PayoutRow]
    ) -> BuiltPayouts:
        return EvmPayouts(self.chain(chain_id)).build_payouts(owner, contract, ref, rows)

    def token_facts(self, chain_id: int, tokens: Sequence[str]) -> dict[str, TokenMeta]:
        return self.chain(chain_id).token_meta(tokens)

    def mined_call(self, chain_id: int, tx_hash: str) -> MinedCall | None:
        return EvmPayouts(self.chain(chain_id)).mined_call(tx_hash)
