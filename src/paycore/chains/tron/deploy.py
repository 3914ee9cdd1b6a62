"""Deploying ``PaycoreFactory`` on Tron: one ``CreateSmartContract`` transaction.

Tron has no deterministic deployer; a contract's address is
``0x41 ++ keccak256(txID ++ owner)[12:]``, so it is known as soon as the transaction is
built. paycore builds the transaction itself, from the node's head block (the reference
block every Tron transaction names) and its own protobuf encoding, rather than asking the
node's ``deploycontract``: what is signed is then exactly the factory's creation code and
constructor arguments, with nothing for a node to change. The contract is stored without
an ABI (paycore calls it by selector); a Tron wallet that administers the fee takes the ABI
from ``src/paycore/contracts/artifacts/PaycoreFactory.json``.

With a key, the transaction is signed here (``sha256`` of the raw bytes, secp256k1) and
sent with ``broadcasthex``; without one, it is returned as TronWeb shows and signs it
(``txID``, ``raw_data``, ``raw_data_hex``), valid for :data:`VALIDITY_MS`.
"""

from __future__ import annotations

import re
import time
from typing import Any

from coincurve import PrivateKey

from paycore.crypto.hashing import keccak256, sha256
from paycore.domain.records import Json
from paycore.domain.tokens import normalize_tron, tron_from_hex, tron_to_hex
from paycore.errors import InvalidInput, PaycoreError

from ..deploy import FactoryArgs, FactoryDeployment
from .node import Node, NodeError, node_message
from .rawtx import pb_bytes, pb_uint, signed_transaction

#: ``Transaction.Contract.ContractType.CreateSmartContract``.
CREATE_SMART_CONTRACT = 30
TYPE_URL = "type.googleapis.com/protocol.CreateSmartContract"
#: The contract's name on chain (java-tron allows 32 bytes).
NAME = "PaycoreFactory"
#: Callers pay all energy of calls into the factory; the deployer pays none of theirs.
CONSUME_USER_RESOURCE_PERCENT = 100
#: The most energy the deployer lends to a call (unused at 100%, but must be positive).
ORIGIN_ENERGY_LIMIT = 10_000_000
#: The most SUN the deployment may burn for energy: deploying the factory needs some
#: millions of energy (a cap, not a price: only what is used is burned).
DEPLOY_FEE_LIMIT = 5_000_000_000
#: How long the transaction stays valid: room to sign it on a hardware wallet.
VALIDITY_MS = 10 * 60 * 1000
POLL = 1.0

_KEY = re.compile(r"(0x)?[0-9a-fA-F]{64}")


class DeployFailed(PaycoreError):
    """The deployment was sent but no factory appeared (refused, failed, or too slow)."""

    status = 502


def chain_id_of(node: Node) -> int:
    """The chain id a Tron node serves: the last 4 bytes of its genesis block's id (which is
    how 728126428, 2494104990 and 3448148188 come about)."""
    genesis = node.post("wallet/getblockbynum", {"num": 0})
    block_id = genesis.get("blockID") if isinstance(genesis, dict) else None
    if not isinstance(block_id, str) or not re.fullmatch(r"[0-9a-fA-F]{64}", block_id):
        raise NodeError("wallet/getblockbynum", "no genesis block")
    return int(block_id[-8:], 16)


def account_of(key: str) -> tuple[PrivateKey, str]:
    """The key and its Tron address (base58); the key is never repeated in an error."""
    if not isinstance(key, str) or not _KEY.fullmatch(key.strip()):
        raise InvalidInput("key", "not a 32-byte hex private key")
    try:
        private = PrivateKey(bytes.fromhex(key.strip().removeprefix("0x")))
    except Exception:
        raise InvalidInput("key", "not a valid secp256k1 private key") from None
    public = private.public_key.format(compressed=False)[1:]
    return private, tron_from_hex("41" + keccak256(public)[12:].hex())


def contract_address(tx_id: bytes, owner: str) -> str:
    """Where a ``CreateSmartContract`` lands: ``0x41 ++ keccak256(txID ++ owner)[12:]``."""
    return tron_from_hex("41" + keccak256(tx_id + bytes.fromhex(tron_to_hex(owner)))[12:].hex())


