"""Every field of a node-built transaction is checked, and a refused call is a 4xx.

Found by comparing paycore with TronWeb: a node could add a ``Permission_id`` or a
``raw_data.data`` memo to the transaction /initWallet and /initWithdraw hand out, and paycore
passed it on; and a dry run failing with a TVM exception other than REVERT ("Cannot transfer
TRX to yourself.") was a 502 instead of a 400 "would fail". Here the local TronGrid
stand-in plays the misbehaving node: it rewrites its answers (``tamper``) or answers the dry
run in java-tron's shapes for each kind of failure (``constant_answer``), over real HTTP.
"""

from __future__ import annotations

import copy
import hashlib
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fake_trongrid import encode_contract, encode_raw, h20, pb_int, rebuilt, refusal
from tron_env import CHAIN_ID, PAYER, TRX, Env, address_of, open_env

from paycore.chains.tron import built, txbuild
from paycore.chains.tron.node import NodeError, call_fails, node_message
from paycore.errors import InvalidInput

OWNER = "TRGhNNfnmgLegT4zHNjEqDSADjgmnHvubJ"
FACTORY = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"
OTHER = "TJCnKsPa7y5okkXvQAidZBzqx3QyQ6sxMW"
FEE_LIMIT = 5_000_000


def _call() -> txbuild.ContractCall:
    return txbuild.deploy_wallet_call(FACTORY, OWNER, FEE_LIMIT)


def _tx(now_ms: int, **raw_changes: Any) -> dict[str, Any]:
    """What an honest node answers for ``_call()`` at ``now_ms`` (visible: base58)."""
    call = _call()
    raw: dict[str, Any] = {
        "contract": [
            {
                "parameter": {
                    "value": {
                        "data": call.data.hex(),
                        "owner_address": OWNER,
                        "contract_address": FACTORY,
                    },
                    "type_url": "type.googleapis.com/protocol.TriggerSmartContract",
                },
                "type": "TriggerSmartContract",
            }
        ],
        "ref_block_bytes": "4b40",
        "ref_block_hash": "0123456789abcdef",
        "expiration": now_ms + 60_000,
        "timestamp": now_ms,
        "fee_limit": FEE_LIMIT,
    }
    raw.update(raw_changes)
    return rebuilt({"visible": True}, raw)


def _value(tx: dict[str, Any]) -> dict[str, Any]:
    value: dict[str, Any] = tx["raw_data"]["contract"][0]["parameter"]["value"]
    return value


def _consistently(change: Callable[[dict[str, Any]], None]) -> Callable[[dict], dict]:
    """A node that built the changed transaction: JSON, bytes and txID all agree."""

    def tamper(tx: dict[str, Any]) -> dict[str, Any]:
        raw = copy.deepcopy(tx["raw_data"])
        change(raw)
        return rebuilt(tx, raw)

    return tamper


def _json_only(change: Callable[[dict[str, Any]], None]) -> Callable[[dict], dict]:
    """A node whose JSON says something its bytes (what gets signed) do not."""

    def tamper(tx: dict[str, Any]) -> dict[str, Any]:
        raw = copy.deepcopy(tx["raw_data"])
        change(raw)
        return {**tx, "raw_data": raw}

    return tamper


def _set(path: str, value: object) -> Callable[[dict[str, Any]], None]:
    """Set a key of ``raw_data`` ("fee_limit"), of the contract ("contract.Permission_id")
    or of the call's value ("value.call_value")."""

    def change(raw: dict[str, Any]) -> None:
        where, _, key = path.rpartition(".")
        target = {
            "": raw,
            "contract": raw["contract"][0],
            "value": raw["contract"][0]["parameter"]["value"],
        }[where]
        target[key] = value

    return change


def _two_contracts(raw: dict[str, Any]) -> None:
    raw["contract"].append(copy.deepcopy(raw["contract"][0]))


def _transfer(raw: dict[str, Any]) -> None:
    value = raw["contract"][0]["parameter"]["value"]
    raw["contract"][0] = {
        "parameter": {
            "value": {
                "amount": 1,
                "owner_address": value["owner_address"],
                "to_address": value["contract_address"],
            },
            "type_url": "type.googleapis.com/protocol.TransferContract",
        },
        "type": "TransferContract",
    }


def _unknown_field(tx: dict[str, Any]) -> dict[str, Any]:
    """A field number ``tron.proto`` does not have (7), in the bytes only."""
    raw_hex = tx["raw_data_hex"] + pb_int(7, 1).hex()
    tx_id = hashlib.sha256(bytes.fromhex(raw_hex)).hexdigest()
    return {**tx, "raw_data_hex": raw_hex, "txID": tx_id}


