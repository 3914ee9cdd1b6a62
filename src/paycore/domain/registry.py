"""Symbol and decimals of tokens: the built-in registry of the common stablecoins, and the
one lookup everything that shows a token to a person goes through.

Why a registry: a payer must read "Send 25 USDT", not a contract address, and a wallet can
only be handed an exact EIP-681 amount when the token's decimals are known. Asking the
chain needs a node and a round trip; the few tokens nearly every invoice is paid in are
known in advance, so they are listed here, with the address, the symbol the contract's
``symbol()`` returns (or a plainer one, with that one as an alias) and ``decimals()``.
``paycore chains check`` reads both from the chain and reports any difference, so a wrong
entry is found before a payer sees it.

:func:`describe` answers for one token of one chain, in this order: the chain's native coin
(``ChainConfig.native_symbol``/``native_decimals``), the chain's configured tokens that carry
symbol and decimals (``ChainConfig.token_info``), then this registry. A token none of them
knows is ``None``: its amount is then never guessed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from ..errors import InvalidInput
from .tokens import NATIVE, TRON_CHAIN_IDS, address_text, normalize_token_address

if TYPE_CHECKING:
    from ..config import Settings

#: Longest symbol taken from configuration (``symbol()`` of real tokens stays far below).
MAX_SYMBOL = 16
#: ``decimals()`` above 77 would make 10**decimals exceed 2**256: no real token has it.
MAX_DECIMALS = 77


@attrs.frozen
class TokenMeta:
    """What a person needs to read an amount of a token: its symbol and its decimals.

    ``address`` is the token contract (EIP-55 0x on EVM chains, base58 on Tron), or
    ``NATIVE`` for the chain's coin."""

    address: str
    symbol: str
    decimals: int


def checked_symbol(raw: object, field: str) -> str:
    """A symbol from configuration: 1 to 16 visible characters, taken as written."""
    if not isinstance(raw, str) or not raw:
        raise InvalidInput(field, "a token symbol must be a non-empty string")
    if len(raw) > MAX_SYMBOL:
        raise InvalidInput(field, f"a token symbol has at most {MAX_SYMBOL} characters")
    if any(not ch.isprintable() or ch.isspace() for ch in raw):
        raise InvalidInput(field, "a token symbol has no spaces or control characters")
    return raw


def checked_decimals(raw: object, field: str) -> int:
    """Decimals from configuration: an integer from 0 to 77 (not a bool, not a float)."""
    if isinstance(raw, str) and raw.isascii() and raw.isdigit():
        raw = int(raw)
    if isinstance(raw, bool) or not isinstance(raw, int) or not 0 <= raw <= MAX_DECIMALS:
        raise InvalidInput(field, f"token decimals must be an integer from 0 to {MAX_DECIMALS}")
    return raw


def symbol_key(symbol: str) -> str:
    """How symbols are compared in aliases: case-insensitively (``usdt`` is ``USDT``)."""
    return symbol.upper()


@attrs.frozen
class _Known:
    meta: TokenMeta
    #: More names an alias may use (``42161:USDT`` for the contract whose symbol is USD₮0).
    aliases: tuple[str, ...] = ()


def _entry(chain_id: int, address: str, symbol: str, decimals: int, *aliases: str) -> _Known:
    """A registry row, normalised here so a typo in an address fails at import (EIP-55 or
    base58check), not when a payer is shown it."""
    normalized = normalize_token_address(chain_id, address, "registry")
    return _Known(TokenMeta(normalized, symbol, decimals), aliases)


_ETHEREUM, _OPTIMISM, _BSC, _POLYGON, _BASE, _ARBITRUM, _SEPOLIA = (
    1,
    10,
    56,
    137,
    8453,
    42161,
    11155111,
)
_TRON = {name: cid for cid, name in TRON_CHAIN_IDS.items()}

#: The common stablecoins of every default chain, each as issued on that chain (bridged
#: copies with their own symbols are left out: they are where registries disagree). Add a
#: token the registry lacks with a ``ChainConfig.tokens`` entry carrying its symbol and
#: decimals.
_ROWS: tuple[tuple[int, str, str, int, tuple[str, ...]], ...] = (
    (_ETHEREUM, "0xdAC17F958D2ee523a2206206994597C13D831ec7", "USDT", 6, ()),
    (_ETHEREUM, "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48", "USDC", 6, ()),
    (_ETHEREUM, "0x6B175474E89094C44Da98b954EedeAC495271d0F", "DAI", 18, ()),
    (_OPTIMISM, "0x94b008aA00579c1307B0EF2c499aD98a8ce58e58", "USDT", 6, ()),
    (_OPTIMISM, "0x0b2C639c533813f4Aa9D7837CAf62653d097Ff85", "USDC", 6, ()),
    (_OPTIMISM, "0xDA10009cBd5D07dd0CeCc66161FC93D7c9000da1", "DAI", 18, ()),
    (_BSC, "0x55d398326f99059fF775485246999027B3197955", "USDT", 18, ()),
    (_BSC, "0x8AC76a51cc950d9822D68b83fE1Ad97B32Cd580d", "USDC", 18, ()),
    (_POLYGON, "0xc2132D05D31c914a87C6611C10748AEb04B58e8F", "USDT", 6, ()),
    (_POLYGON, "0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359", "USDC", 6, ()),
    (_BASE, "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", "USDC", 6, ()),
    (_BASE, "0x50c5725949A6F0c72E6C4a641F24049A917DB0Cb", "DAI", 18, ()),
    (_ARBITRUM, "0xFd086bC7CD5C481DCC9C85ebE478A1C0b69FCbb9", "USD₮0", 6, ("USDT", "USDT0")),
    (_ARBITRUM, "0xaf88d065e77c8cC2239327C5EDb3A432268e5831", "USDC", 6, ()),
    (_ARBITRUM, "0xDA10009cBd5D07dd0CeCc66161FC93D7c9000da1", "DAI", 18, ()),
    (_SEPOLIA, "0x1c7D4B196Cb0C7B01d743Fbc6116a902379C7238", "USDC", 6, ()),
    (_TRON["tron-mainnet"], "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", "USDT", 6, ()),
    (_TRON["tron-mainnet"], "TEkxiTehnzSmSe2XqrBj4w32RUN966rdz8", "USDC", 6, ()),
    (_TRON["tron-nile"], "TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf", "USDT", 6, ()),
)

