"""Cross-checks against an independent client: ethers v6 and Node's own JSON.stringify.

Everything signed here is built by ``tests/node/ethers_oracle.mjs`` from the rules of
docs/interface.md in JavaScript, then verified by paycore; where both sides build a string,
the two must be equal byte for byte. Skipped when Node or the npm packages are missing, unless
``PAYCORE_REQUIRE_NODE=1`` (CI), where that is a failure.
"""

from __future__ import annotations

import json
import math
import random
import struct
from typing import Any

import pytest
from auth_helpers import NOW, account, public_key_of, sign
from eth_account.signers.local import LocalAccount
from jsjson_cases import CASES
from node_oracles import run_oracle

from paycore.api.wire import read
from paycore.auth import (
    authenticate,
    clear_webhook_message,
    deregister_pubkey_message,
    get_webhook_message,
    poll_register_message,
    recover_address,
    register_pubkey,
    session_message,
    set_webhook_message,
    signed_text,
    verify_salted,
    verify_wallet_signature,
)
from paycore.auth.jsjson import stringify
from paycore.auth.registry import Registration
from paycore.config import Settings
from paycore.storage.memory import MemoryStorage

pytestmark = pytest.mark.node

OWNER = account("node-owner")
SESSION = account("node-session")


def oracle(tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return run_oracle("ethers_oracle.mjs", "ethers", tasks)


def _key(acct: LocalAccount) -> str:
    return "0x" + bytes(acct.key).hex()


def test_stringify_table_is_what_node_writes() -> None:
    results = oracle([{"op": "stringify", "json": text} for text, _ in CASES])
    for (text, expected), result in zip(CASES, results, strict=True):
        assert result["text"] == expected, text
        assert stringify(json.loads(text)) == result["text"], text


def _random_string(rng: random.Random) -> str:
    pools = [
        lambda: chr(rng.randrange(0x20, 0x7F)),
        lambda: chr(rng.randrange(0x00, 0x20)),
        lambda: chr(rng.choice([0x2028, 0x2029, 0x7F, 0xFEFF, 0xE9, 0x4F8B])),
        lambda: chr(rng.randrange(0xD800, 0xE000)),  # lone surrogates
        lambda: chr(rng.randrange(0x1F600, 0x1F650)),
        lambda: rng.choice(['"', "\\", "/"]),
    ]
    return "".join(rng.choice(pools)() for _ in range(rng.randrange(0, 8)))


def _random_number(rng: random.Random) -> float | int:
    kind = rng.randrange(4)
    if kind == 0:
        return rng.randrange(-(2**70), 2**70)
    if kind == 1:
        return rng.uniform(-1, 1) * 10.0 ** rng.randrange(-30, 30)
    if kind == 2:
        return round(rng.uniform(-1000, 1000), rng.randrange(0, 8))
    while True:  # any finite double: a uniformly drawn bit pattern
        (value,) = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))
        if math.isfinite(value):
            return float(value)


def _random_key(rng: random.Random) -> str:
    return rng.choice(
        [
            _random_string(rng),
            str(rng.randrange(0, 20)),
            str(rng.choice([4294967294, 4294967295, 2**40])),
            "0" + str(rng.randrange(1, 9)),
            "-" + str(rng.randrange(1, 9)),
        ]
    )


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(7 if depth < 3 else 5)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind in (1, 2):
        return _random_number(rng)
    if kind in (3, 4):
        return _random_string(rng)
    if kind == 5:
        return [_random_value(rng, depth + 1) for _ in range(rng.randrange(0, 4))]
    return {_random_key(rng): _random_value(rng, depth + 1) for _ in range(rng.randrange(0, 5))}


def test_stringify_of_random_values_is_what_node_writes() -> None:
    rng = random.Random(20240521)
    texts = [json.dumps(_random_value(rng)) for _ in range(400)]
    results = oracle([{"op": "stringify", "json": text} for text in texts])
    for text, result in zip(texts, results, strict=True):
        assert stringify(json.loads(text)) == result["text"], text


def test_ethers_and_eth_account_make_the_same_signatures() -> None:
    messages = ["", "hello", "héllo ✓ 😀", "sess:1:" + "ab" * 32, "a\nb\u2028c", "x" * 300]
    tasks = [{"op": "key", "privateKey": _key(OWNER)}] + [
        {"op": "sign", "privateKey": _key(OWNER), "message": m} for m in messages
    ]
    key, *signed = oracle(tasks)
    assert key["address"] == OWNER.address
    for message, result in zip(messages, signed, strict=True):
        # RFC 6979 makes both deterministic: the same key and text give the same bytes.
        assert result["signature"] == sign(OWNER, message)
        assert recover_address(message, result["signature"]) == OWNER.address


