"""The Tron backend's pure parts: addresses, TVM CREATE2, protobuf reading, the check of a
node-built transaction, config, and the full-node transport's headers.

Known pairs and transactions come from TRON's public records (mainnet USDT's contract, the
transactions printed in TRON's HTTP API documentation); CREATE2 is checked against the
test's own computation from the same artifacts.
"""

from __future__ import annotations

import hashlib

import pytest
from fake_trongrid import encode_raw, keccak256, tvm_create2
from tronpy import keys as tronpy_keys

from paycore.chains.evm import create2 as evm_create2
from paycore.chains.tron import address, rawtx, txbuild
from paycore.chains.tron.node import API_KEY_HEADER, Node, NodeError
from paycore.config import ChainConfig
from paycore.contracts import bytecode
from paycore.domain.tokens import NATIVE, normalize_token_address, tron_from_hex, tron_to_hex
from paycore.errors import InvalidInput

NILE = 3448148188

#: base58 <-> 41-hex pairs: mainnet USDT (TRC20), the zero account, and the accounts of the
#: transactions below.
PAIRS = [
    ("TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", "41a614f803b6fd780986a42c78ec9c7f77e6ded13c"),
    ("T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwb", "410000000000000000000000000000000000000000"),
    ("TRGhNNfnmgLegT4zHNjEqDSADjgmnHvubJ", "41a7d8a35b260395c14aa456297662092ba3b76fc0"),
    ("TJCnKsPa7y5okkXvQAidZBzqx3QyQ6sxMW", "415a523b449890854c8fc460ab602df9f31fe4293f"),
    ("TPswDDCAWhJAZGdHPidFg5nEf8TkNToDX1", "4198927ffb9f554dc4a453c64b2e553a02d6df514b"),
    ("TUznHJfHe6gdYY7gvWmf6bNZHuPHDZtowf", "41d0b69631440f0a494bb51f7eee68ff5c593c00f0"),
]

#: Published transactions: (raw_data JSON, raw_data_hex, txID). A TRX transfer and a TRC20
#: ``transfer`` with a fee limit, as printed with the HTTP API's examples.
TRANSFER_RAW = {
    "contract": [
        {
            "parameter": {
                "value": {
                    "amount": 100000,
                    "owner_address": "415c68cc82c87446f602f019e5fd797437f5b79cc2",
                    "to_address": "4156a6076cd1537fa317c2606e4edfa4acd3e8e92e",
                },
                "type_url": "type.googleapis.com/protocol.TransferContract",
            },
            "type": "TransferContract",
        }
    ],
    "ref_block_bytes": "02a2",
    "ref_block_hash": "e216e254e43ee108",
    "expiration": 1571898861000,
    "timestamp": 1571898802704,
}
TRANSFER_HEX = (
    "0a0202a22208e216e254e43ee10840c8cbe4e3df2d5a67080112630a2d747970652e676f6f676c656170"
    "69732e636f6d2f70726f746f636f6c2e5472616e73666572436f6e747261637412320a15415c68cc82c8"
    "7446f602f019e5fd797437f5b79cc212154156a6076cd1537fa317c2606e4edfa4acd3e8e92e18a08d06"
    "709084e1e3df2d"
)
TRANSFER_ID = "88817b9c6276e3c535e4f8f15baf546292ca6ad9d44a7d97857bd6f8909d63d4"
TRC20_DATA = (
    "a9059cbb00000000000000000000004150125bea243a640bf85348873b6c4f3c517aee7a"
    "0000000000000000000000000000000000000000000000000000000000000001"
)
TRC20_RAW = {
    "contract": [
        {
            "parameter": {
                "value": {
                    "data": TRC20_DATA,
                    "owner_address": "41495511a493d8c362be4267224e6d81013a6862ee",
                    "contract_address": "41eca9bc828a3005b9a3b909f2cc5c2a54794de05f",
                },
                "type_url": "type.googleapis.com/protocol.TriggerSmartContract",
            },
            "type": "TriggerSmartContract",
        }
    ],
    "ref_block_bytes": "8ad9",
    "ref_block_hash": "eaef69105495eb15",
    "expiration": 1773182914544,
    "fee_limit": 100000000,
    "timestamp": 1773182854544,
}
TRC20_HEX = (
    "0a028ad92208eaef69105495eb1540f09fc0cfcd335aae01081f12a9010a31747970652e676f6f676c65"
    "617069732e636f6d2f70726f746f636f6c2e54726967676572536d617274436f6e747261637412740a15"
    "41495511a493d8c362be4267224e6d81013a6862ee121541eca9bc828a3005b9a3b909f2cc5c2a54794d"
    "e05f2244" + TRC20_DATA + "7090cbbccfcd33900180c2d72f"
)
TRC20_ID = "c70b20da8cb8d96a99c1aceb283412acb9dea313a9e467178431a3c6ae8b9f08"


