"""The EVM backend's pure parts, without a chain: raw-transaction decoding, the unsigned
transaction shapes, log matching, and the chain settings that guard them."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from eth_account import Account
from web3 import Web3

from paycore import ChainConfig, Gateway, Settings
from paycore.api import ROUTES
from paycore.api.openapi import document
from paycore.chains import WalletBackend
from paycore.chains.evm import abi, create2, plugin, scan, txbuild
from paycore.chains.evm.relay import decode_raw_tx
from paycore.contracts import load_artifact
from paycore.errors import InvalidInput

FACTORY = "0x5FbDB2315678afecb367f032d93F642f64180aa3"
TOKEN = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512"
OWNER = Account.from_key("0x" + "11" * 32)


def _signed(**fields: Any) -> str:
    tx = {"to": FACTORY, "data": abi.deploy_wallet_data(OWNER.address), "nonce": 3, "gas": 10**6}
    tx |= fields
    raw: bytes = OWNER.sign_transaction(tx).raw_transaction
    return "0x" + raw.hex()


@pytest.mark.parametrize(
    "fields",
    [
        {"gasPrice": 10**9, "chainId": 31337},  # legacy, EIP-155
        {"gasPrice": 10**9, "chainId": 31337, "type": 1, "accessList": []},
        {"maxFeePerGas": 10**9, "maxPriorityFeePerGas": 1, "chainId": 31337, "type": 2},
        {
            "maxFeePerGas": 10**9,
            "maxPriorityFeePerGas": 1,
            "chainId": 31337,
            "type": 2,
            "accessList": [{"address": TOKEN, "storageKeys": ["0x" + "00" * 32]}],
        },
    ],
)
def test_signed_transactions_of_each_relayed_type_decode(fields: dict[str, Any]) -> None:
    decoded = decode_raw_tx(_signed(**fields))
    assert (decoded.chain_id, decoded.nonce, decoded.to, decoded.value) == (31337, 3, FACTORY, 0)
    assert abi.decode_deploy_wallet(decoded.data) == OWNER.address
    assert decoded.sender == OWNER.address
    assert decoded.type == fields.get("type", 0)


def test_a_pre_eip155_transaction_has_no_chain_id() -> None:
    tx = {"to": FACTORY, "data": b"", "nonce": 0, "gas": 21000, "gasPrice": 1}
    raw = Account.sign_transaction(tx, OWNER.key).raw_transaction
    assert decode_raw_tx("0x" + bytes(raw).hex()).chain_id is None


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (None, "must be 0x-prefixed hex"),
        ("c0", "must be 0x-prefixed hex"),
        ("0xnothex", "must be 0x-prefixed hex"),
        ("0x", "is empty"),
        ("0x03c0", "transaction type 3 is not relayed"),
        ("0x04c0", "transaction type 4 is not relayed"),
        ("0x02ff", "not an RLP-encoded transaction"),
        ("0xc0", "not a signed transaction"),
        ("0x02c3010203", "not a signed transaction"),
    ],
)
def test_what_is_not_a_signed_transaction_is_refused(raw: object, reason: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        decode_raw_tx(raw)
    assert refused.value.reason == reason


def test_calldata_matches_web3s_own_encoding() -> None:
    w3 = Web3()
    factory = w3.eth.contract(abi=load_artifact("PaycoreFactory")["abi"])
    wallet = w3.eth.contract(abi=load_artifact("PaycoreWallet")["abi"])
    to = Account.create().address
    assert "0x" + abi.deploy_wallet_data(OWNER.address).hex() == factory.encode_abi(
        "deployWallet", [OWNER.address]
    )
    assert "0x" + txbuild.withdraw_call(TOKEN, to, 5, [3, 1, 3]).hex() == wallet.encode_abi(
        "withdraw", [TOKEN, to, 5, [1, 3]]
    )
    assert abi.decode_deploy_wallet(abi.deploy_wallet_data(OWNER.address)[:-1]) is None
    assert abi.decode_deploy_wallet(b"\0" * 36) is None


def test_unsigned_transactions_have_spec_shapes_and_sign_as_they_are() -> None:
    tx = txbuild.withdraw_tx(
        chain_id=31337,
        wallet=FACTORY,
        owner=OWNER.address,
        token=TOKEN,
        to=TOKEN,
        amount=1,
        indexes=[2],
        fee=10**15,
        gas_estimate=100_000,
        gas_price=7,
        nonce=4,
    )
    wire = tx.to_wire()
    assert wire["gas"] == hex(120_000)  # 20 % headroom on the estimate
    assert (wire["gasPrice"], wire["nonce"], wire["value"]) == ("0x7", 4, hex(10**15))
    assert wire["data"].startswith("0x" + abi.selector(abi.WITHDRAW).hex())
    fields = {k: wire[k] for k in ("to", "data", "gas", "gasPrice", "nonce", "value", "chainId")}
    signed = OWNER.sign_transaction(fields)
    decoded = decode_raw_tx("0x" + signed.raw_transaction.hex())
    assert (decoded.to, decoded.value, decoded.nonce) == (FACTORY, 10**15, 4)


def _log(to: str, *, topics: int = 3, tx: str = "0xaa", index: int = 0) -> dict[str, Any]:
    words = [abi.TRANSFER_TOPIC, abi.address_topic(OWNER.address), abi.address_topic(to)]
    words += ["0x" + "00" * 32] * (topics - 3)
    return {
        "address": TOKEN.lower(),
        "topics": words[:topics],
        "data": "0x" + (1234).to_bytes(32, "big").hex(),
        "transactionHash": tx,
        "logIndex": hex(index),
        "transactionIndex": "0x1",
        "blockNumber": "0x10",
        "blockHash": "0xbb",
    }


def test_transfers_match_watched_recipients_only() -> None:
    watched_address = create2.owner_deposit_address(FACTORY, OWNER.address, 7)
    watched = scan.watch_keys([watched_address])
    other = Account.create().address
    logs = [
        _log(watched_address, index=0),
        _log(other, index=1),
        _log(watched_address, topics=4, index=2),  # an ERC721 Transfer: tokenId indexed
        _log(watched_address.lower(), index=3),
    ]
    found = scan.match_transfers(logs, watched)
    assert [(t.log_index, t.to, t.token, t.units) for t in found] == [
        (0, watched_address, TOKEN, 1234),
        (3, watched_address, TOKEN, 1234),
    ]
    assert found[0].from_ == OWNER.address and found[0].order == (16, 1, 0)


def test_a_sweep_into_a_watched_wallet_is_not_a_deposit() -> None:
    wallet = create2.wallet_address(FACTORY, OWNER.address)
    watched = scan.watch_keys([wallet])
    collected = {"topics": [abi.COLLECTED_TOPIC], "transactionHash": "0xaa", "address": wallet}
    sweeps = scan.sweep_keys([collected])
    assert scan.match_transfers([_log(wallet, tx="0xaa")], watched, sweeps) == []
    assert len(scan.match_transfers([_log(wallet, tx="0xcc")], watched, sweeps)) == 1


def test_native_matches_are_plain_value_transfers() -> None:
    target = Account.create().address
    watched = scan.watch_keys([target])

    def tx(to: str | None, value: int, data: str = "0x") -> dict[str, Any]:
        return {
            "to": to,
            "value": hex(value),
            "input": data,
            "hash": f"0x{value:02x}",
            "from": OWNER.address.lower(),
            "transactionIndex": "0x0",
        }

    block = {
        "number": "0x5",
        "hash": "0xbb",
        "transactions": [
            tx(target.lower(), 1),
            tx(target, 0),  # nothing sent
            tx(target, 2, "0x34c9911d"),  # a call (the owner's withdraw paying its fee)
            tx(None, 3),  # contract creation
            tx(Account.create().address, 4),  # not watched
        ],
    }
    [found] = scan.match_native([block], watched)
    assert (found.to, found.units, found.log_index, found.from_) == (target, 1, -1, OWNER.address)


def test_faucet_keys_and_batches_are_checked_at_startup() -> None:
    with pytest.raises(InvalidInput):
        ChainConfig(1, "ethereum", faucet_key="0x01")
    with pytest.raises(InvalidInput):
        ChainConfig(31337, "anvil", block_batch=0)
    with pytest.raises(InvalidInput):
        ChainConfig(31337, "anvil", factory="0x1234")
    config = ChainConfig(31337, "anvil", factory=FACTORY.lower(), tokens=f"{TOKEN.lower()},")
    assert (config.factory, config.tokens) == (FACTORY, (TOKEN,))
    assert "faucet_key" not in repr(ChainConfig(31337, "anvil", faucet_key="0x01"))
    assert ChainConfig(31337, "anvil", faucet_amount="0.5").faucet_amount == Decimal("0.5")


def test_the_plugin_serves_chains_with_an_rpc_url_and_a_factory_only() -> None:
    chains = {
        31337: ChainConfig(31337, "anvil", rpc_url="http://127.0.0.1:1", factory=FACTORY),
        1337: ChainConfig(1337, "dev", rpc_url="http://127.0.0.1:1"),  # no factory
        1: ChainConfig(1, "ethereum", factory=FACTORY),  # no node
    }
    gateway = Gateway(
        Settings(database_url="memory://", chains=chains), entry_points=False, plugins=[plugin]
    )
    assert set(gateway.chains) == {31337}
    assert isinstance(gateway.chains[31337], WalletBackend)
    # Derivation is pure: it works while the node is down.
    assert gateway.chains[31337].deposit_address(OWNER.address, 31337, 7) == (
        create2.owner_deposit_address(FACTORY, OWNER.address, 7)
    )
    bare = Gateway(Settings(database_url="memory://", chains=chains), entry_points=False)
    assert bare.chains == {}


def test_a_down_node_is_a_502_not_a_500() -> None:
    from paycore.api import Request, handle

    chains = {31337: ChainConfig(31337, "anvil", rpc_url="http://127.0.0.1:1", factory=FACTORY)}
    gateway = Gateway(
        Settings(database_url="memory://", chains=chains), entry_points=False, plugins=[plugin]
    )
    query = f"ownerAddress={OWNER.address}&chainId=31337"
    response = handle(gateway, Request("GET", "/initWallet", query_string=query))
    assert response.status == 502
    assert response.body.decode().startswith("chain node: ")
    response = handle(gateway, Request("GET", "/getAddress", query_string=query + "&index=1"))
    assert response.status == 200  # no node needed


def test_get_and_post_routes_document_both_forms() -> None:
    paths = document(ROUTES)["paths"]
    get, post = paths["/initWithdraw"]["get"], paths["/initWithdraw"]["post"]
    assert "requestBody" not in get and "requestBody" in post
    query = {p["name"]: p for p in get["parameters"] if p["in"] == "query"}
    assert {"to", "ownerAddress", "chainId", "amount", "value"} <= set(query)
    assert query["chainId"]["required"] and not query["amount"]["required"]
    assert get["operationId"] != post["operationId"]