def test_node_client_registers_and_signs_session_requests() -> None:
    storage = MemoryStorage()
    settings = Settings(auth_mode="strict")
    # The client's nonces are Date.now() milliseconds; the server's clock is that moment.
    signed_at = 1_716_300_000
    body = json.dumps({"value": "12.5", "description": "café ☕"}, ensure_ascii=False)
    uri = "/invoices?owner=" + OWNER.address.lower() + "&offset=0&limit=5"
    key_info, registration, post, get = oracle(
        [
            {"op": "key", "privateKey": _key(SESSION)},
            {
                "op": "wallet",
                "kind": "register-pubkey",
                "privateKey": _key(OWNER),
                "publicKey": public_key_of(SESSION),
                "owner": OWNER.address,
            },
            {
                "op": "session",
                "privateKey": _key(SESSION),
                "nonce": 1716300000000,
                "method": "POST",
                "body": body,
                "uri": "/invoice",
            },
            {
                "op": "session",
                "privateKey": _key(SESSION),
                "nonce": 1716300000001,
                "method": "GET",
                "uri": uri,
                "body": "",
            },
        ]
    )
    public_key = key_info["publicKey"]
    assert registration["message"] == public_key
    body_fields = {"ownerAddress": OWNER.address, "publicKey": public_key}
    fields = {**body_fields, "signature": registration["signature"]}
    key = register_pubkey(storage, settings, read(Registration, fields), now=signed_at)
    assert key.address == key_info["address"]

    assert post["message"] == session_message(1716300000000, body.encode())
    caller = authenticate(
        storage,
        settings,
        method="POST",
        uri="/invoice",
        body=body.encode(),
        headers=post["headers"],
        now=signed_at,
    )
    assert caller is not None and caller.owner == OWNER.address

    assert get["message"] == session_message(1716300000001, uri.encode())
    caller = authenticate(
        storage, settings, method="GET", uri=uri, body=b"", headers=get["headers"], now=signed_at
    )
    assert caller is not None and caller.last_seen_nonce == 1716300000001


def test_node_wallet_messages_match_and_verify() -> None:
    owner = OWNER.address  # checksummed: the client lower-cases it itself
    public_key = public_key_of(SESSION)
    url = "https://shop.example/hooks/paycore?x=1&name=zoë"
    expected = {
        "set-webhook": set_webhook_message(owner, url),
        "get-webhook": get_webhook_message(owner),
        "clear-webhook": clear_webhook_message(owner),
        "poll-register": poll_register_message(owner),
        "deregister-pubkey": deregister_pubkey_message(public_key),
    }
    results = oracle(
        [
            {
                "op": "wallet",
                "kind": kind,
                "privateKey": _key(OWNER),
                "owner": owner,
                "url": url,
                "publicKey": public_key,
            }
            for kind in expected
        ]
    )
    for (kind, message), result in zip(expected.items(), results, strict=True):
        assert result["message"] == message, kind
        assert verify_wallet_signature(message, result["signature"], owner) == owner


SALTED_BODIES = [
    {"newCallbackUrl": "https://shop.example/cb", "chainId": 1},
    {"emailAddress": "zoë@例え.jp", "chainId": 137},
    {"appKeyAddress": "0x" + "ab" * 20, "note": 'quote " backslash \\ tab \t line \u2028'},
    {"chainId": 1, "walletIndex": 7, "meta": {"2": "b", "1": "a", "z": [1e21, 0.1, 1.5e-7]}},
    {"amounts": [0.1, 0.2, 0.30000000000000004, 1e-7, 123456789.125, -0.0, 1e300]},
    {"10": "index-like keys", "b": {"c": {"d": {"e": [[], {}, None, True]}}}, "0": False},
]


@pytest.mark.parametrize("fields", SALTED_BODIES)
def test_node_salted_bodies_verify(fields: dict[str, Any]) -> None:
    storage = MemoryStorage()
    (result,) = oracle(
        [
            {
                "op": "salted",
                "privateKey": _key(OWNER),
                "json": json.dumps(fields),
                "salt": NOW,
            }
        ]
    )
    body = json.loads(result["requestBody"])
    assert signed_text(body) == result["message"]
    signer = verify_salted(storage, Settings(), body, now=NOW + 30)
    assert signer == OWNER.address