def _day_to_sign(tx: dict[str, Any]) -> dict[str, Any]:
    """Valid for a day (the protocol's limit) instead of java-tron's minute."""
    raw = copy.deepcopy(tx["raw_data"])
    raw["expiration"] = raw["timestamp"] + 24 * 3600 * 1000
    return rebuilt(tx, raw)


#: (what the node does, the field the 502 names). Each is refused; none reaches the owner.
DEVIATIONS: list[tuple[str, Callable[[dict], dict], str]] = [
    ("memo", _consistently(_set("data", b"hello".hex())), "raw_data.data"),
    ("Permission_id", _consistently(_set("contract.Permission_id", 2)), "Permission_id"),
    ("TRC10 attached", _consistently(_set("value.call_token_value", 5)), "call_token_value"),
    ("TRC10 token id", _consistently(_set("value.token_id", 1000001)), "token_id"),
    ("ref_block_num", _consistently(_set("ref_block_num", 19264)), "ref_block_num"),
    ("fee limit", _consistently(_set("fee_limit", 10**10)), "fee_limit"),
    ("call value", _consistently(_set("value.call_value", 1)), "call_value"),
    ("owner", _consistently(_set("value.owner_address", OTHER)), "owner_address"),
    ("contract", _consistently(_set("value.contract_address", OTHER)), "contract_address"),
    ("calldata", _consistently(_set("value.data", "deadbeef")), "data"),
    ("two contracts", _consistently(_two_contracts), "raw_data_hex"),
    ("a transfer", _consistently(_transfer), "contract type"),
    ("no ref block hash", _consistently(_set("ref_block_hash", "")), "ref_block_hash"),
    ("no ref block bytes", _consistently(_set("ref_block_bytes", "")), "ref_block_bytes"),
    ("no timestamp", _consistently(_set("timestamp", 0)), "timestamp"),
    ("a day to sign", _day_to_sign, "expiration"),
    ("unknown field", _unknown_field, "raw_data field 7"),
    ("txID", lambda tx: {**tx, "txID": "00" * 32}, "txID"),
    ("hex", lambda tx: {**tx, "raw_data_hex": "zz"}, "raw_data_hex"),
    ("no raw_data", lambda tx: {k: v for k, v in tx.items() if k != "raw_data"}, "raw_data"),
    ("JSON fee limit", _json_only(_set("fee_limit", 1)), "raw_data.fee_limit"),
    ("JSON memo", _json_only(_set("data", "00")), "raw_data.data"),
    (
        "JSON Permission_id",
        _json_only(_set("contract.Permission_id", 2)),
        "raw_data.contract[0].Permission_id",
    ),
    (
        "JSON owner",
        _json_only(_set("value.owner_address", OTHER)),
        "raw_data.contract[0].parameter.value.owner_address",
    ),
    (
        "JSON calldata",
        _json_only(_set("value.data", "00")),
        "raw_data.contract[0].parameter.value.data",
    ),
    ("JSON expiration", _json_only(_set("expiration", 1)), "raw_data.expiration"),
    ("visible", lambda tx: {**tx, "visible": "yes"}, "visible"),
]


def test_an_honest_answer_passes_every_check() -> None:
    now = int(time.time() * 1000)
    tx = _tx(now)
    answer = {"result": {"result": True}, "transaction": tx}
    assert txbuild.checked_transaction(_call(), answer, now_ms=now) == tx
    # The 41-hex rendering (visible false) says the same.
    hex_tx = copy.deepcopy(tx)
    _value(hex_tx)["owner_address"] = "41" + _hex(OWNER)
    _value(hex_tx)["contract_address"] = "41" + _hex(FACTORY)
    hex_tx["visible"] = False
    txbuild.checked_transaction(_call(), {"result": {"result": True}, "transaction": hex_tx}, now)


def _hex(address: str) -> str:
    return h20(address)


@pytest.mark.parametrize(("name", "tamper", "field"), DEVIATIONS, ids=[d[0] for d in DEVIATIONS])
def test_each_deviation_is_refused_naming_the_field(
    name: str, tamper: Callable[[dict], dict], field: str
) -> None:
    now = int(time.time() * 1000)
    answer = {"result": {"result": True}, "transaction": tamper(_tx(now))}
    with pytest.raises(built.UnexpectedTransaction) as caught:
        txbuild.checked_transaction(_call(), answer, now_ms=now)
    assert caught.value.status == 502
    assert caught.value.field == field, caught.value.text
    assert caught.value.text.startswith(f"node returned an unexpected transaction: {field}")


