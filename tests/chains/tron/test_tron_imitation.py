"""The TronGrid stand-in answers as java-tron does where paycore's behaviour depends on it,
and paycore reads those answers right.

Each shape here was read off java-tron's source (framework/.../services/http and
core/Wallet.java), not off documentation examples:

- ``Return.message`` is printed by JsonFormat as UTF-8 text for a ``visible`` request
  (HttpSelfFormatFieldName lists ``protocol.Return.message``) and as hex otherwise; a false
  ``result`` is left out, like every proto3 default.
- ``getcontract`` of a contract made by CREATE2 has no ``bytecode``: the TVM stores its
  SmartContract with addresses, resource percent and hashes only.
- ``broadcasthex`` answers ``result``, ``code``, ``message`` (empty on success),
  ``transaction`` (JSON *text*) and ``txid``.
- A signature that does not verify is that same JSON with ``SIGERROR`` and the text of the
  ValidateSignatureException -- not a dropped connection.
- A TVM exception other than REVERT in a dry run is rethrown by ``callConstantContract``
  and caught by the servlet: ``OTHER_ERROR``, ``class <exception> : <message>``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from fake_trongrid import b58, h20
from tron_env import CHAIN_ID, FACTORY, PAYER, TRX, USDT, Env, address_of, key, open_env
from tron_env import backend as tron_backend

from paycore.chains.tron import rawtx

pytestmark = pytest.mark.slow  # a gateway and the stand-in over HTTP

NOT_A_CONTRACT = b58("00" * 19 + "99")


@pytest.fixture
def env() -> Iterator[Env]:
    with open_env("core") as opened:
        yield opened


def ask(env: Env, path: str, body: dict[str, Any]) -> Any:
    answer = requests.post(f"{env.url}/wallet/{path}", json=body, timeout=10)
    assert answer.status_code == 200
    return answer.json()


def constant(contract: str, function: str, visible: bool, **more: Any) -> dict[str, Any]:
    return {
        "owner_address": address_of(PAYER) if visible else "41" + h20(address_of(PAYER)),
        "contract_address": contract if visible else "41" + h20(contract),
        "function_selector": function,
        "parameter": "",
        "visible": visible,
        **more,
    }


def test_messages_are_text_for_a_visible_request_and_hex_otherwise(env: Env) -> None:
    text = "Smart contract is not exist."
    assert ask(env, "triggerconstantcontract", constant(NOT_A_CONTRACT, "f()", True)) == {
        "result": {"code": "CONTRACT_VALIDATE_ERROR", "message": text}
    }
    assert ask(env, "triggerconstantcontract", constant(NOT_A_CONTRACT, "f()", False)) == {
        "result": {"code": "CONTRACT_VALIDATE_ERROR", "message": text.encode().hex()}
    }
    _owner, owner_t, _session = env.merchant()
    env.chain.deploy_wallet(owner_t)
    env.chain.mine()
    wallet = b58(env.chain.wallet_for(owner_t))
    withdraw = "withdraw(address,address,uint256,uint256[])"  # the payer is not the owner
    shown = ask(env, "triggerconstantcontract", constant(wallet, withdraw, True))
    hidden = ask(env, "triggerconstantcontract", constant(wallet, withdraw, False))
    assert shown["result"] == {"result": True, "message": "REVERT opcode executed"}
    assert hidden["result"] == {"result": True, "message": b"REVERT opcode executed".hex()}
    assert shown["transaction"]["ret"] == [{"ret": "FAILED"}]
    # paycore asks visibly and reads the text as the reason.
    chain = tron_backend(env.gateway).chain(CHAIN_ID)
    missing = chain.call(NOT_A_CONTRACT, "decimals()")
    assert (missing.reverted, missing.message) == (True, text)
    reverted = chain.call(wallet, withdraw)
    assert (reverted.reverted, reverted.message) == (True, "REVERT opcode executed")


def test_a_create2_wallet_has_no_bytecode_and_paycore_still_sees_it(env: Env) -> None:
    _owner, owner_t, _session = env.merchant()
    env.chain.deploy_wallet(owner_t)
    env.chain.mine()
    wallet = b58(env.chain.wallet_for(owner_t))
    made = ask(env, "getcontract", {"value": wallet, "visible": True})
    assert "bytecode" not in made
    assert made["contract_address"] == wallet
    assert made["origin_address"] == FACTORY  # the contract that ran CREATE2
    assert made["consume_user_resource_percent"] == 100
    assert set(made) == {
        "origin_address",
        "contract_address",
        "consume_user_resource_percent",
        "code_hash",
        "trx_hash",
    }
    hidden = ask(env, "getcontract", {"value": "41" + h20(wallet)})
    assert hidden["contract_address"] == "41" + h20(wallet)
    deployed = ask(env, "getcontract", {"value": USDT, "visible": True})
    assert deployed["bytecode"] and deployed["origin_address"] != USDT
    assert ask(env, "getcontract", {"value": NOT_A_CONTRACT, "visible": True}) == {}
    chain = tron_backend(env.gateway).chain(CHAIN_ID)
    assert chain.has_code(wallet)
    assert not chain.has_code(NOT_A_CONTRACT)
    again = env.api.post("/initWallet", {"ownerAddress": owner_t, "chainId": CHAIN_ID})
    assert "already deployed" in again.error(400)


def _built(env: Env, owner_t: str) -> dict[str, Any]:
    env.chain.send_trx(address_of(PAYER), owner_t, 100 * TRX)
    env.chain.mine()
    built: dict[str, Any] = env.api.post(
        "/initWallet", {"ownerAddress": owner_t, "chainId": CHAIN_ID}
    ).ok()["transaction"]
    return built


def _signed_hex(transaction: dict[str, Any], signature: bytes) -> str:
    raw = bytes.fromhex(transaction["raw_data_hex"])
    return rawtx.signed_transaction(raw, [signature.hex()]).hex()


def test_broadcasthex_success_carries_code_message_and_the_transaction_as_text(env: Env) -> None:
    owner, owner_t, _session = env.merchant()
    built = _built(env, owner_t)
    signature = owner.sign_msg_hash(bytes.fromhex(built["txID"])).to_bytes()
    answer = ask(env, "broadcasthex", {"transaction": _signed_hex(built, signature)})
    assert set(answer) == {"result", "code", "message", "transaction", "txid"}
    assert (answer["result"], answer["code"], answer["message"]) == (True, "SUCCESS", "")
    assert answer["txid"] == built["txID"]
    assert isinstance(answer["transaction"], str)  # JSON text inside the JSON
    assert json.loads(answer["transaction"])["txID"] == built["txID"]


def test_relaying_through_paycore_reads_that_answer(env: Env) -> None:
    owner, owner_t, _session = env.merchant()
    built = _built(env, owner_t)
    signature = owner.sign_msg_hash(bytes.fromhex(built["txID"])).hex()
    relayed = env.api.post(
        "/deployWallet", {"rawTx": {**built, "signature": [signature]}, "chainId": CHAIN_ID}
    ).ok()
    assert relayed["txHash"] == built["txID"]


def test_a_bad_signature_is_a_json_sigerror_not_a_dropped_connection(env: Env) -> None:
    owner, owner_t, _session = env.merchant()
    built = _built(env, owner_t)
    tx_hash = bytes.fromhex(built["txID"])
    mallory = key("mallory")
    by_mallory = mallory.sign_msg_hash(tx_hash).to_bytes()
    good = owner.sign_msg_hash(tx_hash).to_bytes()
    cases = {
        by_mallory: (
            f"{by_mallory.hex()} is signed by {address_of(mallory)} but it is not contained "
            "of permission."
        ),
        good[:64] + b"\x99": "Header byte out of range: 153",
        b"\xff" * 32 + good[32:]: "Could not recover public key from signature",  # r >= p
    }
    for signature, reason in cases.items():
        answer = ask(env, "broadcasthex", {"transaction": _signed_hex(built, signature)})
        assert answer["result"] is False
        assert answer["code"] == "SIGERROR"
        assert answer["message"] == f"Validate signature error: {reason}"
        assert answer["txid"] == built["txID"]
    short = rawtx.signed_transaction(bytes.fromhex(built["raw_data_hex"]), [])
    short += bytes([0x12, 64]) + good[:64]  # field 2, 64 bytes: one byte short
    answer = ask(env, "broadcasthex", {"transaction": short.hex()})
    assert answer["message"] == "Validate signature error: Signature size is 64"
    refused = env.api.post(
        "/deployWallet",
        {"rawTx": {**built, "signature": [by_mallory.hex()]}, "chainId": CHAIN_ID},
    )
    assert refused.error(400).startswith(
        "invalid request: rawTx: the node refused it: Validate signature error: "
    )
    assert not env.chain.pending


def test_a_vm_exception_other_than_revert_is_other_error(env: Env) -> None:
    _owner, owner_t, _session = env.merchant()
    env.chain.send_trx(address_of(PAYER), owner_t, 100 * TRX)
    env.chain.mine()
    env.chain.vm_failures["deployWallet(address)"] = (
        "OutOfEnergyException",
        "Not enough energy for 'SSTORE' operation executing: curInvokeEnergyLimit[100], "
        "curOpEnergy[20000], usedEnergy[0]",
    )
    body = constant(FACTORY, "deployWallet(address)", True)
    answer = ask(env, "triggerconstantcontract", body)
    assert answer == {
        "result": {
            "code": "OTHER_ERROR",
            "message": "class org.tron.core.vm.program.Program$OutOfEnergyException : "
            + env.chain.vm_failures["deployWallet(address)"][1],
        }
    }
    refused = env.api.post("/initWallet", {"ownerAddress": owner_t, "chainId": CHAIN_ID})
    assert refused.error(400) == (
        "invalid request: ownerAddress: deployWallet would fail: OutOfEnergyException: "
        "Not enough energy for 'SSTORE' operation executing: curInvokeEnergyLimit[100], "
        "curOpEnergy[20000], usedEnergy[0]"
    )