@pytest.mark.parametrize(("b58", "hex41"), PAIRS)
def test_known_base58_hex_pairs(b58: str, hex41: str) -> None:
    assert tron_to_hex(b58) == hex41
    assert tron_from_hex(hex41) == b58
    assert tronpy_keys.to_hex_address(b58) == hex41  # an independent implementation agrees
    assert address.to_tron(hex41) == b58
    assert address.to_tron("0x" + hex41[2:]) == b58
    assert address.to_evm(b58).lower() == "0x" + hex41[2:]
    assert normalize_token_address(NILE, hex41) == (NATIVE if hex41[2:] == "00" * 20 else b58)


def test_tvm_create2_against_an_independent_computation() -> None:
    factory, owner = PAIRS[0][0], PAIRS[2][0]
    owner_word = bytes.fromhex(tron_to_hex(owner)[2:].rjust(64, "0"))
    wallet_hex = tvm_create2(
        tron_to_hex(factory)[2:], owner_word, keccak256(bytecode("PaycoreWallet") + owner_word)
    )
    assert address.wallet_address(factory, owner) == tron_from_hex("41" + wallet_hex)
    forwarder = keccak256(bytecode("PaycoreForwarder"))
    for index in (0, 1, 7, 2**64):
        expected = tvm_create2(wallet_hex, index.to_bytes(32, "big"), forwarder)
        assert address.deposit_address(tron_from_hex("41" + wallet_hex), index) == tron_from_hex(
            "41" + expected
        )
        assert address.owner_deposit_address(factory, owner, index) == tron_from_hex(
            "41" + expected
        )
    # The same key as an EVM owner names the same wallet; the EVM's 0xff prefix does not.
    assert address.wallet_address(factory, address.to_evm(owner)) == address.wallet_address(
        factory, owner
    )
    evm_wallet = evm_create2.wallet_address(address.to_evm(factory), address.to_evm(owner))
    assert evm_wallet.lower() != "0x" + wallet_hex


def test_a_fixed_tvm_create2_vector() -> None:
    """keccak256(0x41 ++ deployer ++ salt ++ hash)[12:] for all-zero inputs, by hand."""
    digest = keccak256(b"\x41" + bytes(20) + bytes(32) + bytes(32))
    got = address.tvm_create2_address(PAIRS[1][0], bytes(32), bytes(32))
    assert got == tron_from_hex("41" + digest[12:].hex())


@pytest.mark.parametrize(
    ("raw_json", "raw_hex", "tx_id"),
    [(TRANSFER_RAW, TRANSFER_HEX, TRANSFER_ID), (TRC20_RAW, TRC20_HEX, TRC20_ID)],
)
def test_published_transactions_decode(raw_json: dict, raw_hex: str, tx_id: str) -> None:
    assert hashlib.sha256(bytes.fromhex(raw_hex)).hexdigest() == tx_id
    # The stand-in's encoder reproduces the published bytes, so its answers are real ones.
    assert encode_raw(raw_json).hex() == raw_hex
    found_id, call = rawtx.read_transaction({"txID": tx_id, "raw_data_hex": raw_hex}, "tx")
    assert found_id == tx_id
    value = raw_json["contract"][0]["parameter"]["value"]
    if "data" in value:
        assert (call.contract_type, call.data.hex(), call.fee_limit) == (31, TRC20_DATA, 10**8)
        assert call.to == value["contract_address"]
    else:
        assert (call.contract_type, call.call_value) == (1, 100000)
        assert call.to == value["to_address"]
    assert call.owner == value["owner_address"]
    assert call.expiration == raw_json["expiration"]


def test_broken_transactions_are_refused() -> None:
    with pytest.raises(InvalidInput, match="sha256"):
        rawtx.read_transaction({"txID": "00" * 32, "raw_data_hex": TRC20_HEX}, "tx")
    truncated = TRC20_HEX[:-10]
    tx_id = hashlib.sha256(bytes.fromhex(truncated)).hexdigest()
    with pytest.raises(InvalidInput, match="raw_data_hex"):
        rawtx.read_transaction({"txID": tx_id, "raw_data_hex": truncated}, "tx")
    with pytest.raises(InvalidInput):
        rawtx.read_transaction("not a transaction", "tx")