def test_expiry_is_bounded_by_our_clock_too() -> None:
    now = int(time.time() * 1000)
    answer = {"result": {"result": True}, "transaction": _tx(now)}
    txbuild.checked_transaction(_call(), answer, now_ms=now + 30_000)
    for skewed in (now + built.CLOCK_SKEW_MS + 61_000, now - built.MAX_VALIDITY_MS * 2):
        with pytest.raises(built.UnexpectedTransaction, match="expiration"):
            txbuild.checked_transaction(_call(), answer, now_ms=skewed)


def test_the_encoder_writes_the_extra_fields_where_tron_proto_has_them() -> None:
    """The stand-in's tampering is real protobuf: Permission_id is field 5 of Contract, the
    memo field 10 of raw (checked by hand, independent of paycore's reader)."""
    contract = _tx(1)["raw_data"]["contract"][0]
    assert encode_contract({**contract, "Permission_id": 2}).endswith(bytes([5 << 3, 2]))
    raw = _tx(1)["raw_data"]
    memo = encode_raw({**raw, "data": "6869"})
    assert bytes([10 << 3 | 2, 2]) + b"hi" in memo


# -- over HTTP, against the stand-in ------------------------------------------------------------


@pytest.fixture
def env() -> Iterator[Env]:
    with open_env("core") as opened:
        yield opened


def _funded_owner(env: Env) -> str:
    _owner, owner_t, _session = env.merchant()
    env.chain.send_trx(address_of(PAYER), owner_t, 100 * TRX)
    env.chain.mine()
    return owner_t


