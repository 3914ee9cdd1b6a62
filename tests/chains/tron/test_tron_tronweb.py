"""paycore's Tron building blocks checked by an independent implementation: TronWeb v6.

``tests/node/tronweb_oracle.mjs`` computes with TronWeb's own code what paycore computes with
its own -- base58 addresses, TVM CREATE2 deposit addresses, ABI call data, transaction
protobufs and ids, signed transactions for ``broadcasthex``, TIP-191 message hashes and
signatures -- and the two must agree byte for byte. Transactions come from the TronGrid
stand-in through paycore's /initWallet and /initWithdraw, exactly as a merchant receives
them. Skipped when Node or the npm packages are missing, unless ``PAYCORE_REQUIRE_NODE=1``
(CI), where that is a failure.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterator
from typing import Any

import pytest
from fake_trongrid import b58, h20
from node_oracles import run_oracle
from tron_env import (
    CHAIN_ID,
    FACTORY,
    PAYER,
    TRX,
    USD,
    USDT,
    Env,
    address_of,
    key,
    open_env,
    tronlink_sign,
)

from paycore import NATIVE
from paycore.auth.tron import recover_tron_address, tron_message_hash
from paycore.chains.evm import abi
from paycore.chains.tron import address, rawtx, txbuild
from paycore.contracts import bytecode
from paycore.domain.tokens import normalize_tron, tron_from_hex, tron_to_hex
from paycore.errors import InvalidInput

pytestmark = [pytest.mark.node, pytest.mark.slow]


def tronweb(tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return run_oracle("tronweb_oracle.mjs", "tronweb", tasks)


def secret(label: str) -> str:
    return hashlib.sha256(f"tronweb:{label}".encode()).hexdigest()


@pytest.fixture
def env() -> Iterator[Env]:
    with open_env("core") as opened:
        yield opened


def test_addresses_both_ways_and_what_is_valid() -> None:
    rng = random.Random(16)
    hexes = ["41a614f803b6fd780986a42c78ec9c7f77e6ded13c", "41" + "00" * 20, "41" + "ff" * 20]
    hexes += ["41" + rng.randbytes(20).hex() for _ in range(40)]
    answers = tronweb([{"op": "address", "hex41": h} for h in hexes])
    for hex41, answer in zip(hexes, answers, strict=True):
        assert answer["valid"]
        assert answer["base58"] == tron_from_hex("0x" + hex41[2:]) == tron_from_hex(hex41)
        assert tron_to_hex(answer["base58"]) == hex41 == answer["hex41"]
    assert answers[0]["base58"] == "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"  # mainnet USDT
    # A checksum broken in each position: TronWeb and paycore refuse the same ones.
    good = answers[0]["base58"]
    alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
    broken = [
        good[:i] + next(c for c in alphabet if c != good[i]) + good[i + 1 :]
        for i in range(len(good))
    ]
    verdicts = tronweb([{"op": "valid", "address": b} for b in broken])
    for text, verdict in zip(broken, verdicts, strict=True):
        try:
            normalize_tron(text)
            accepted = True
        except InvalidInput:
            accepted = False
        assert accepted == verdict["valid"], text


def test_deposit_and_wallet_addresses_are_tvm_create2_as_tronweb_computes_them() -> None:
    owners = [address_of(key(f"owner-{i}")) for i in range(3)]
    evm_owner = "0x" + hashlib.sha256(b"evm owner").hexdigest()[:40]
    indexes = [0, 1, 2, 255, 256, 1000, 2**32]
    tasks = [
        {
            "op": "depositAddresses",
            "factory": FACTORY,
            "owner": owner if owner.startswith("T") else tron_from_hex(owner),
            "walletCode": bytecode("PaycoreWallet").hex(),
            "forwarderCode": bytecode("PaycoreForwarder").hex(),
            "indexes": indexes,
        }
        for owner in [*owners, evm_owner]
    ]
    for owner, answer in zip([*owners, evm_owner], tronweb(tasks), strict=True):
        wallet = address.wallet_address(FACTORY, owner)
        assert wallet == answer["wallet"]
        assert [address.deposit_address(wallet, i) for i in indexes] == answer["deposits"]


def test_call_data_matches_tronwebs_abi_encoding() -> None:
    owner = address_of(key("calldata-owner"))
    to = address_of(key("calldata-to"))
    wallet = address.wallet_address(FACTORY, owner)
    deploy = txbuild.deploy_wallet_call(FACTORY, owner, 10**9)
    withdraw_token = txbuild.withdraw_call(
        wallet=wallet,
        owner=owner,
        token=USDT,
        to=to,
        amount=7_500_000,
        indexes=[3, 0, 3, 1],
        fee=2 * TRX,
        fee_limit=10**9,
    )
    withdraw_trx = txbuild.withdraw_call(
        wallet=wallet,
        owner=owner,
        token=NATIVE,
        to=to,
        amount=1,
        indexes=[],
        fee=0,
        fee_limit=10**9,
    )
    transfer = abi.encode_call(
        "transfer(address,uint256)", ["address", "uint256"], [address.to_evm(to), 10**30]
    )
    zero = tron_from_hex(NATIVE)
    tasks = [
        {
            "op": "calldata",
            "signature": "deployWallet(address)",
            "types": ["address"],
            "values": [owner],
        },
        {
            "op": "calldata",
            "signature": "withdraw(address,address,uint256,uint256[])",
            "types": ["address", "address", "uint256", "uint256[]"],
            "values": [USDT, to, "7500000", ["0", "1", "3"]],
        },
        {
            "op": "calldata",
            "signature": "withdraw(address,address,uint256,uint256[])",
            "types": ["address", "address", "uint256", "uint256[]"],
            "values": [zero, to, "1", []],
        },
        {
            "op": "calldata",
            "signature": "transfer(address,uint256)",
            "types": ["address", "uint256"],
            "values": [to, str(10**30)],
        },
    ]
    ours = [deploy.data, withdraw_token.data, withdraw_trx.data, transfer]
    for mine, theirs in zip(ours, tronweb(tasks), strict=True):
        assert mine.hex() == theirs["data"]


def _funded(env: Env, label: str) -> tuple[Any, str]:
    owner = key(label)
    owner_t = address_of(owner)
    env.chain.send_trx(address_of(PAYER), owner_t, 100 * TRX)
    env.chain.mine()
    return owner, owner_t


def _transaction_task(tx: dict[str, Any], private_key: str) -> dict[str, Any]:
    return {"op": "transaction", "transaction": tx, "privateKey": private_key}


def test_built_transactions_agree_with_tronwebs_protobuf_and_its_signature_relays(
    env: Env,
) -> None:
    owner, owner_t = _funded(env, "tronweb-deployer")
    built = env.api.post("/initWallet", {"ownerAddress": owner_t, "chainId": CHAIN_ID}).ok()
    tx = built["transaction"]
    [answer] = tronweb([_transaction_task(tx, owner.hex())])
    # TronWeb rebuilds the same bytes from the JSON, and the same id.
    assert answer["check"] is True
    assert answer["rawDataHex"] == tx["raw_data_hex"]
    assert answer["txID"] == tx["txID"] == built["txID"] == answer["sha256"]
    # What paycore read from the bytes is what TronWeb reads from them.
    tx_id, call = rawtx.read_transaction(tx, "rawTx")
    decoded = answer["decoded"]
    value = decoded["contract"][0]["parameter"]["value"]
    assert tx_id == tx["txID"]
    assert "41" + call.owner[2:] == value["owner_address"].lower() == "41" + h20(owner_t)
    assert "41" + call.to[2:] == value["contract_address"].lower() == "41" + h20(FACTORY)
    assert call.data.hex() == value["data"].lower()
    assert call.fee_limit == decoded["fee_limit"] == built["feeLimit"]
    assert call.expiration == decoded["expiration"]
    # TronWeb's signature, put into the protobuf by paycore, gives TronWeb's bytes.
    signed = rawtx.signed_transaction(bytes.fromhex(tx["raw_data_hex"]), answer["signature"])
    assert signed.hex() == answer["signedHex"]
    # And paycore relays the TronWeb-signed transaction; the node verifies its signature.
    relayed = env.api.post(
        "/deployWallet",
        {"rawTx": {**tx, "signature": answer["signature"]}, "chainId": CHAIN_ID},
    ).ok()
    assert relayed["txHash"] == tx["txID"]
    broadcast = [r for r in env.chain.requests if r[0] == "/wallet/broadcasthex"]
    assert broadcast[-1][2] == {"transaction": answer["signedHex"]}
    env.chain.mine()
    assert h20(relayed["walletAddress"]) in env.chain.wallets()


def test_a_withdrawal_built_for_tronweb(env: Env) -> None:
    owner, owner_t = _funded(env, "tronweb-withdrawer")
    env.chain.deploy_wallet(owner_t)
    env.chain.mine()
    _k, _t, session = env.merchant("tronweb-withdrawer")
    body = {
        "value": "10",
        "chainId": CHAIN_ID,
        "description": "o",
        "acceptedTokens": [f"{CHAIN_ID}:{USDT}"],
    }
    invoice = env.api.post("/invoice", body, session=session).ok(201)
    env.pay_usdt(invoice["address"], 10 * USD)
    env.chain.mine(3)
    recipient = address_of(key("tronweb-recipient"))
    request = {
        "to": recipient,
        "ownerAddress": owner_t,
        "tokenAddress": USDT,
        "chainId": CHAIN_ID,
        "amount": "7.5",
    }
    built = env.api.post("/initWithdraw", request, session=session).ok()
    tx = built["transaction"]
    [answer, calldata] = tronweb(
        [
            _transaction_task(tx, owner.hex()),
            {
                "op": "calldata",
                "signature": "withdraw(address,address,uint256,uint256[])",
                "types": ["address", "address", "uint256", "uint256[]"],
                "values": [USDT, recipient, "7500000", ["0"]],
            },
        ]
    )
    assert answer["check"] is True and answer["txID"] == tx["txID"]
    value = answer["decoded"]["contract"][0]["parameter"]["value"]
    assert value["data"].lower() == calldata["data"] == built["data"].removeprefix("0x")
    assert built["to"] == address.wallet_address(FACTORY, owner_t)
    assert value["contract_address"].lower() == "41" + h20(built["to"])


MESSAGES = [
    "hello",
    "",
    "naïve café 💸 — 支付",
    "x" * 1000,
    "0x04" + "ab" * 64,  # a session public key, the /auth/register-pubkey text
    "get-webhook:tr7nhqjekqxgtci8q8zy4pl8otszgjlj6t",
    "line one\nline two\r\n\ttabbed",
]


def test_tip191_hashes_and_signatures_agree_with_tronweb() -> None:
    tasks = [
        {"op": "signMessage", "message": m, "privateKey": secret(f"signer-{i}")}
        for i, m in enumerate(MESSAGES)
    ]
    keys = tronweb([{"op": "keyAddress", "privateKey": t["privateKey"]} for t in tasks])
    for task, answer, signer in zip(tasks, tronweb(tasks), keys, strict=True):
        message = task["message"]
        assert tron_message_hash(message).hex() == answer["hash"]
        assert answer["signer"] == signer["address"]
        assert recover_tron_address(message, answer["signature"]) == signer["address"]
    # The other way: a TronLink-style signature (tronpy's signer) TronWeb recovers alike.
    owner = key("tronweb-verify")
    signature = tronlink_sign(owner, MESSAGES[2])
    [verified] = tronweb([{"op": "verifyMessage", "message": MESSAGES[2], "signature": signature}])
    assert verified["signer"] == address_of(owner) == recover_tron_address(MESSAGES[2], signature)


def test_a_tronweb_signed_registration_is_accepted(env: Env) -> None:
    from conf_keys import SessionKey, public_key_of
    from eth_account import Account

    private_key = secret("registrant")
    session = SessionKey(Account.create())
    public_key = public_key_of(session.key)
    [signed] = tronweb([{"op": "signMessage", "message": public_key, "privateKey": private_key}])
    body = {
        "ownerAddress": signed["signer"],
        "publicKey": public_key,
        "signature": signed["signature"],
    }
    registered = env.api.post("/auth/register-pubkey", body).ok()
    assert registered["ownerAddress"] == signed["signer"]
    assert b58(h20(signed["signer"])) == signed["signer"]
