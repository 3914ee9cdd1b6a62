"""Addresses and token ids, normalised at the edge so the rest of the core compares strings.

EVM addresses come back EIP-55 checksummed; Tron addresses come back base58 (``T...``).
A token id is ``{chainId}:{tokenAddress}``; the native coin of every chain is the zero address
in its 0x form, as docs/interface.md §Conventions defines it, also on Tron.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from enum import StrEnum

import attrs
import base58

from ..crypto.hashing import keccak256, sha256
from ..errors import InvalidInput

NATIVE = "0x0000000000000000000000000000000000000000"

#: The only spellings taken (``fullmatch``: ``$`` would let a trailing newline through).
_EVM_HEX = re.compile(r"0x[0-9a-fA-F]{40}")
_TRON_HEX = re.compile(r"(41|0x)[0-9a-fA-F]{40}")
#: A Tron account is 21 bytes (0x41 first) plus a 4-byte check: always 34 base58 digits.
_TRON_BASE58 = re.compile(r"T[1-9A-HJ-NP-Za-km-z]{33}")

#: Unicode categories an address can never contain and a copy-paste often adds: controls,
#: format characters (zero-width space, BOM), and space/line/paragraph separators.
_INVISIBLE = frozenset({"Cc", "Cf", "Zs", "Zl", "Zp"})


class ChainKind(StrEnum):
    EVM = "evm"
    TRON = "tron"


#: Tron networks by the chain ids their nodes report (docs/interface.md §Conventions).
TRON_CHAIN_IDS: dict[int, str] = {
    728126428: "tron-mainnet",
    2494104990: "tron-shasta",
    3448148188: "tron-nile",
}


def chain_kind(chain_id: int) -> ChainKind:
    return ChainKind.TRON if chain_id in TRON_CHAIN_IDS else ChainKind.EVM


#: Printable ASCII without the space: nothing the loop in ``address_text`` could refuse
#: (it refuses whitespace, invisible characters and non-ASCII), so a token's ``1:0x..``
#: passes in one scan too.
_PLAIN = re.compile(r"[!-~]+")


def _stray(ch: str) -> bool:
    return ch.isspace() or unicodedata.category(ch) in _INVISIBLE


def address_text(address: object, field: str) -> str:
    """``address`` if it is a string that could be an address as written, else a 400 that
    says what is wrong with it.

    Addresses are taken exactly as written: whitespace around or inside one (a pasted
    newline, a no-break space, a zero-width space) is refused, never stripped, so what is
    stored, signed and compared is what the client sent. The reason names the character,
    which is invisible in the address itself.
    """
    if not isinstance(address, str):
        raise InvalidInput(field, "must be a string")
    if not address:
        raise InvalidInput(field, "must not be empty")
    if _PLAIN.fullmatch(address) is not None:
        return address  # the usual case, in one regex scan instead of a loop per character
    for i, ch in enumerate(address):
        if _stray(ch):
            if all(_stray(c) for c in address[:i]):
                where = "leading"
            elif all(_stray(c) for c in address[i:]):
                where = "trailing"
            else:
                where = "embedded"
            kind = "whitespace" if ch.isspace() else "invisible character"
            raise InvalidInput(field, f"has {where} {kind} U+{ord(ch):04X}")
        if not ch.isascii():
            raise InvalidInput(field, f"contains the non-ASCII character U+{ord(ch):04X}")
    return address


def to_checksum(address: object, field: str = "address") -> str:
    """``0x`` and 40 hex digits, in any case, to EIP-55; a mixed-case input must already be
    a valid checksum. No other spelling (no ``0X``, no bare digits) is taken."""
    if not _EVM_HEX.fullmatch(address_text(address, field)):
        raise InvalidInput(field, "not a 20-byte hex address")
    assert isinstance(address, str)
    body = address[2:]
    lower = body.lower()
    checksummed = _eip55(lower)
    is_mixed = body != lower and body != body.upper()
    if is_mixed and body != checksummed:
        raise InvalidInput(field, "EIP-55 checksum mismatch")
    return "0x" + checksummed


@functools.lru_cache(maxsize=4096)
def _eip55(lower: str) -> str:
    """EIP-55's capitals for 40 lower-case hex digits. Kept per address: a shop's deposit
    and owner addresses come back on request after request, and the per-digit walk over a
    keccak digest was a tenth of a signed ``POST /invoice``'s CPU."""
    digest = keccak256(lower.encode("ascii")).hex()
    # upper() leaves a digit as it is: only the letters a-f change.
    pairs = zip(lower, digest[:40], strict=True)
    return "".join(ch.upper() if d in "89abcdef" else ch for ch, d in pairs)


