"""The dashboard's secp256k1 and keccak256, written in JS for the browser, against oracles
that share no code with them: ethers (keys, addresses, EIP-191 signatures, byte for byte)
and Python's keccak (``eth_hash``), over random keys and messages and the padding edges."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from eth_hash.auto import keccak
from node_oracles import run_oracle

pytestmark = pytest.mark.node
ROOT = Path(__file__).resolve().parents[2]
N = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141


def ours(tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return run_oracle("dashboard_crypto.mjs", None, tasks)


def test_keccak256_matches_python_at_every_padding_edge() -> None:
    rng = random.Random(31)
    lengths = [0, 1, 31, 32, 55, 56, 64, 134, 135, 136, 137, 271, 272, 273, 1000]
    blobs = [bytes(rng.randrange(256) for _ in range(n)) for n in lengths]
    got = ours([{"op": "keccak", "hex": b.hex()} for b in blobs])
    assert [g["hash"] for g in got] == [keccak(b).hex() for b in blobs]


def test_keys_addresses_and_signatures_match_ethers_byte_for_byte() -> None:
    rng = random.Random(1)
    keys = [1, 2, N - 1, *(rng.randrange(1, N) for _ in range(12))]
    privates = ["0x" + f"{k:064x}" for k in keys]
    messages = [
        "sess:1764300000123:" + "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "0x04" + "ab" * 64,  # a public key: the registration text, signed as text
        "Grüße, 注文 #1042",
        "",
    ]
    tasks_ours: list[dict[str, Any]] = []
    tasks_ethers: list[dict[str, Any]] = []
    for i, key in enumerate(privates):
        message = messages[i % len(messages)]
        pair = [
            {"op": "key", "privateKey": key},
            {"op": "sign", "privateKey": key, "message": message},
        ]
        tasks_ours += pair
        tasks_ethers += pair
    mine = ours(tasks_ours)
    theirs = run_oracle("ethers_oracle.mjs", "ethers", tasks_ethers)
    for a, b in zip(mine[0::2], theirs[0::2], strict=True):
        assert (a["publicKey"], a["address"]) == (b["publicKey"], b["address"])
    for a, b in zip(mine[1::2], theirs[1::2], strict=True):
        assert a["signature"] == b["signature"]


def test_the_wallet_is_handed_the_text_as_utf8_hex() -> None:
    """A wallet reads a ``0x`` string as bytes: the public key must reach it as its text."""
    text = "0x04" + "cd" * 64
    (got,) = ours([{"op": "param", "message": text}])
    assert bytes.fromhex(got["param"][2:]).decode() == text
