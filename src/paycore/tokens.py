"""Addresses and token ids, normalised at the edge so the rest of the core compares strings.

EVM addresses come back EIP-55 checksummed; Tron addresses come back base58 (``T...``).
A token id is ``{chainId}:{tokenAddress}``; the native coin of every chain is the zero address
in its 0x form, as docs/interface.md §Conventions defines it, also on Tron.
"""

from __future__ import annotations

import re
from enum import StrEnum

import attrs
import base58

from .errors import InvalidInput
from .hashing import keccak256, sha256

NATIVE = "0x0000000000000000000000000000000000000000"

_HEX40 = re.compile(r"^(0x|0X)?[0-9a-fA-F]{40}$")


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


def to_checksum(address: str, field: str = "address") -> str:
    """Any-case 40-hex address to EIP-55; a mixed-case input must already be a valid checksum."""
    if not isinstance(address, str) or not _HEX40.match(address):
        raise InvalidInput(field, "not a 20-byte hex address")
    body = address[-40:]
    lower = body.lower()
    digest = keccak256(lower.encode("ascii")).hex()
    checksummed = "".join(
        ch.upper() if ch.isalpha() and int(digest[i], 16) >= 8 else ch for i, ch in enumerate(lower)
    )
    is_mixed = body != lower and body != body.upper()
    if is_mixed and body != checksummed:
        raise InvalidInput(field, "EIP-55 checksum mismatch")
    return "0x" + checksummed


def tron_to_hex(address: str, field: str = "address") -> str:
    """``T...`` base58check to the 21-byte ``41...`` hex form."""
    try:
        raw = base58.b58decode_check(address)
    except ValueError:
        raise InvalidInput(field, "not a valid Tron base58 address") from None
    if len(raw) != 21 or raw[0] != 0x41:
        raise InvalidInput(field, "not a valid Tron base58 address")
    return raw.hex()


def tron_from_hex(address: str, field: str = "address") -> str:
    """``41...`` hex (or a bare 20-byte 0x hex) to base58check ``T...``."""
    text = address.lower()
    if text.startswith("0x"):
        text = text[2:]
    if len(text) == 40:
        text = "41" + text
    if len(text) != 42 or not text.startswith("41") or not re.fullmatch(r"[0-9a-f]{42}", text):
        raise InvalidInput(field, "not a valid Tron hex address")
    raw = bytes.fromhex(text)
    return base58.b58encode(raw + sha256(sha256(raw))[:4]).decode("ascii")


def normalize_tron(address: str, field: str = "address") -> str:
    if not isinstance(address, str) or not address:
        raise InvalidInput(field, "not a Tron address")
    if address.startswith("T"):
        tron_to_hex(address, field)  # validates
        return address
    return tron_from_hex(address, field)


def normalize_address(chain_id: int, address: object, field: str = "address") -> str:
    """The canonical form of an account or contract address on ``chain_id``."""
    if not isinstance(address, str):
        raise InvalidInput(field, "must be a string")
    if chain_kind(chain_id) is ChainKind.TRON:
        return normalize_tron(address, field)
    return to_checksum(address, field)


def normalize_owner(address: object, field: str = "ownerAddress") -> str:
    """A merchant is a wallet: an EVM address, or a Tron one (base58 ``T...`` or hex
    ``41...``, returned as base58)."""
    if isinstance(address, str) and (
        address.startswith("T") or (len(address) == 42 and address[:2] == "41")
    ):
        return normalize_tron(address, field)
    if not isinstance(address, str):
        raise InvalidInput(field, "must be a string")
    return to_checksum(address, field)


def normalize_token_address(chain_id: int, address: object, field: str = "token") -> str:
    """Like :func:`normalize_address`, but the native coin stays the 0x zero address everywhere."""
    if isinstance(address, str) and address.lower() in (NATIVE, NATIVE[2:]):
        return NATIVE
    if chain_kind(chain_id) is ChainKind.TRON and isinstance(address, str):
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
        chain_text, address = raw.split(":")
        if not chain_text.isdigit() or len(chain_text) > 18:
            raise InvalidInput(field, f"bad chain id in {raw[:60]!r}")
        chain_id = int(chain_text)
        return cls(chain_id, normalize_token_address(chain_id, address, field))

    @property
    def is_native(self) -> bool:
        return self.address == NATIVE

    def __str__(self) -> str:
        return f"{self.chain_id}:{self.address}"
