"""Wallet and deposit addresses of paycore's contracts on Tron, computed offline.

The TVM runs the same contracts as the EVM (docs/architecture.md §Chains), with one difference that
matters here: its CREATE2 hashes ``0x41 ++ deployer ++ salt ++ keccak256(init code)`` where
the EVM puts ``0xff``. The 20 bytes it yields are a Tron account written in base58 with the
0x41 version byte. Everything else -- salts, init codes -- is the EVM backend's, so the
formulas live once, in ``paycore.chains.evm.create2``, and only the prefix is Tron's here.

Addresses in and out are base58 (``T...``); an owner may also be given as a 0x EVM address,
which names the same key.
"""

from __future__ import annotations

from functools import lru_cache

from paycore.chains.evm import create2
from paycore.crypto.hashing import keccak256
from paycore.domain.tokens import normalize_tron, to_checksum, tron_from_hex, tron_to_hex

#: The byte TVM's CREATE2 puts before the deployer's address (the EVM's is 0xff).
TVM_CREATE2_PREFIX = 0x41


def to_evm(address: str, field: str = "address") -> str:
    """The 0x (EIP-55) spelling of a Tron address's 20 bytes, for ABI encoding and CREATE2.
    Accepts base58, 41-prefixed hex or a 0x address."""
    if address.startswith("0x") or address.startswith("0X"):
        return to_checksum(address, field)
    return to_checksum("0x" + tron_to_hex(normalize_tron(address, field))[2:], field)


def to_tron(address: str, field: str = "address") -> str:
    """The base58 spelling of an address given as base58, 41... hex or 0x hex."""
    if address.startswith("T"):
        return normalize_tron(address, field)
    return tron_from_hex(address, field)


def hex20(address: str) -> str:
    """40 lowercase hex digits (no prefix): how logs and ABI words carry an address."""
    return to_evm(address)[2:].lower()


def tvm_create2_address(deployer: str, salt: bytes, init_code_hash: bytes) -> str:
    """Where a TVM CREATE2 from ``deployer`` lands, base58."""
    return to_tron(
        create2.create2_address(to_evm(deployer), salt, init_code_hash, TVM_CREATE2_PREFIX)
    )


@lru_cache(maxsize=4096)
def wallet_address(factory: str, owner: str) -> str:
    """Where ``factory`` deploys ``owner``'s ``PaycoreWallet`` on Tron."""
    owner_evm = to_evm(owner, "ownerAddress")
    init_code_hash = keccak256(create2.wallet_init_code(owner_evm))
    return tvm_create2_address(factory, create2.address_salt(owner_evm), init_code_hash)


@lru_cache(maxsize=1 << 16)
def deposit_address(wallet: str, index: int) -> str:
    """Deposit address number ``index`` of the wallet at ``wallet`` (a forwarder)."""
    return tvm_create2_address(
        wallet, create2.index_salt(index), create2.forwarder_init_code_hash()
    )


def owner_deposit_address(factory: str, owner: str, index: int) -> str:
    return deposit_address(wallet_address(factory, owner), index)
