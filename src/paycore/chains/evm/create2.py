"""Wallet and deposit addresses of paycore's EVM contracts, computed offline.

``/getAddress`` and POST /invoice must answer without an RPC round trip, and before the
merchant has deployed anything: both addresses are CREATE2 results (docs/architecture.md §Chains).

- The owner's wallet: ``CREATE2(factory, bytes32(owner), keccak256(wallet init code ++
  abi.encode(owner)))`` (``PaycoreFactory.walletAddress``).
- Deposit address ``index``: ``CREATE2(wallet, bytes32(index), keccak256(forwarder init
  code))`` (``PaycoreWallet.depositAddress``).

The init codes come from the committed artifacts, the same bytes the factory deploys, and
``tests/chains/evm`` checks these functions against the on-chain views.
"""

from __future__ import annotations

from functools import cache

from paycore.contracts import bytecode
from paycore.crypto.hashing import keccak256
from paycore.domain.tokens import to_checksum

#: The byte CREATE2 puts before the deployer's address on EVM chains. Tron's TVM uses 0x41.
EVM_CREATE2_PREFIX = 0xFF

_UINT256_LIMIT = 1 << 256


def create2_address(
    deployer: str, salt: bytes, init_code_hash: bytes, prefix: int = EVM_CREATE2_PREFIX
) -> str:
    """The address a CREATE2 from ``deployer`` with ``salt`` and that init code hash gets.

    ``address = keccak256(prefix ++ deployer ++ salt ++ init_code_hash)[12:]``, EIP-55
    checksummed. ``prefix`` is a parameter so the Tron backend can reuse this with 0x41.
    """
    if len(salt) != 32 or len(init_code_hash) != 32:
        raise ValueError("salt and init code hash must be 32 bytes each")
    if not 0 <= prefix <= 0xFF:
        raise ValueError("prefix must be one byte")
    deployer_bytes = _address_bytes(deployer)
    digest = keccak256(bytes([prefix]) + deployer_bytes + salt + init_code_hash)
    return to_checksum("0x" + digest[12:].hex())


def address_salt(owner: str) -> bytes:
    """The factory's salt for ``owner``: ``bytes32(uint256(uint160(owner)))``."""
    return _address_bytes(owner).rjust(32, b"\0")


def index_salt(index: int) -> bytes:
    """The wallet's salt for deposit index ``index``: ``bytes32(index)``, a uint256."""
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < _UINT256_LIMIT:
        raise ValueError("index must be an integer in [0, 2**256)")
    return index.to_bytes(32, "big")


def wallet_init_code(owner: str) -> bytes:
    """The wallet's creation code followed by its ABI-encoded constructor argument (owner)."""
    return bytecode("PaycoreWallet") + address_salt(owner)


def wallet_address(factory: str, owner: str) -> str:
    """Where ``factory`` deploys (or deployed) ``owner``'s ``PaycoreWallet``."""
    return create2_address(factory, address_salt(owner), keccak256(wallet_init_code(owner)))


@cache
def forwarder_init_code_hash() -> bytes:
    """keccak256 of the forwarder's init code; the same for every wallet and index."""
    return keccak256(bytecode("PaycoreForwarder"))


def deposit_address(wallet: str, index: int) -> str:
    """Deposit address number ``index`` of the wallet at ``wallet``."""
    return create2_address(wallet, index_salt(index), forwarder_init_code_hash())


def owner_deposit_address(factory: str, owner: str, index: int) -> str:
    """Deposit address ``index`` of ``owner``'s wallet under ``factory``, in one step."""
    return deposit_address(wallet_address(factory, owner), index)


def _address_bytes(address: str) -> bytes:
    """20 raw bytes of a 0x address; validates (and EIP-55-checks mixed case) on the way."""
    return bytes.fromhex(to_checksum(address)[2:])
