"""What the EVM and Tron chains share, beyond how they talk to their nodes.

Both deploy the same ``PaycoreWallet``/forwarder contracts from a factory, so an owner's
wallet and deposit addresses, the deposit indexes paycore handed out, the tokens a chain
knows and the shape of a balance entry follow the same rules; only address derivation and
contract reads differ. Those rules live here once so the two backends cannot drift apart.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING

import attrs

from paycore.config import ChainConfig, Settings
from paycore.domain.money import from_base_units, to_base_units, to_text
from paycore.domain.records import Json
from paycore.domain.registry import TokenMeta as TokenMeta
from paycore.domain.tokens import NATIVE, ChainKind, TokenId
from paycore.errors import InvalidInput, PriceUnavailable

if TYPE_CHECKING:
    from paycore.chains import WithdrawRequest
    from paycore.prices.pricing import PriceTable

CONTRACT_TYPES = ("deposit", "wallet")


def configured(settings: Settings, kind: ChainKind) -> list[ChainConfig]:
    """The chains of ``kind`` a backend can serve: those with both an RPC URL and a factory
    (without either there is nothing to derive addresses from or to ask)."""
    return [c for c in settings.chains.values() if c.kind is kind and c.rpc_url and c.factory]


@attrs.frozen
class Transfer:
    """A token or native transfer to a watched address, not yet valued or attributed."""

    tx_hash: str
    #: The log's index (EVM: in the block; Tron: in the transaction's log list); -1 for
    #: native coin (docs/architecture.md §Chains).
    log_index: int
    tx_index: int
    block_number: int
    block_hash: str
    token: str  # the token contract, or NATIVE
    from_: str
    to: str
    units: int

    @property
    def order(self) -> tuple[int, int, int]:
        return (self.block_number, self.tx_index, self.log_index)


class ChainBase:
    """A configured chain with both ``rpc_url`` and ``factory`` (the plugin checks): its
    config, its factory, and the token facts it has learned.

    Subclasses derive addresses (:meth:`wallet_of`, :meth:`_deposit_at`) and read token
    facts from their node (:meth:`token_meta`, kept in ``_tokens`` under ``_tokens_lock``,
    since a deployed token's ``decimals()`` never changes).
    """

    def __init__(self, config: ChainConfig) -> None:
        if config.factory is None or config.rpc_url is None:
            raise ValueError(f"chain {config.chain_id} needs rpc_url and factory")
        self.config = config
        self.chain_id = config.chain_id
        self.factory: str = config.factory
        self.rpc_url: str = config.rpc_url
        # Known without asking the node: the coin, and the configured tokens whose entry
        # carried symbol and decimals (or that the registry lists); the rest are read once.
        self._tokens: dict[str, TokenMeta] = {
            NATIVE: TokenMeta(NATIVE, config.native_symbol, config.native_decimals),
            **config.token_info,
        }
        self._tokens_lock = threading.Lock()

    # -- addresses (pure) -----------------------------------------------------------------
    def wallet_of(self, owner: str) -> str:
        raise NotImplementedError

    def _deposit_at(self, wallet: str, index: int) -> str:
        """The forwarder of ``wallet`` at ``index``."""
        raise NotImplementedError

    def deposit_of(self, owner: str, index: int) -> str:
        return self._deposit_at(self.wallet_of(owner), index)

    def address(self, owner: str, index: int, contract_type: str = "deposit") -> str:
        """/getAddress: a forwarder at ``index`` or the owner's wallet itself."""
        if contract_type == "wallet":
            return self.wallet_of(owner)
        if contract_type != "deposit":
            raise InvalidInput("contractType", f"must be one of {', '.join(CONTRACT_TYPES)}")
        return self.deposit_of(owner, index)

    def deposit_indexes(self, owner: str, count: int, addresses: Iterable[str]) -> list[int]:
        """Which of the owner's first ``count`` deposit indexes have an address among
        ``addresses`` (the owner's invoices): the indexes paycore handed out."""
        wanted = set(addresses)
        wallet = self.wallet_of(owner)
        return [i for i in range(count) if self._deposit_at(wallet, i) in wanted]

    # -- tokens ---------------------------------------------------------------------------
    def known_tokens(self, prices: Mapping[str, Decimal], extra: Iterable[str] = ()) -> list[str]:
        """The native coin, the configured tokens, the priced ones on this chain, then
        ``extra`` token ids (``{chainId}:{address}``) of this chain; each once, in that
        order."""
        found = [NATIVE, *self.config.tokens]
        for token_id in [*prices, *extra]:
            parsed = TokenId.parse(token_id)
            if parsed.chain_id == self.chain_id:
                found.append(parsed.address)
        return list(dict.fromkeys(found))

    def token_meta(self, tokens: Iterable[str]) -> dict[str, TokenMeta]:
        """Decimals and symbol of each token that has them. A contract without a sane
        ``decimals()`` is left out: it cannot be valued."""
        raise NotImplementedError


def balance_entry(
    chain_id: int, meta: TokenMeta, in_wallet: int, in_deposits: int, prices: PriceTable
) -> Json:
    """One token's row of /getBalances: wallet and forwarders in whole tokens, and their
    value (None when the token has no fresh price: a balance is shown all the same)."""
    total = from_base_units(in_wallet + in_deposits, meta.decimals)
    token_id = f"{chain_id}:{meta.address}"
    try:
        vs_value: float | int | None = _number(prices.value(token_id, total))
    except PriceUnavailable:
        vs_value = None
    return {
        "token": meta.address,
        "tokenId": token_id,
        "symbol": meta.symbol,
        "decimals": meta.decimals,
        "balance": to_text(total),
        "walletBalance": to_text(from_base_units(in_wallet, meta.decimals)),
        "depositBalance": to_text(from_base_units(in_deposits, meta.decimals)),
        "vsValue": vs_value,
    }


def _number(value: Decimal) -> float | int:
    """A JSON number: an integral value without a fraction, any other as a float."""
    return int(value) if value == value.to_integral_value() else float(value)


# -- /deployWallet ------------------------------------------------------------------------------


def deploy_owner(*, to_factory: bool, factory: str, data: bytes, value: int, coin: str) -> str:
    """The owner a signed transaction deploys a wallet for, once it is checked to do only
    that: sent to this chain's factory, calling ``deployWallet(address)``, with no ``coin``
    attached. paycore relays what the owner signed, so it must not relay anything else."""
    from paycore.chains.evm import abi  # eth_abi only where a wallet is deployed, not in plugins

    if not to_factory:
        raise InvalidInput("rawTx", f"must be sent to the factory {factory}")
    owner = abi.decode_deploy_wallet(data)
    if owner is None:
        raise InvalidInput("rawTx", "must call deployWallet(address)")
    if value:
        raise InvalidInput("rawTx", f"deployWallet takes no {coin}")
    return owner


# -- /initWithdraw ------------------------------------------------------------------------------


def withdraw_amount(chain: ChainBase, request: WithdrawRequest) -> tuple[TokenMeta, int]:
    """The token a withdrawal moves and how much, in base units: ``value`` as given, or
    ``amount`` (whole tokens) converted with the token's decimals. A token without
    decimals is a 400: nothing could say how much it is."""
    meta = chain.token_meta([request.token]).get(request.token)
    if meta is None:
        raise InvalidInput("tokenAddress", f"{request.token} is not a token on {chain.chain_id}")
    if request.value is not None:
        return meta, request.value
    assert request.amount is not None
    return meta, to_base_units(request.amount, meta.decimals)


def not_deployed(wallet: str) -> InvalidInput:
    """The 400 of a withdrawal from a wallet that is not on chain yet, saying what to do."""
    return InvalidInput(
        "ownerAddress", f"no wallet deployed at {wallet}: use /initWallet and /deployWallet"
    )


def check_available(amount: int, available: int, meta: TokenMeta) -> None:
    """A 400 before the owner signs anything when the wallet and the chosen forwarders
    hold less than ``amount`` (base units): the transaction would only revert."""
    if amount > available:
        have = to_text(from_base_units(available, meta.decimals))
        raise InvalidInput("amount", f"more than the {have} {meta.symbol} available to withdraw")


def withdraw_summary(
    chosen: Sequence[int], amount: int, fee: int, meta: TokenMeta, native_decimals: int
) -> Json:
    """What /initWithdraw reports beside the transaction: the forwarders it collects from
    (as the calldata orders them) and the amount and fee in whole tokens."""
    return {
        "indexes": sorted(set(chosen)),
        "amount": to_text(from_base_units(amount, meta.decimals)),
        "fee": to_text(from_base_units(fee, native_decimals)),
    }