_REGISTRY: dict[int, tuple[_Known, ...]] = {}
for _chain, _address, _symbol, _decimals, _aliases in _ROWS:
    _REGISTRY.setdefault(_chain, ())
    _REGISTRY[_chain] += (_entry(_chain, _address, _symbol, _decimals, *_aliases),)


def registry_tokens(chain_id: int) -> tuple[TokenMeta, ...]:
    """The registry's tokens on ``chain_id`` (none for a chain it does not list)."""
    return tuple(known.meta for known in _REGISTRY.get(chain_id, ()))


def registry_chains() -> tuple[int, ...]:
    """The chain ids the registry lists tokens for."""
    return tuple(_REGISTRY)


#: The same rows by (chain, normalised address): every invoice record sent names its tokens.
_BY_ADDRESS = {
    (chain, known.meta.address): known.meta for chain, rows in _REGISTRY.items() for known in rows
}


def registry_token(chain_id: int, address: str) -> TokenMeta | None:
    """The registry's row for a normalised token address, or None."""
    return _BY_ADDRESS.get((chain_id, address))


def registry_symbol(chain_id: int, symbol: str) -> TokenMeta | None:
    """The registry's token named ``symbol`` (or one of its aliases) on ``chain_id``."""
    wanted = symbol_key(symbol)
    for known in _REGISTRY.get(chain_id, ()):
        if wanted in {symbol_key(s) for s in (known.meta.symbol, *known.aliases)}:
            return known.meta
    return None


def describe(settings: Settings, chain_id: int, address: str) -> TokenMeta | None:
    """Symbol and decimals of token ``address`` (normalised) on ``chain_id``: the native
    coin from the chain's configuration, then the chain's configured tokens, then the
    registry; None when none of them knows it."""
    config = settings.chains.get(chain_id)
    if address == NATIVE:
        if config is None:
            return None
        return TokenMeta(NATIVE, config.native_symbol, config.native_decimals)
    if config is not None and address in config.token_info:
        return config.token_info[address]
    return registry_token(chain_id, address)


def by_symbol(settings: Settings, chain_id: int, symbol: str) -> TokenMeta | None:
    """The token a symbol names on ``chain_id``: the native coin (``ETH``, ``BNB``,
    ``TRX``...), a configured token that carries that symbol, or a registry token."""
    wanted = symbol_key(symbol)
    config = settings.chains.get(chain_id)
    if config is not None:
        if symbol_key(config.native_symbol) == wanted:
            return TokenMeta(NATIVE, config.native_symbol, config.native_decimals)
        for meta in config.token_info.values():
            if symbol_key(meta.symbol) == wanted:
                return meta
    return registry_symbol(chain_id, symbol)


def token_entry(chain_id: int, raw: object, field: str) -> tuple[str, TokenMeta | None]:
    """One ``ChainConfig.tokens`` entry: an address (its facts read from the chain later),
    a registry symbol such as ``"USDT"``, or ``{"address", "symbol", "decimals"}`` (symbol
    and decimals together, or neither). Returns the normalised address and what is known
    of it."""
    if isinstance(raw, TokenMeta):
        raw = attrs.asdict(raw)
    if isinstance(raw, Mapping):
        unknown = sorted(set(raw) - {"address", "symbol", "decimals"})
        if unknown:
            raise InvalidInput(field, f"a token entry has no field {unknown[0]!r}")
        if "address" not in raw:
            raise InvalidInput(field, "a token entry needs its address")
        address = normalize_token_address(chain_id, raw["address"], field)
        if ("symbol" in raw) != ("decimals" in raw):
            raise InvalidInput(field, "give a token's symbol and decimals together, or neither")
        if "symbol" not in raw:
            return address, registry_token(chain_id, address)
        meta = TokenMeta(
            address,
            checked_symbol(raw["symbol"], field),
            checked_decimals(raw["decimals"], field),
        )
        return address, meta
    text = address_text(raw, field)
    if len(text) <= MAX_SYMBOL and not text.startswith(("0x", "41")):
        found = registry_symbol(chain_id, text)
        if found is None:
            raise InvalidInput(field, f"no token {text!r} in the registry for chain {chain_id}")
        return found.address, found
    address = normalize_token_address(chain_id, text, field)
    return address, registry_token(chain_id, address)


def token_info_wire(settings: Settings, token_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """``{tokenId: {symbol, decimals}}`` of the canonical token ids :func:`describe` knows
    (an invoice's ``tokenInfo``); unknown ones are left out, never guessed."""
    out: dict[str, dict[str, Any]] = {}
    for token_id in token_ids:
        chain_text, _, address = token_id.partition(":")
        meta = describe(settings, int(chain_text), address)
        if meta is not None:
            out[token_id] = {"symbol": meta.symbol, "decimals": meta.decimals}
    return out
