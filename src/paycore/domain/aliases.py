"""Token ids as clients write them, turned into the one form paycore stores.

The canonical token id is ``{chainId}:{address}`` (docs/interface.md §Conventions). Clients
also send, and paycore accepts:

- ``tron:<address>`` and ``tron:<symbol>``: the Tron chain without its number, as the
  public DepiPay client writes Tron tokens (``tron:TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t``,
  ``tron:TRX``). It names the invoice's own chain when that is a Tron network, otherwise
  the one Tron chain configured with a node;
- ``{chainId}:<symbol>``: the native coin by its symbol (``1:ETH``, ``56:BNB``,
  ``728126428:TRX``), a configured token by the symbol its entry carries, or a registry
  token (``8453:USDC``; ``paycore.domain.registry``);
- addresses in any case (``0xa0b8...``), as every address.

Reading happens in two steps because the wire layer has no settings: :func:`token_text`
checks the spelling and normalises what needs no configuration (it is the ``Token`` field
parser of the typed request layer), and :func:`resolve_token` turns an alias into the
canonical id with the settings. Only canonical ids are stored, signed or compared.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..errors import InvalidInput
from .registry import MAX_SYMBOL, by_symbol
from .tokens import ChainKind, TokenId, address_text, chain_kind, normalize_token_address

if TYPE_CHECKING:
    from ..config import Settings

#: What ``tron:`` stands for in a token id.
TRON_PREFIX = "tron"
#: A symbol in an alias: ASCII letters first, then letters, digits, ``.``, ``_`` or ``-``.
_SYMBOL = re.compile(rf"[A-Za-z][A-Za-z0-9._-]{{0,{MAX_SYMBOL - 1}}}")
#: Any Tron chain id: Tron addresses are spelled the same on all of them.
_SOME_TRON_CHAIN = 728126428


def is_symbol(text: str) -> bool:
    """Whether the part after the colon is a symbol rather than an address: short, never
    ``0x``, never a 34-digit base58 or 42-digit ``41`` hex address."""
    return not text.startswith("0x") and _SYMBOL.fullmatch(text) is not None


def token_text(raw: object, field: str) -> str:
    """A token id's text as the wire carries it: canonical ``{chainId}:{address}`` where
    the spelling alone decides it, else the alias (``tron:...``, ``{chainId}:{symbol}``)
    with its address normalised, for :func:`resolve_token`."""
    if not isinstance(raw, str) or raw.count(":") != 1:
        raise InvalidInput(field, "must look like {chainId}:{tokenAddress}")
    head, tail = address_text(raw, field).split(":")
    if head.lower() == TRON_PREFIX:
        if is_symbol(tail):
            return f"{TRON_PREFIX}:{tail}"
        return f"{TRON_PREFIX}:{normalize_token_address(_SOME_TRON_CHAIN, tail, field)}"
    if is_symbol(tail):
        return f"{_chain_id(head, raw, field)}:{tail}"
    return str(TokenId.parse(raw, field))


def _chain_id(text: str, raw: str, field: str) -> int:
    if not text.isascii() or not text.isdigit() or len(text) > 18:
        raise InvalidInput(field, f"bad chain id in {raw[:60]!r}")
    return int(text)


def resolve_token(
    settings: Settings, raw: object, field: str, *, chain_id: int | None = None
) -> TokenId:
    """The canonical token id ``raw`` names. ``chain_id`` is the chain the request is about
    (an invoice's ``chainId``): ``tron:`` means that chain when it is a Tron network."""
    head, tail = token_text(raw, field).split(":")
    chain = _tron_chain(settings, chain_id, field) if head == TRON_PREFIX else int(head)
    if not is_symbol(tail):
        return TokenId(chain, normalize_token_address(chain, tail, field))
    meta = by_symbol(settings, chain, tail)
    if meta is None:
        raise InvalidInput(field, f"no token {tail!r} known on chain {chain}")
    return TokenId(chain, meta.address)


def _tron_chain(settings: Settings, chain_id: int | None, field: str) -> int:
    """The chain ``tron:`` names: ``chain_id`` when it is a Tron network, else the only
    configured Tron chain with a node."""
    if chain_id is not None and chain_kind(chain_id) is ChainKind.TRON:
        return chain_id
    noded = [c.chain_id for c in settings.chains.values() if c.kind is ChainKind.TRON and c.rpc_url]
    if len(noded) != 1:
        found = "none is" if not noded else "several are"
        raise InvalidInput(
            field,
            f"tron: names the Tron chain configured with a node, and {found}: "
            "write the chain id instead",
        )
    return noded[0]
