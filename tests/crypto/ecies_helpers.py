"""Shared pieces of the encryption tests: named keys, frozen eth-crypto vectors, the Node runner.

Keys come from labels so a failing case can be reproduced by name. The vectors were produced
once by eth-crypto 4.1.0's ``encryptWithPublicKey`` with its ``ephemPrivateKey`` and ``iv``
options, so the Python side is held to that library's bytes even where Node is not installed.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from coincurve import PrivateKey

ROOT = Path(__file__).resolve().parents[2]
NODE_SCRIPT = ROOT / "tests" / "node" / "eth_crypto_decrypt.mjs"


def key(label: str) -> PrivateKey:
    return PrivateKey(hashlib.sha256(label.encode()).digest())


def stored_public_key(private: PrivateKey) -> str:
    """The form paycore stores an ``encryptionPublicKey`` in: ``0x04`` + 128 lowercase hex."""
    return "0x" + private.public_key.format(compressed=False).hex()


RECIPIENT = key("paycore-ecies-recipient")
#: eth-crypto's iv for both vectors: the first 16 bytes of sha256("paycore-ecies-iv").
VECTOR_IV = hashlib.sha256(b"paycore-ecies-iv").digest()[:16]

#: (ephemeral key label, plaintext, eth-crypto's output). The second ephemeral key makes the
#: ECDH x coordinate start with a zero byte: eccrypto-style code that drops leading zeros
#: (a known pitfall) derives different keys there, eth-crypto keeps all 32 bytes.
VECTORS: list[tuple[str, bytes, dict[str, str]]] = [
    (
        "paycore-ecies-ephemeral",
        '{"description":"café € 😀","value":"10"}'.encode(),
        {
            "iv": "b475a3b1794b8d3d000f0dbc4e610501",
            "ephemPublicKey": "04112bd1db3e3e51133774867ddf9446af197c988bdebdf05ac1c265d93f242a"
            "b097368afab7741e17df8c63b7c7f2077f3c4e21bcbd306148d7486fa6c360ef3f",
            "ciphertext": "6db48bc022a4313bb8f7cc473c948861fa7cfaccf64d8c9947e709580217d331"
            "c132640f276fdc63722d4d01b445a6bb",
            "mac": "131afc4b008b357b96cb2546e0b0d8fc27ff49f78e4ac2b568b08ded43622421",
        },
    ),
    (
        "paycore-ecies-ephemeral-4",
        b"leading zero",
        {
            "iv": "b475a3b1794b8d3d000f0dbc4e610501",
            "ephemPublicKey": "042d7acfd1fc179acb2f15dbb6b64aabf6d8ae8765492578bf2ea3c656d6e34d"
            "3d18bc108a02a70968aa5d069b2c33a3864fceceb865af4c650a5a25519da6aece",
            "ciphertext": "d66087b6fda6a7979b8b77ba4f601a6b",
            "mac": "04a7055a77050ca366a82c30a36ca691e56f3e22cce055e253d90bcebd369c50",
        },
    ),
]


def _node_missing() -> str | None:
    if shutil.which("node") is None:
        return "node is not installed"
    if not (ROOT / "node_modules" / "eth-crypto" / "package.json").is_file():
        return "node_modules/eth-crypto is missing (run npm ci)"
    return None


def require_node() -> None:
    """Skip without Node and eth-crypto, unless ``PAYCORE_REQUIRE_NODE=1`` makes it a failure."""
    missing = _node_missing()
    if missing is None:
        return
    if os.environ.get("PAYCORE_REQUIRE_NODE") == "1":
        pytest.fail(f"PAYCORE_REQUIRE_NODE=1 but {missing}")
    pytest.skip(missing)


def run_node(task: dict[str, Any]) -> subprocess.CompletedProcess[bytes]:
    require_node()
    return subprocess.run(
        ["node", str(NODE_SCRIPT)],
        input=json.dumps(task).encode(),
        capture_output=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )


def eth_crypto_decrypt(private: PrivateKey | str, encrypted: dict[str, str] | str) -> bytes:
    """The plaintext bytes eth-crypto's ``decryptWithPrivateKey`` recovers."""
    private_hex = private if isinstance(private, str) else "0x" + private.secret.hex()
    done = run_node({"privateKey": private_hex, "encrypted": encrypted})
    if done.returncode != 0:
        pytest.fail(f"eth-crypto could not decrypt: {done.stderr.decode()[-2000:]}")
    return done.stdout


def eth_crypto_encrypt(public_key_hex: str, message: str) -> dict[str, Any]:
    """eth-crypto's ``encryptWithPublicKey`` output and its ``cipher.stringify`` form."""
    done = run_node({"op": "encrypt", "publicKey": public_key_hex, "message": message})
    if done.returncode != 0:
        pytest.fail(f"eth-crypto could not encrypt: {done.stderr.decode()[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result
