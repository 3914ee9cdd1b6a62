"""The one parser for each kind of value a request carries, and the types that name them.

Every integer, amount, address and token that enters paycore from outside -- a JSON body, a
query string, a salt-signed management body, an operator's setting -- is read by a function
here (or, for amounts, addresses and tokens, by the module this one points at), so the
whole project agrees on what ``"²"``, ``"٣"``, ``1.0`` or ``" 0xabc"`` mean: nothing, each is
refused with the same one-line reason wherever it appears.

The ``NewType`` names below are what request classes declare their fields as. They cost
nothing at run time; the typed request layer (``paycore.api.wire``) gives each one its parser
and its JSON Schema, so the parser and the published schema cannot disagree.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import NewType

from ..errors import InvalidInput
from .aliases import token_text
from .money import parse_amount
from .tokens import address_text

__all__ = [
    "Address",
    "Amount",
    "BigUint",
    "RawTx",
    "Salt",
    "ChainId",
    "Token",
    "Uint",
    "parse_address_text",
    "parse_amount",
    "parse_uint",
    "parse_wire_amount",
]

#: A non-negative integer below 10**18: ids, offsets, limits, indexes, seconds.
Uint = NewType("Uint", int)
#: A non-negative integer of up to 78 digits: uint256 values and indexes in base units.
BigUint = NewType("BigUint", int)
#: A chain id (a :data:`Uint`); that the chain is configured is checked by ``Settings.chain``.
ChainId = NewType("ChainId", int)
#: A decimal amount (``parse_amount``): a string such as ``"12.50"``, or an integer.
Amount = NewType("Amount", Decimal)
#: An address as sent: a string without surrounding whitespace. Which chain's rules apply is
#: only known next to its chain id, so normalising it is the consumer's step.
Address = NewType("Address", str)
#: ``{chainId}:{tokenAddress}``, parsed into its canonical text, or an alias (``tron:TRX``,
#: ``8453:USDC``) that ``paycore.domain.aliases.resolve_token`` resolves with the settings.
Token = NewType("Token", str)

#: A salt-signed body's ``salt``: unix seconds as a JSON number or ASCII digits; a JavaScript
#: client may send ``Date.now() / 1000`` unrounded (``paycore.auth.salted`` reads it).
Salt = NewType("Salt", object)

#: A signed transaction: 0x hex (EVM), or the JSON object a Tron node builds.
RawTx = NewType("RawTx", object)

UINT_DIGITS = 18
BIG_UINT_DIGITS = 78


def parse_uint(raw: object, field: str, *, digits: int = UINT_DIGITS) -> int:
    """A non-negative integer: a JSON integer, or a string of ASCII digits (a query string
    has nothing else). Refused: booleans, floats (``1.0`` is not an id), signs, spaces, and
    every non-ASCII digit -- ``str.isdigit`` takes ``"²"`` (which ``int`` then rejects) and
    ``"٣"`` (which ``int`` reads as 3), neither of which a client means as a number."""
    if isinstance(raw, int) and not isinstance(raw, bool):
        if raw < 0:
            raise InvalidInput(field, "must be a non-negative integer")
        if raw >= 10**digits:
            raise InvalidInput(field, f"must have at most {digits} digits")
        return raw
    if isinstance(raw, str) and raw.isascii() and raw.isdigit():
        if len(raw) > digits:
            raise InvalidInput(field, f"must have at most {digits} digits")
        if len(raw) > 1 and raw[0] == "0":
            # One spelling per number: "007" and "7" signed or logged are different texts.
            raise InvalidInput(field, "must not have leading zeros")
        return int(raw)
    raise InvalidInput(field, "must be a non-negative integer")


#: The one spelling of an amount on the wire: digits, optionally a point and more digits.
#: ``parse_amount`` (also used for operators' settings) reads more -- surrounding spaces,
#: exponents, signs -- which a request has no reason to send and a published schema
#: would have to describe.
AMOUNT_TEXT = re.compile(r"[0-9]{1,30}(\.[0-9]{1,18})?")


def parse_wire_amount(raw: object, field: str) -> Decimal:
    """An amount from a request: an integer, or a string in :data:`AMOUNT_TEXT`, then the
    rules of :func:`parse_amount` (finite, below ``MAX_AMOUNT``, at most 18 decimals)."""
    if isinstance(raw, str) and not AMOUNT_TEXT.fullmatch(raw):
        raise InvalidInput(field, 'must be a decimal string such as "12.50"')
    return parse_amount(raw, field)


def parse_address_text(raw: object, field: str) -> str:
    """An address as the client sent it, refused unless it is a non-empty string without
    surrounding whitespace or stray characters (``tokens.address_text`` says which)."""
    return address_text(raw, field)


def parse_token(raw: object, field: str) -> str:
    """A token id's canonical text (``{chainId}:{address}``, the address normalised), or an
    alias with its spelling checked (``tron:...``, ``{chainId}:USDC``), which the consumer
    resolves with the settings (``paycore.domain.aliases``)."""
    return token_text(raw, field)