def create_raw(
    owner: str, code: bytes, head: dict[str, Any], now_ms: int, fee_limit: int
) -> tuple[bytes, Json]:
    """``Transaction.raw`` of the deployment, as protobuf bytes and as the JSON java-tron
    and TronWeb render (fields in number order, zeros left out, so each is the other)."""
    header = head["block_header"]["raw_data"]
    number, block_id = int(header["number"]), str(head["blockID"])
    ref_bytes = number.to_bytes(8, "big")[6:8]
    ref_hash = bytes.fromhex(block_id)[8:16]
    owner_hex = tron_to_hex(owner)
    expiration = now_ms + VALIDITY_MS
    new_contract = (
        pb_bytes(1, bytes.fromhex(owner_hex))
        + pb_bytes(4, code)
        + pb_uint(6, CONSUME_USER_RESOURCE_PERCENT)
        + pb_bytes(7, NAME.encode())
        + pb_uint(8, ORIGIN_ENERGY_LIMIT)
    )
    value = pb_bytes(1, bytes.fromhex(owner_hex)) + pb_bytes(2, new_contract)
    parameter = pb_bytes(1, TYPE_URL.encode()) + pb_bytes(2, value)
    contract = pb_uint(1, CREATE_SMART_CONTRACT) + pb_bytes(2, parameter)
    raw = (
        pb_bytes(1, ref_bytes)
        + pb_bytes(4, ref_hash)
        + pb_uint(8, expiration)
        + pb_bytes(11, contract)
        + pb_uint(14, now_ms)
        + pb_uint(18, fee_limit)
    )
    rendered: Json = {
        "contract": [
            {
                "parameter": {
                    "value": {
                        "owner_address": owner_hex,
                        "new_contract": {
                            "origin_address": owner_hex,
                            "bytecode": code.hex(),
                            "consume_user_resource_percent": CONSUME_USER_RESOURCE_PERCENT,
                            "name": NAME,
                            "origin_energy_limit": ORIGIN_ENERGY_LIMIT,
                        },
                    },
                    "type_url": TYPE_URL,
                },
                "type": "CreateSmartContract",
            }
        ],
        "ref_block_bytes": ref_bytes.hex(),
        "ref_block_hash": ref_hash.hex(),
        "expiration": expiration,
        "timestamp": now_ms,
        "fee_limit": fee_limit,
    }
    return raw, rendered


def deploy_factory(
    node: Node,
    chain_id: int,
    args: FactoryArgs,
    *,
    key: str | None = None,
    sender: str | None = None,
    fee_limit: int = DEPLOY_FEE_LIMIT,
    timeout: float = 180.0,
    now_ms: int | None = None,
) -> FactoryDeployment:
    """Deploy (with ``key``) or prepare (for ``sender``) the factory on a Tron chain."""
    private = None
    if key is not None:
        private, signer = account_of(key)
        if sender is not None and normalize_tron(sender, "from") != signer:
            raise InvalidInput("from", f"the key is {signer}'s, not {sender}'s")
        sender = signer
    assert sender is not None
    owner = normalize_tron(sender, "from")
    answered = chain_id_of(node)
    if answered != chain_id:
        raise InvalidInput("rpc_url", f"the node answers for chain {answered}, not {chain_id}")
    head = node.post("wallet/getnowblock", {})
    if not isinstance(head, dict) or "blockID" not in head:
        raise NodeError("wallet/getnowblock", "no head block")
    now = int(time.time() * 1000) if now_ms is None else now_ms
    raw, rendered = create_raw(owner, args.init_code(), head, now, fee_limit)
    tx_id = sha256(raw)
    address = contract_address(tx_id, owner)
    transaction: Json = {
        "visible": False,
        "txID": tx_id.hex(),
        "raw_data": rendered,
        "raw_data_hex": raw.hex(),
    }
    if private is None:
        return FactoryDeployment(chain_id, address, "tron", args, unsigned=transaction)
    signature = private.sign_recoverable(tx_id, hasher=None)
    sent = node.post(
        "wallet/broadcasthex", {"transaction": signed_transaction(raw, [signature.hex()]).hex()}
    )
    if not isinstance(sent, dict) or sent.get("result") is not True:
        reason = node_message(sent.get("message") if isinstance(sent, dict) else None)
        code = sent.get("code") if isinstance(sent, dict) else None
        raise DeployFailed(f"the node refused the deployment: {code or ''} {reason}".strip())
    _wait(node, tx_id.hex(), address, timeout)
    return FactoryDeployment(chain_id, address, "tron", args, tx_hash=tx_id.hex())


def _wait(node: Node, tx_id: str, address: str, timeout: float) -> None:
    """Until the factory's code is on chain; a transaction the chain ran and failed (out
    of energy, a revert) ends the wait at once."""
    deadline = time.monotonic() + timeout
    while True:
        info = node.post("wallet/gettransactioninfobyid", {"value": tx_id})
        if isinstance(info, dict) and info.get("id"):
            receipt = info.get("receipt") if isinstance(info.get("receipt"), dict) else {}
            result = receipt.get("result") if isinstance(receipt, dict) else None
            if info.get("result") == "FAILED" or result not in (None, "SUCCESS"):
                why = node_message(info.get("resMessage"), str(result or "FAILED"))
                raise DeployFailed(f"the deployment {tx_id} failed: {why}")
            found = node.post("wallet/getcontract", {"value": address, "visible": True})
            if isinstance(found, dict) and found.get("bytecode"):
                return
        if time.monotonic() > deadline:
            raise DeployFailed(f"the deployment {tx_id} was not on chain within {timeout:.0f} s")
        time.sleep(POLL)
