"""The staking helpers of docs/interface.md (Ethereum only): read a staking program's state
for some owners and build the owner's unsigned approve, stake, unstake and claim calls.

The program is a ``PaycoreStaking`` contract (``contracts/PaycoreStaking.sol``) at
``Settings.staking_contract`` on ``Settings.staking_chain_id`` -- Ethereum in production,
anvil in tests; "Ethereum only" means one configured chain, so a request naming another
``chainId`` is refused. Like /initWithdraw, nothing here signs: each helper answers with the
unsigned ``transaction`` and a ``walletDeepLink`` that opens the same transaction in a
mobile wallet (format in docs/management.md). The helpers are public, as /initWallet is:
they reveal only chain state anyone can read, and a transaction is only good once its
sender signs it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable
from urllib.parse import urlencode

import attrs

from ..domain.fields import Address, BigUint, ChainId
from ..domain.records import Json
from ..domain.tokens import NATIVE, to_checksum
from ..errors import InvalidInput

if TYPE_CHECKING:
    from ..config import Settings

#: Bounds on one /mevStakingInfo: each owner costs a few calls per token in one RPC batch.
MAX_OWNERS = 50
MAX_TOKENS = 20
DEEP_LINK_BASE = "https://metamask.app.link/send/"


@runtime_checkable
class StakingBackend(Protocol):
    """One staking contract on one chain. Values are base units (wei, token units)."""

    def info(self, owners: list[str], tokens: list[str]) -> Json:
        """The /mevStakingInfo object, keyed by owner address."""

    def stake(self, owner: str, token: str, value: int) -> Json:
        """The unsigned ``stake(token, value)``, or the ``approve`` it needs first
        (``isApprove`` true) when the owner's allowance is short."""

    def unstake(self, owner: str, token: str, value: int) -> Json: ...

    def claim(self, owner: str, tokens: list[str]) -> Json: ...


@runtime_checkable
class StakingProvider(Protocol):
    """A chain backend that can speak to a staking contract on one of its chains."""

    def staking(self, chain_id: int, contract: str) -> StakingBackend: ...


def wallet_deep_link(tx: Mapping[str, Any]) -> str:
    """A MetaMask deep link carrying ``tx``: ``https://metamask.app.link/send/<to>@<chainId>``
    with ``value`` (decimal wei) and ``data`` (0x hex) as query parameters -- the EIP-681
    ``ethereum:`` form behind MetaMask's own prefix, plus the calldata, which EIP-681 has no
    generic parameter for. Gas is left to the wallet."""
    query = {"value": str(int(str(tx["value"]), 16)), "data": str(tx["data"])}
    return f"{DEEP_LINK_BASE}{tx['to']}@{tx['chainId']}?{urlencode(query)}"


@attrs.frozen
class StakingInfo:
    """/mevStakingInfo (GET: the lists comma-separated)."""

    owner_addresses: tuple[Address, ...] = attrs.field(
        metadata={"doc": f"at most {MAX_OWNERS} owners"}
    )
    token_list: tuple[Address, ...] = attrs.field(
        metadata={"doc": f"at most {MAX_TOKENS} ERC20 tokens"}
    )
    chain_id: ChainId | None = attrs.field(
        default=None, metadata={"doc": "the staking chain; any other is refused"}
    )


@attrs.frozen
class StakeChange:
    """/mevStake and /mevUnstake."""

    owner_address: Address = attrs.field()
    token_address: Address = attrs.field(metadata={"doc": "an ERC20 token"})
    value: BigUint = attrs.field(metadata={"doc": "base units of the token, 1 to 2**256 - 1"})
    chain_id: ChainId | None = attrs.field(
        default=None, metadata={"doc": "the staking chain; any other is refused"}
    )


@attrs.frozen
class Claim:
    """/mevClaim."""

    owner_address: Address = attrs.field()
    token_list: tuple[Address, ...] = attrs.field(
        metadata={"doc": "the staked tokens whose rewards are paid out"}
    )
    chain_id: ChainId | None = attrs.field(
        default=None, metadata={"doc": "the staking chain; any other is refused"}
    )


def _backend(settings: Settings, chains: Mapping[int, object], given: int | None) -> StakingBackend:
    """The staking contract's backend, from the settings (which contract, on which chain)
    and the chain backends by chain id: the one of the staking chain provides it."""
    if settings.staking_contract is None:
        raise InvalidInput("chainId", "no staking contract is configured on this deployment")
    chain_id = settings.staking_chain_id
    if given is not None and given != chain_id:
        raise InvalidInput("chainId", f"staking runs on chain {chain_id} only")
    provider = chains.get(chain_id)
    if not isinstance(provider, StakingProvider):
        raise InvalidInput("chainId", f"no EVM backend is configured for chain {chain_id}")
    return provider.staking(chain_id, settings.staking_contract)


def _token(raw: str, field: str) -> str:
    token = to_checksum(raw, field)
    if token == NATIVE:
        raise InvalidInput(field, "must be an ERC20 token: the native coin cannot be staked")
    return token


def _list(raw: tuple[str, ...], field: str, limit: int) -> tuple[str, ...]:
    if not raw:
        raise InvalidInput(field, "required, a non-empty array of addresses")
    if len(raw) > limit:
        raise InvalidInput(field, f"at most {limit} entries")
    return raw


def _value(raw: int) -> int:
    if not 0 < raw < 1 << 256:
        raise InvalidInput("value", "must be between 1 and 2**256 - 1")
    return raw


def _answer(tx: Json) -> Json:
    return {"walletDeepLink": wallet_deep_link(tx), "transaction": tx}


def staking_info(settings: Settings, chains: Mapping[int, object], request: StakingInfo) -> Json:
    owners = [
        to_checksum(o, f"ownerAddresses[{i}]")
        for i, o in enumerate(_list(request.owner_addresses, "ownerAddresses", MAX_OWNERS))
    ]
    tokens = [
        _token(t, f"tokenList[{i}]")
        for i, t in enumerate(_list(request.token_list, "tokenList", MAX_TOKENS))
    ]
    return _backend(settings, chains, request.chain_id).info(owners, tokens)


def stake(settings: Settings, chains: Mapping[int, object], request: StakeChange) -> Json:
    owner = to_checksum(request.owner_address, "ownerAddress")
    token, value = _token(request.token_address, "tokenAddress"), _value(request.value)
    return _answer(_backend(settings, chains, request.chain_id).stake(owner, token, value))


def unstake(settings: Settings, chains: Mapping[int, object], request: StakeChange) -> Json:
    owner = to_checksum(request.owner_address, "ownerAddress")
    token, value = _token(request.token_address, "tokenAddress"), _value(request.value)
    return _answer(_backend(settings, chains, request.chain_id).unstake(owner, token, value))


def claim(settings: Settings, chains: Mapping[int, object], request: Claim) -> Json:
    """The interface leaves tokenList's meaning open: here it is the staked tokens whose rewards
    are paid out, as ``PaycoreStaking.claim(tokens)`` takes them."""
    owner = to_checksum(request.owner_address, "ownerAddress")
    tokens = [
        _token(t, f"tokenList[{i}]")
        for i, t in enumerate(_list(request.token_list, "tokenList", MAX_TOKENS))
    ]
    return _answer(_backend(settings, chains, request.chain_id).claim(owner, tokens))