def test_signed_transaction_wraps_the_checked_bytes() -> None:
    raw = bytes.fromhex(TRC20_HEX)
    signature = "ab" * 65
    wire = rawtx.signed_transaction(raw, [signature, "0x" + "cd" * 65])
    fields = rawtx.fields(wire)
    assert fields == [(1, raw), (2, bytes.fromhex(signature)), (2, bytes.fromhex("cd" * 65))]
    with pytest.raises(ValueError):
        rawtx.signed_transaction(raw, ["ab"])


def _node_answer(call: txbuild.ContractCall, **changes: object) -> dict:
    value = {
        "data": call.data.hex(),
        "owner_address": tron_to_hex(call.owner),
        "contract_address": tron_to_hex(call.contract),
    }
    if call.call_value:
        value["call_value"] = call.call_value
    raw = {
        "contract": [
            {
                "parameter": {
                    "value": value,
                    "type_url": "type.googleapis.com/protocol.TriggerSmartContract",
                },
                "type": "TriggerSmartContract",
            }
        ],
        "ref_block_bytes": "0001",
        "ref_block_hash": "00" * 8,
        "expiration": 2,
        "timestamp": 1,
        "fee_limit": call.fee_limit,
    }
    for name, new in changes.items():
        if name in ("data", "owner_address", "contract_address", "call_value"):
            value[name] = new
        else:
            raw[name] = new
    raw_hex = encode_raw(raw).hex()
    tx = {
        "visible": False,
        "txID": hashlib.sha256(bytes.fromhex(raw_hex)).hexdigest(),
        "raw_data": raw,
        "raw_data_hex": raw_hex,
    }
    return {"result": {"result": True}, "transaction": tx}


def test_a_node_built_call_is_checked_against_the_request() -> None:
    owner, factory = PAIRS[2][0], PAIRS[0][0]
    call = txbuild.deploy_wallet_call(factory, owner, 5_000_000)
    tx = txbuild.checked_transaction(call, _node_answer(call))
    assert set(tx) == {"txID", "raw_data", "raw_data_hex", "visible"}
    wire = txbuild.to_wire(call, NILE, tx, 1234)
    assert wire["transaction"] is tx and wire["feeLimit"] == 5_000_000
    assert wire["data"] == "0x" + call.data.hex() and wire["energyEstimate"] == 1234
    for change in (
        {"fee_limit": 9_000_000},
        {"contract_address": PAIRS[3][1]},
        {"owner_address": PAIRS[4][1]},
        {"data": call.data.hex()[:-2] + "ff"},
        {"call_value": 1},
    ):
        with pytest.raises(NodeError, match="unexpected transaction: " + next(iter(change))):
            txbuild.checked_transaction(call, _node_answer(call, **change))
    refused = {"result": {"code": "CONTRACT_VALIDATE_ERROR", "message": b"no".hex()}}
    with pytest.raises(InvalidInput, match="refused the transaction: no"):
        txbuild.checked_transaction(call, refused)


def test_withdraw_call_sorts_indexes_and_carries_the_fee() -> None:
    call = txbuild.withdraw_call(
        wallet=PAIRS[0][0],
        owner=PAIRS[2][0],
        token=NATIVE,
        to=PAIRS[3][0],
        amount=5,
        indexes=[3, 1, 3],
        fee=7,
        fee_limit=9,
    )
    assert call.args[3] == [1, 3] and call.call_value == 7
    assert call.request()["call_value"] == 7 and call.request()["fee_limit"] == 9


def test_config_takes_tron_addresses_on_tron_chains_only() -> None:
    hex41 = PAIRS[0][1]
    config = ChainConfig(NILE, "nile", factory=hex41, tokens=f"{PAIRS[0][0]},0x{hex41[2:]}")
    assert config.factory == PAIRS[0][0]
    assert config.tokens == (PAIRS[0][0], PAIRS[0][0])
    assert ChainConfig(NILE, "nile", factory="0x" + hex41[2:]).factory == PAIRS[0][0]
    with pytest.raises(InvalidInput, match="Tron address on EVM chain"):
        ChainConfig(1, "eth", factory=PAIRS[0][0])
    with pytest.raises(InvalidInput):
        ChainConfig(NILE, "nile", factory="TnotAnAddress")
    assert "secret" not in repr(ChainConfig(NILE, "nile", api_key="secret"))


def test_the_api_key_header_is_ours_only() -> None:
    """tronpy would send its own bundled keys to any URL containing "trongrid"."""
    keyed = Node("https://api.trongrid.io", api_key="mine")
    assert keyed.provider.sess.headers[API_KEY_HEADER] == "mine"
    assert not keyed.provider.use_api_key
    bare = Node("https://api.trongrid.io")
    assert API_KEY_HEADER not in bare.provider.sess.headers
    assert not bare.provider.use_api_key
