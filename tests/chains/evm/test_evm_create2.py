"""create2.py offline: EIP-1014's own vectors, input checks, and a tripwire on the bytecode.

The on-chain comparison (factory.walletAddress, wallet.depositAddress) is in
test_evm_contracts.py; these run without any chain.
"""

from __future__ import annotations

import pytest

from paycore.chains.evm import create2
from paycore.contracts import CONTRACT_NAMES, load_artifact
from paycore.crypto.hashing import keccak256
from paycore.errors import InvalidInput

ZERO32 = b"\0" * 32

# (deployer, salt, init code, address) from EIP-1014's "Examples" section.
EIP1014_VECTORS = [
    ("0x0000000000000000000000000000000000000000", ZERO32, "00",
     "0x4D1A2e2bB4F88F0250f26Ffff098B0b30B26BF38"),
    ("0xdeadbeef00000000000000000000000000000000", ZERO32, "00",
     "0xB928f69Bb1D91Cd65274e3c79d8986362984fDA3"),
    ("0xdeadbeef00000000000000000000000000000000",
     bytes.fromhex("000000000000000000000000feed000000000000000000000000000000000000"), "00",
     "0xD04116cDd17beBE565EB2422F2497E06cC1C9833"),
    ("0x0000000000000000000000000000000000000000", ZERO32, "deadbeef",
     "0x70f2b2914A2a4b783FaEFb75f459A580616Fcb5e"),
    ("0x00000000000000000000000000000000deadbeef", (0xCAFEBABE).to_bytes(32, "big"), "deadbeef",
     "0x60f3f640a8508fC6a86d45DF051962668E1e8AC7"),
    ("0x00000000000000000000000000000000deadbeef", (0xCAFEBABE).to_bytes(32, "big"),
     "deadbeef" * 11, "0x1d8bfDC5D46DC4f61D6b6115972536eBE6A8854C"),
    ("0x0000000000000000000000000000000000000000", ZERO32, "",
     "0xE33C0C7F7df4809055C3ebA6c09CFe4BaF1BD9e0"),
]  # fmt: skip

FACTORY = "0x5FbDB2315678afecb367f032d93F642f64180aa3"
OWNER = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"


@pytest.mark.parametrize(("deployer", "salt", "init_code", "expected"), EIP1014_VECTORS)
def test_create2_address_matches_eip1014(
    deployer: str, salt: bytes, init_code: str, expected: str
) -> None:
    assert create2.create2_address(deployer, salt, keccak256(bytes.fromhex(init_code))) == expected


def test_forwarder_init_code_hash_is_frozen() -> None:
    """Tripwire: this hash moves every deposit address paycore ever handed out.

    If a change to PaycoreForwarder.sol, the compiler or its settings makes this fail, the
    change re-addresses all unswept deposits: only update the value on purpose.
    """
    assert create2.forwarder_init_code_hash().hex() == (
        "ed16730b7b803b136e1a10a11f3586b22825edbd2107253964b65a34743efb34"
    )


def test_wallet_and_deposit_addresses_compose() -> None:
    wallet = create2.wallet_address(FACTORY, OWNER)
    assert create2.deposit_address(wallet, 7) == create2.owner_deposit_address(FACTORY, OWNER, 7)
    # The owner's address case does not matter; the result is always EIP-55.
    assert create2.wallet_address(FACTORY.lower(), OWNER.lower()) == wallet
    # Spelled out: salt = bytes32(owner), init code = wallet creation code ++ abi.encode(owner).
    owner_word = bytes(12) + bytes.fromhex(OWNER[2:])
    init_code = bytes.fromhex(load_artifact("PaycoreWallet")["bytecode"][2:]) + owner_word
    assert wallet == create2.create2_address(FACTORY, owner_word, keccak256(init_code))


def test_addresses_differ_per_owner_and_index() -> None:
    wallets = {create2.wallet_address(FACTORY, f"0x{i:040x}") for i in range(1, 6)}
    assert len(wallets) == 5
    wallet = create2.wallet_address(FACTORY, OWNER)
    deposits = {create2.deposit_address(wallet, i) for i in range(50)}
    assert len(deposits) == 50 and wallet not in deposits


@pytest.mark.parametrize("index", [-1, 2**256, True, 1.0, "1"])
def test_index_must_be_a_uint256(index: object) -> None:
    with pytest.raises(ValueError):
        create2.deposit_address(create2.wallet_address(FACTORY, OWNER), index)  # type: ignore[arg-type]


def test_largest_index_is_accepted() -> None:
    assert create2.index_salt(2**256 - 1) == b"\xff" * 32


@pytest.mark.parametrize("owner", ["0x1234", "not an address", OWNER.replace("f39F", "F39F")])
def test_bad_owner_is_invalid_input(owner: str) -> None:
    with pytest.raises(InvalidInput):
        create2.wallet_address(FACTORY, owner)


def test_create2_checks_its_inputs() -> None:
    with pytest.raises(ValueError):
        create2.create2_address(FACTORY, b"\0" * 31, ZERO32)
    with pytest.raises(ValueError):
        create2.create2_address(FACTORY, ZERO32, ZERO32, prefix=256)


def test_tron_prefix_changes_the_address() -> None:
    """Tron's TVM hashes 0x41 where the EVM hashes 0xff; the prefix is a parameter for it."""
    evm = create2.create2_address(FACTORY, ZERO32, ZERO32)
    assert create2.create2_address(FACTORY, ZERO32, ZERO32, prefix=0x41) != evm


def test_artifacts_are_complete_and_compiled_with_fixed_settings() -> None:
    for name in CONTRACT_NAMES:
        artifact = load_artifact(name)
        assert artifact["contractName"] == name
        assert len(artifact["bytecode"]) > 100 and artifact["abi"]
        assert artifact["compiler"]["version"].startswith("0.8.37+")
        settings = artifact["compiler"]["settings"]
        assert settings["optimizer"] == {"enabled": True, "runs": 200}
        assert settings["evmVersion"] == "paris"
    with pytest.raises(KeyError):
        load_artifact("Nope")