def tron_to_hex(address: str, field: str = "address") -> str:
    """``T...`` base58check to the 21-byte ``41...`` hex form. The text must be exactly the
    34 base58 digits: the decoder on its own would strip trailing whitespace."""
    if not _TRON_BASE58.fullmatch(address_text(address, field)):
        raise InvalidInput(field, "not a valid Tron base58 address")
    try:
        raw = base58.b58decode_check(address)
    except ValueError:
        raise InvalidInput(field, "not a valid Tron base58 address") from None
    if len(raw) != 21 or raw[0] != 0x41:
        raise InvalidInput(field, "not a valid Tron base58 address")
    return raw.hex()


def tron_from_hex(address: str, field: str = "address") -> str:
    """``41...`` hex (21 bytes), or ``0x`` hex (the 20 bytes as EVM tools print them), to
    base58check ``T...``."""
    if not _TRON_HEX.fullmatch(address_text(address, field)):
        raise InvalidInput(field, "not a valid Tron hex address (41... or 0x...)")
    raw = bytes.fromhex("41" + address[2:])
    return base58.b58encode(raw + sha256(sha256(raw))[:4]).decode("ascii")


def normalize_tron(address: object, field: str = "address") -> str:
    """A Tron address as base58: given as base58 (``T...``), ``41...`` hex or ``0x`` hex."""
    address = address_text(address, field)
    if address.startswith("T"):
        tron_to_hex(address, field)  # validates
        return address
    return tron_from_hex(address, field)


def normalize_address(chain_id: int, address: object, field: str = "address") -> str:
    """The canonical form of an account or contract address on ``chain_id``."""
    if chain_kind(chain_id) is ChainKind.TRON:
        return normalize_tron(address, field)
    return to_checksum(address, field)


def normalize_owner(address: object, field: str = "ownerAddress") -> str:
    """A merchant is a wallet: an EVM address, or a Tron one (base58 ``T...`` or hex
    ``41...``, returned as base58)."""
    address = address_text(address, field)
    if address.startswith("T") or (len(address) == 42 and address[:2] == "41"):
        return normalize_tron(address, field)
    return to_checksum(address, field)


def normalize_token_address(chain_id: int, address: object, field: str = "token") -> str:
    """Like :func:`normalize_address`, but the native coin stays the 0x zero address
    everywhere (on Tron, the zero account in any of its spellings is the coin too)."""
    if address == NATIVE:
        return NATIVE
    if chain_kind(chain_id) is ChainKind.TRON:
        normalized = normalize_tron(address, field)
        if tron_to_hex(normalized) == "41" + "00" * 20:
            return NATIVE
        return normalized
    return normalize_address(chain_id, address, field)


def evm_hex20(chain_id: int, address: str) -> str:
    """Lowercase 0x-prefixed 20-byte hex of any supported address, for signed strings and ABI."""
    if chain_kind(chain_id) is ChainKind.TRON and address != NATIVE:
        return "0x" + tron_to_hex(address)[2:]
    return address.lower()


@attrs.frozen(order=True)
class TokenId:
    """``{chainId}:{tokenAddress}``: which chain, which contract (or the native coin)."""

    chain_id: int
    address: str

    @classmethod
    def parse(cls, raw: object, field: str = "token") -> TokenId:
        if not isinstance(raw, str) or raw.count(":") != 1:
            raise InvalidInput(field, "must look like {chainId}:{tokenAddress}")
        chain_text, address = address_text(raw, field).split(":")
        if not chain_text.isascii() or not chain_text.isdigit() or len(chain_text) > 18:
            raise InvalidInput(field, f"bad chain id in {raw[:60]!r}")
        chain_id = int(chain_text)
        return cls(chain_id, normalize_token_address(chain_id, address, field))

    @property
    def is_native(self) -> bool:
        return self.address == NATIVE

    def __str__(self) -> str:
        return f"{self.chain_id}:{self.address}"
