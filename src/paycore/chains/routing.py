"""What a chain backend does before the chain-specific work: route by chain id.

``EvmBackend`` and ``TronBackend`` only route: a chain id picks a configured chain, the
owner's invoices come from storage, and the work is done by the backend's ``operations``
module (helpers) and its watcher (deposits). The routing is the same for both, so it lives
here; a backend adds what differs (watching, withdrawals, the faucet, wallet admin).
Construction does no I/O, so a gateway starts even while a node is down; the first call
that needs the node reports it (502).
"""

from __future__ import annotations

from collections.abc import Iterable
from types import ModuleType
from typing import TYPE_CHECKING, Generic, TypeVar

from paycore.config import ChainConfig
from paycore.domain.records import Invoice, Json
from paycore.errors import InvalidInput

from .common import ChainBase

if TYPE_CHECKING:
    from paycore.chains.host import ChainHost

ChainT = TypeVar("ChainT", bound=ChainBase)


class RoutingBackend(Generic[ChainT]):
    """The ChainBackend and WalletBackend calls every chain kind answers alike.

    A subclass sets ``name``, ``label`` (the chain kind as errors name it), ``operations``
    (its module of ``init_wallet``, ``deploy_wallet`` and ``balances``) and builds its
    chains in :meth:`_new_chain`.
    """

    name: str
    label: str
    operations: ModuleType

    def __init__(self, configs: Iterable[ChainConfig]) -> None:
        self.chains: dict[int, ChainT] = {c.chain_id: self._new_chain(c) for c in configs}
        self.chain_ids = frozenset(self.chains)

    def _new_chain(self, config: ChainConfig) -> ChainT:
        raise NotImplementedError

    def chain(self, chain_id: int) -> ChainT:
        try:
            return self.chains[chain_id]
        except KeyError:
            raise InvalidInput("chainId", f"no {self.label} backend for chain {chain_id}") from None

    # -- ChainBackend ---------------------------------------------------------------------
    def deposit_address(self, owner: str, chain_id: int, index: int) -> str:
        return self.chain(chain_id).deposit_of(owner, index)

    # -- WalletBackend --------------------------------------------------------------------
    def get_address(self, owner: str, chain_id: int, index: int, contract_type: str) -> str:
        return self.chain(chain_id).address(owner, index, contract_type)

    def init_wallet(self, owner: str, chain_id: int) -> Json:
        result: Json = self.operations.init_wallet(self.chain(chain_id), owner)
        return result

    def deploy_wallet(self, chain_id: int, raw_tx: object) -> Json:
        result: Json = self.operations.deploy_wallet(self.chain(chain_id), raw_tx)
        return result

    def token_decimals(self, chain_id: int, token: str) -> int | None:
        """RefundBackend: the token's decimals, read once per chain and token."""
        meta = self.chain(chain_id).token_meta([token]).get(token)
        return None if meta is None else meta.decimals

    def balances(self, gateway: ChainHost, owner: str, chain_id: int) -> list[Json]:
        chain = self.chain(chain_id)
        invoices = invoices_of(gateway, owner, chain_id)
        accepted = {token for invoice in invoices for token in invoice.accepted_tokens}
        tokens = chain.known_tokens(gateway.prices.prices, sorted(accepted))
        indexes = allocated_indexes(chain, owner, invoices)
        result: list[Json] = self.operations.balances(chain, owner, indexes, tokens, gateway.prices)
        return result


def invoices_of(gateway: ChainHost, owner: str, chain_id: int) -> list[Invoice]:
    """Every invoice of ``owner`` on the chain, from storage."""
    invoices, _total = gateway.chain_ledger.invoices_of(owner, chain_id)
    return invoices


def allocated_indexes(chain: ChainBase, owner: str, invoices: list[Invoice]) -> list[int]:
    """The deposit indexes paycore allocated to the owner on this chain.

    Every allocated index belongs to exactly one invoice (the index is allocated in the
    invoice's own transaction), so the first ``len(invoices)`` indexes cover them all; an
    address the merchant derived and passed in by hand is found when its index is below
    that count.
    """
    return chain.deposit_indexes(owner, len(invoices), (i.address for i in invoices))