@pytest.mark.parametrize(
    ("name", "tamper", "field"),
    [d for d in DEVIATIONS if d[0] in ("memo", "Permission_id", "TRC10 attached", "JSON memo")],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_a_misbehaving_node_is_a_502_and_nothing_is_handed_out(
    env: Env, name: str, tamper: Callable[[dict], dict], field: str
) -> None:
    owner_t = _funded_owner(env)
    body = {"ownerAddress": owner_t, "chainId": CHAIN_ID}
    assert env.api.post("/initWallet", body).ok()["transaction"]  # honest: fine
    env.chain.tamper = tamper
    answer = env.api.post("/initWallet", body)
    assert answer.error(502).startswith(f"node returned an unexpected transaction: {field}")


def _revert(reason: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """java-tron's REVERT: result true, the message, ret FAILED, Error(string) as output."""
    encoded = reason.encode()
    output = (
        "08c379a0"
        + format(32, "064x")
        + format(len(encoded), "064x")
        + encoded.hex().ljust(64, "0")
    )
    return lambda body: {
        "result": {"result": True, "message": "REVERT opcode executed"},
        "energy_used": 300,
        "constant_result": [output],
        "transaction": {"ret": [{"ret": "FAILED"}]},
    }


def _refusal(code: str, message: str, *, hex_message: bool = True) -> Callable[[dict], dict]:
    """java-tron's refusal (``result`` false, so left out); the message as text, as a
    ``visible`` request gets it, or hex, as any other does (paycore reads both)."""
    return lambda body: refusal(code, message, visible=not hex_message)


#: (java-tron's answer to the dry run, what the 400 says after "would fail: ").
FAILURES = [
    (_revert("Ownable: not yours"), "Ownable: not yours"),
    (
        _refusal("CONTRACT_VALIDATE_ERROR", "Cannot transfer TRX to yourself."),
        "Cannot transfer TRX to yourself.",
    ),
    (
        _refusal(
            "CONTRACT_VALIDATE_ERROR",
            "Validate InternalTransfer error, balance is not sufficient.",
            hex_message=False,
        ),
        "Validate InternalTransfer error, balance is not sufficient.",
    ),
    (
        _refusal(
            "OTHER_ERROR",
            "class org.tron.core.vm.program.Program$OutOfEnergyException : not enough energy",
        ),
        "OutOfEnergyException: not enough energy",
    ),
    (
        _refusal(
            "OTHER_ERROR",
            "class org.tron.core.vm.program.Program$IllegalOperationException"
            " : Invalid operation code: opCode[fe];",
        ),
        "IllegalOperationException: Invalid operation code: opCode[fe];",
    ),
    (
        _refusal(
            "OTHER_ERROR",
            "class org.tron.core.vm.program.Program$BadJumpDestinationException"
            " : Operation with pc isn't 'JUMPDEST' instruction, tx: [-], pc: 7",
        ),
        "BadJumpDestinationException: Operation with pc isn't 'JUMPDEST' instruction, tx: [-], "
        "pc: 7",
    ),
    (_refusal("CONTRACT_EXE_ERROR", "Unknown exception"), "Unknown exception"),
]


@pytest.mark.parametrize(("answer", "reason"), FAILURES, ids=[f[1][:30] for f in FAILURES])
def test_a_dry_run_that_fails_any_way_is_a_400_with_the_nodes_reason(
    env: Env, answer: Callable[[dict], dict], reason: str
) -> None:
    owner_t = _funded_owner(env)
    env.chain.constant_answer = lambda body: (
        answer(body) if body.get("function_selector") == "deployWallet(address)" else None
    )
    refused = env.api.post("/initWallet", {"ownerAddress": owner_t, "chainId": CHAIN_ID})
    assert refused.error(400) == (
        f"invalid request: ownerAddress: deployWallet would fail: {reason}"
    )
    assert not [r for r in env.chain.requests if r[0] == "/wallet/triggersmartcontract"]


@pytest.mark.parametrize(
    "answer",
    [
        _refusal("SERVER_BUSY", "Server busy"),
        _refusal("OTHER_ERROR", "class java.lang.NullPointerException : null"),
        _refusal("NO_CONNECTION", "no connection"),
        lambda body: ["not", "an", "object"],
    ],
    ids=["busy", "internal", "no connection", "not an object"],
)
def test_the_nodes_own_trouble_stays_a_502(env: Env, answer: Callable[[dict], Any]) -> None:
    owner_t = _funded_owner(env)
    env.chain.constant_answer = answer
    failed = env.api.post("/initWallet", {"ownerAddress": owner_t, "chainId": CHAIN_ID})
    assert failed.error(502).startswith("chain node: wallet/triggerconstantcontract: ")


def test_an_http_error_from_the_node_is_a_502(env: Env) -> None:
    owner_t = _funded_owner(env)
    env.chain.http_status = 503
    failed = env.api.post("/initWallet", {"ownerAddress": owner_t, "chainId": CHAIN_ID})
    assert failed.error(502).startswith("chain node: ")


def test_a_refused_build_is_a_400_and_busy_a_502(env: Env) -> None:
    """``triggersmartcontract`` itself: a refusal of the call (an account that does not
    exist) is the owner's to fix; a busy node is not."""
    owner_t = _funded_owner(env)
    call = txbuild.deploy_wallet_call(FACTORY, owner_t, FEE_LIMIT)
    refused = {"result": {"code": "CONTRACT_VALIDATE_ERROR", "message": b"no TRX".hex()}}
    with pytest.raises(InvalidInput, match="refused the transaction: no TRX"):
        txbuild.checked_transaction(call, refused)
    with pytest.raises(NodeError, match="Server busy"):
        txbuild.checked_transaction(
            call, {"result": {"code": "SERVER_BUSY", "message": "Server busy"}}
        )


def test_messages_and_kinds() -> None:
    assert node_message(b"Cannot transfer TRX to yourself.".hex()) == (
        "Cannot transfer TRX to yourself."
    )
    assert node_message("REVERT opcode executed") == "REVERT opcode executed"
    assert node_message("deadbe") == "deadbe"  # hex digits, not text: left as they came
    assert node_message("two\nlines") == "two lines"
    assert len(node_message("x" * 500)) == 200
    assert call_fails("CONTRACT_VALIDATE_ERROR", "")
    assert call_fails(
        "OTHER_ERROR", "class org.tron.core.vm.program.Program$StackTooSmallException : x"
    )
    assert not call_fails("OTHER_ERROR", "class org.tron.core.exception.HeaderNotFound : x")
    assert not call_fails("SERVER_BUSY", "")


def test_deploy_wallet_relays_no_trc10_tokens(env: Env) -> None:
    """A relayed transaction is the owner's own (a memo or a Permission_id is theirs to
    add), but TRC10 tokens sent along are not a wallet deployment."""
    owner_t = _funded_owner(env)
    built_tx = env.api.post("/initWallet", {"ownerAddress": owner_t, "chainId": CHAIN_ID}).ok()
    raw = copy.deepcopy(built_tx["transaction"]["raw_data"])
    raw["contract"][0]["parameter"]["value"]["call_token_value"] = 5
    raw["contract"][0]["parameter"]["value"]["token_id"] = 1000001
    with_tokens = rebuilt(built_tx["transaction"], raw)
    signed = {**with_tokens, "signature": ["11" * 65]}
    answer = env.api.post("/deployWallet", {"rawTx": signed, "chainId": CHAIN_ID})
    assert answer.error(400) == "invalid request: rawTx: deployWallet takes no TRC10 tokens"
    assert not [r for r in env.chain.requests if r[0] == "/wallet/broadcasthex"]
