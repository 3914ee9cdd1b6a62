"""``TronBackend``: the ChainBackend and WalletBackend of every configured Tron chain.

Like ``EvmBackend`` it only routes: a chain id picks a :class:`TronChain`, the owner's
invoices come from storage, and the work is done by ``operations`` (helpers) and
``watcher`` (deposits). Construction does no I/O, so a gateway starts while a node is down.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING

from paycore.chains import WithdrawRequest
from paycore.config import ChainConfig
from paycore.errors import InvalidInput
from paycore.model import Invoice, Json

from . import operations
from .chain import TronChain

if TYPE_CHECKING:
    from paycore.gateway import Gateway


class TronBackend:
    name = "tron"

    def __init__(self, configs: Iterable[ChainConfig]) -> None:
        self.chains: dict[int, TronChain] = {c.chain_id: TronChain(c) for c in configs}
        self.chain_ids = frozenset(self.chains)

    def chain(self, chain_id: int) -> TronChain:
        try:
            return self.chains[chain_id]
        except KeyError:
            raise InvalidInput("chainId", f"no Tron backend for chain {chain_id}") from None

    # -- ChainBackend / WatchingBackend ---------------------------------------------------
    def watch(self, gateway: Gateway, stop_event: threading.Event) -> None:
        """Scan every chain of this backend for deposits until ``stop_event`` is set."""
        from .watcher import run_watchers

        run_watchers(gateway, list(self.chains.values()), stop_event)

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
        return operations.init_withdraw(chain, owner, indexes, request)

    def faucet(self, chain_id: int, to: str) -> Json:
        raise InvalidInput("chainId", "the faucet exists on chain 1337 and 31337 only")


def _invoices_of(gateway: Gateway, owner: str, chain_id: int) -> list[Invoice]:
    with gateway.storage.transaction() as tx:
        invoices, _total = tx.list_invoices(owner=owner, chain_id=chain_id)
    return invoices


def _indexes(chain: TronChain, owner: str, invoices: list[Invoice]) -> list[int]:
    """The deposit indexes paycore allocated to the owner on this chain: every allocated
    index belongs to one invoice, so the first ``len(invoices)`` indexes cover them all."""
    return chain.deposit_indexes(owner, len(invoices), (i.address for i in invoices))
