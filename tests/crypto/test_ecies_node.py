"""paycore.crypto.ecies against eth-crypto itself, run in Node: the library the interface promises.

Both directions: what Python encrypts, eth-crypto's ``decryptWithPrivateKey`` opens; what
eth-crypto's ``encryptWithPublicKey`` produces, Python opens. Skipped without Node and
``node_modules/eth-crypto`` unless ``PAYCORE_REQUIRE_NODE=1`` (CI), where that fails.
"""

from __future__ import annotations

import json

import pytest
from ecies_helpers import (
    RECIPIENT,
    eth_crypto_decrypt,
    eth_crypto_encrypt,
    key,
    run_node,
    stored_public_key,
)

from paycore.crypto import ecies

pytestmark = pytest.mark.node

PUBLIC = stored_public_key(RECIPIENT)

PLAINTEXTS = {
    "empty": b"",
    "ascii": b"hello",
    "one-block": b"0123456789abcdef",
    "non-ascii-json": json.dumps(
        {"description": "Grüße, 東京 ☕ 😀 \u202e", "value": "10", "data": {"ключ": "значение"}},
        ensure_ascii=False,
        separators=(",", ":"),
    ).encode(),
    "large": ('{"pad":"' + "é" * 20_000 + '"}').encode(),
}


@pytest.mark.parametrize("plaintext", PLAINTEXTS.values(), ids=PLAINTEXTS.keys())
def test_eth_crypto_decrypts_python_output(plaintext: bytes) -> None:
    encrypted = ecies.encrypt(PUBLIC, plaintext)
    assert eth_crypto_decrypt(RECIPIENT, encrypted) == plaintext


def test_eth_crypto_decrypts_python_compact_form() -> None:
    """Our ``stringify`` lays bytes out as eth-crypto's ``cipher.parse`` reads them."""
    plaintext = PLAINTEXTS["non-ascii-json"]
    compact = ecies.stringify(ecies.encrypt(PUBLIC, plaintext))
    assert eth_crypto_decrypt(RECIPIENT, compact) == plaintext


def test_eth_crypto_takes_the_private_key_without_0x() -> None:
    encrypted = ecies.encrypt(PUBLIC, b"bare key")
    assert eth_crypto_decrypt(RECIPIENT.secret.hex(), encrypted) == b"bare key"


def test_eth_crypto_decrypts_for_many_keys() -> None:
    """Different recipients and fresh ephemeral keys: no case of the derivation left out."""
    for index in range(8):
        recipient = key(f"node-recipient-{index}")
        plaintext = f'{{"n":{index},"s":"ü"}}'.encode()
        encrypted = ecies.encrypt(stored_public_key(recipient), plaintext)
        assert eth_crypto_decrypt(recipient, encrypted) == plaintext


@pytest.mark.parametrize("field", ["mac", "ciphertext", "iv"])
def test_eth_crypto_refuses_what_python_refuses(field: str) -> None:
    """A tampered message fails in both: the MAC covers the same bytes on both sides."""
    encrypted = ecies.encrypt(PUBLIC, b'{"value":"10"}')
    raw = bytearray(bytes.fromhex(encrypted[field]))
    raw[-1] ^= 0x01
    tampered = {**encrypted, field: raw.hex()}
    with pytest.raises(ecies.EciesError):
        ecies.decrypt(RECIPIENT, tampered)
    done = run_node({"privateKey": "0x" + RECIPIENT.secret.hex(), "encrypted": tampered})
    assert done.returncode != 0
    assert b"Bad MAC" in done.stderr
    assert done.stdout == b""


@pytest.mark.parametrize(
    "message", ["", "hello", '{"description":"Grüße, 東京 ☕ 😀","value":"10"}', "x" * 5000]
)
def test_python_decrypts_eth_crypto_output(message: str) -> None:
    # eth-crypto's own spelling of a public key: 128 hex, no 04, no 0x.
    bare = RECIPIENT.public_key.format(compressed=False)[1:].hex()
    produced = eth_crypto_encrypt(bare, message)
    assert ecies.decrypt(RECIPIENT, produced["encrypted"]).decode() == message
    assert ecies.decrypt(RECIPIENT, produced["compact"]).decode() == message
    assert ecies.stringify(produced["encrypted"]) == produced["compact"]
    assert ecies.parse(produced["compact"]) == produced["encrypted"]


def test_eth_crypto_output_with_the_stored_key_spelling() -> None:
    """The ``04``-prefixed form (as stored, minus ``0x``) is also accepted by eth-crypto."""
    produced = eth_crypto_encrypt(PUBLIC[2:], "stored spelling")
    assert ecies.decrypt(RECIPIENT, produced["encrypted"]) == b"stored spelling"
