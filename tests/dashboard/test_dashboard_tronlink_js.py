"""The dashboard's "Sign in with TronLink": the register-pubkey body the shipped session.js
builds, signed by a TronLink stand-in whose signer is TronWeb (the SDK TronLink injects),
fed to the verifier POST /auth/register-pubkey runs. Nothing of paycore's signs here: if
the page asked TronLink for the wrong text or the wrong kind of signature (v1, or EIP-191),
or named an owner other than TronLink's account, the server would refuse it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from coincurve import PrivateKey
from node_oracles import run_oracle

from paycore.auth.signatures import public_key_text, public_key_to_address
from paycore.auth.wallet import verify_wallet_signature
from paycore.domain.tokens import tron_from_hex
from paycore.errors import AuthError

pytestmark = pytest.mark.node
ROOT = Path(__file__).resolve().parents[2]


def node(tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return run_oracle("dashboard_tron.mjs", "tronweb", tasks)


def tron_owner(key: PrivateKey) -> str:
    return tron_from_hex(public_key_to_address(key.public_key.format(compressed=False)))


def session_key() -> str:
    return public_key_text(PrivateKey().public_key.format(compressed=False))


def test_the_body_tronlink_signs_is_what_the_server_verifies_for_a_tron_owner() -> None:
    owners = [PrivateKey() for _ in range(4)]
    keys = [session_key() for _ in owners]
    tasks = [
        {"op": "sign", "privateKey": o.secret.hex(), "publicKey": k, "legacy": i % 2 == 1}
        for i, (o, k) in enumerate(zip(owners, keys, strict=True))
    ]
    answers = node(tasks)
    for owner, key, task, answer in zip(owners, keys, tasks, answers, strict=True):
        body = answer["body"]
        assert set(body) == {"ownerAddress", "publicKey", "signature"}
        assert body["ownerAddress"] == tron_owner(owner)
        assert body["publicKey"] == key
        # the newer TronLink is asked for the account first; the older one has no request
        assert answer["requests"] == (
            [] if task["legacy"] else [{"method": "tron_requestAccounts"}]
        )
        got = verify_wallet_signature(body["publicKey"], body["signature"], body["ownerAddress"])
        assert got == tron_owner(owner)


def test_the_signature_covers_the_key_and_the_owner() -> None:
    owner, other = PrivateKey(), PrivateKey()
    key = session_key()
    (answer,) = node([{"op": "sign", "privateKey": owner.secret.hex(), "publicKey": key}])
    body = answer["body"]
    with pytest.raises(AuthError):  # another session key under the same signature
        verify_wallet_signature(session_key(), body["signature"], body["ownerAddress"])
    with pytest.raises(AuthError):  # the same signature claimed for another owner
        verify_wallet_signature(key, body["signature"], tron_owner(other))


def test_a_refusal_in_tronlink_and_a_page_without_tronlink() -> None:
    key = session_key()
    refused, none = node(
        [
            {
                "op": "sign",
                "privateKey": PrivateKey().secret.hex(),
                "publicKey": key,
                "answer": 4001,
            },
            {"op": "none"},
        ]
    )
    assert refused["code"] == 4001 and "body" not in refused
    assert none == {"found": False, "foundEthereumOnly": False}
