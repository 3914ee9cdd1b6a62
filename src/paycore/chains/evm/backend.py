"""``EvmBackend``: the ChainBackend and WalletBackend of every configured EVM chain.

The backend only routes: a chain id picks an :class:`EvmChain`, the owner's invoices come
from storage, and the work is done by ``operations`` (helpers) and ``watcher`` (deposits).
Construction does no I/O, so a gateway starts even while a node is down; the first call
that needs the node reports it (502).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING

from paycore.chains import WithdrawRequest
from paycore.chains.admin import ChainSync
from paycore.config import ChainConfig
from paycore.errors import InvalidInput
from paycore.management import disabled_indexes
from paycore.model import Invoice, Json

from . import operations, wallet_admin
from .chain import EvmChain
from .staking import EvmStaking

if TYPE_CHECKING:
    from paycore.gateway import Gateway


class EvmBackend:
    name = "evm"

    def __init__(self, configs: Iterable[ChainConfig]) -> None:
        self.chains: dict[int, EvmChain] = {c.chain_id: EvmChain(c) for c in configs}
        self.chain_ids = frozenset(self.chains)

    def chain(self, chain_id: int) -> EvmChain:
        try:
            return self.chains[chain_id]
        except KeyError:
            raise InvalidInput("chainId", f"no EVM backend for chain {chain_id}") from None

    # -- ChainBackend ---------------------------------------------------------------------
    def watch(self, gateway: Gateway, stop_event: threading.Event) -> None:
        """Scan every chain of this backend for deposits until ``stop_event`` is set."""
        from .watcher import run_watchers

        run_watchers(gateway, stop_event)

    def deposit_address(self, owner: str, chain_id: int, index: int) -> str:
        return self.chain(chain_id).deposit_of(owner, index)

    # -- WalletBackend --------------------------------------------------------------------
    def get_address(self, owner: str, chain_id: int, index: int, contract_type: str) -> str:
        return self.chain(chain_id).address(owner, index, contract_type)

    def init_wallet(self, owner: str, chain_id: int) -> Json:
        return operations.init_wallet(self.chain(chain_id), owner)

    def deploy_wallet(self, chain_id: int, raw_tx: object) -> Json:
        return operations.deploy_wallet(self.chain(chain_id), raw_tx)

    def balances(self, gateway: Gateway, owner: str, chain_id: int) -> list[Json]:
        chain = self.chain(chain_id)
        invoices = _invoices_of(gateway, owner, chain_id)
        accepted = {token for invoice in invoices for token in invoice.accepted_tokens}
        tokens = chain.known_tokens(gateway.prices.prices, sorted(accepted))
        indexes = _indexes(chain, owner, invoices)
        return operations.balances(chain, owner, indexes, tokens, gateway.prices)

    def init_withdraw(
        self, gateway: Gateway, owner: str, chain_id: int, request: WithdrawRequest
    ) -> Json:
        chain = self.chain(chain_id)
        indexes = _indexes(chain, owner, _invoices_of(gateway, owner, chain_id))
        # /disableWalletIndex takes effect here at once, before (or without) the on-chain
        # call; operations also skips the indexes the wallet itself has disabled.
        off = disabled_indexes(gateway, owner, chain_id)
        return operations.init_withdraw(chain, owner, [i for i in indexes if i not in off], request)

    def faucet(self, chain_id: int, to: str) -> Json:
        return operations.faucet(self.chain(chain_id), to)

    # -- WalletAdminBackend (paycore.chains.admin): app keys and disabled indexes ----------
    def wallet_deployed(self, chain_id: int, owner: str) -> bool:
        return wallet_admin.wallet_deployed(self.chain(chain_id), owner)

    def wallet_admin(
        self, chain_id: int, owner: str, signer: str, action: str, argument: str | int
    ) -> ChainSync:
        return wallet_admin.wallet_admin(self.chain(chain_id), owner, signer, action, argument)

    def app_keys_on_chain(self, chain_id: int, owner: str) -> list[str] | None:
        return wallet_admin.app_keys_on_chain(self.chain(chain_id), owner)

    # -- StakingProvider (paycore.staking) -------------------------------------------------
    def staking(self, chain_id: int, contract: str) -> EvmStaking:
        return EvmStaking(self.chain(chain_id), contract)


def _invoices_of(gateway: Gateway, owner: str, chain_id: int) -> list[Invoice]:
    with gateway.storage.transaction() as tx:
        invoices, _total = tx.list_invoices(owner=owner, chain_id=chain_id)
    return invoices


def _indexes(chain: EvmChain, owner: str, invoices: list[Invoice]) -> list[int]:
    """The deposit indexes paycore allocated to the owner on this chain.

    Every allocated index belongs to exactly one invoice (the index is allocated in the
    invoice's own transaction), so the first ``len(invoices)`` indexes cover them all; an
    address the merchant derived and passed in by hand is found when its index is below
    that count.
    """
    return chain.deposit_indexes(owner, len(invoices), (i.address for i in invoices))
