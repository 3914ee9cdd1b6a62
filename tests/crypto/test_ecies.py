"""paycore.crypto.ecies in Python alone: round trips, the wire format, eth-crypto's frozen vectors,
and refusal of anything tampered with or malformed."""

from __future__ import annotations

import hashlib
import hmac
import re

import pytest
from coincurve import PrivateKey, PublicKey
from Crypto.Cipher import AES
from ecies_helpers import RECIPIENT, VECTOR_IV, VECTORS, key, stored_public_key
from hypothesis import given, settings
from hypothesis import strategies as st

from paycore.crypto import ecies
from paycore.crypto.ecies import EciesError

PUBLIC = stored_public_key(RECIPIENT)


def _flip(hex_text: str, index: int) -> str:
    """``hex_text`` with one bit of byte ``index`` flipped (negative counts from the end)."""
    raw = bytearray(bytes.fromhex(hex_text))
    raw[index] ^= 0x01
    return raw.hex()


# -- round trips ---------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=300))
def test_round_trip_any_bytes(plaintext: bytes) -> None:
    assert ecies.decrypt(RECIPIENT.secret, ecies.encrypt(PUBLIC, plaintext)) == plaintext


@pytest.mark.parametrize("size", [0, 1, 15, 16, 17, 31, 32, 64 * 1024])
def test_round_trip_block_boundaries(size: int) -> None:
    plaintext = bytes(range(256)) * (size // 256) + bytes(range(size % 256))
    encrypted = ecies.encrypt(PUBLIC, plaintext)
    # PKCS#7 always pads: a whole extra block when the length is already a multiple of 16.
    assert len(encrypted["ciphertext"]) == 2 * (size // 16 + 1) * 16
    assert ecies.decrypt(RECIPIENT, encrypted) == plaintext


def test_non_ascii_json_round_trip() -> None:
    body = '{"description":"Grüße, 東京 ☕ 😀","value":"10"}'.encode()
    assert ecies.decrypt(RECIPIENT, ecies.encrypt(PUBLIC, body)).decode() == body.decode()


@pytest.mark.parametrize(
    "spelling",
    [
        pytest.param(lambda k: "0x" + k.public_key.format(False).hex(), id="0x04-hex"),
        pytest.param(lambda k: k.public_key.format(False).hex(), id="04-hex"),
        pytest.param(lambda k: k.public_key.format(False).hex()[2:], id="bare-64-hex"),
        pytest.param(lambda k: "0x" + k.public_key.format(True).hex(), id="compressed-hex"),
        pytest.param(lambda k: k.public_key.format(False).hex().upper(), id="uppercase-hex"),
        pytest.param(lambda k: k.public_key.format(False), id="bytes"),
        pytest.param(lambda k: k.public_key, id="PublicKey"),
    ],
)
def test_public_key_spellings(spelling: object) -> None:
    assert callable(spelling)
    encrypted = ecies.encrypt(spelling(RECIPIENT), b"hello")
    assert ecies.decrypt(RECIPIENT, encrypted) == b"hello"


@pytest.mark.parametrize(
    "private",
    [
        pytest.param(RECIPIENT.secret.hex(), id="hex"),
        pytest.param("0x" + RECIPIENT.secret.hex(), id="0x-hex"),
        pytest.param(RECIPIENT.secret, id="bytes"),
        pytest.param(RECIPIENT, id="PrivateKey"),
    ],
)
def test_private_key_spellings(private: object) -> None:
    encrypted = ecies.encrypt(PUBLIC, b"hello")
    assert ecies.decrypt(private, encrypted) == b"hello"  # type: ignore[arg-type]


# -- the wire format -----------------------------------------------------------------------


def test_wire_format_is_eth_cryptos_object() -> None:
    encrypted = ecies.encrypt(PUBLIC, b'{"a":1}')
    assert list(encrypted) == ["iv", "ephemPublicKey", "ciphertext", "mac"]
    # Lowercase hex, no 0x: eth-crypto reads each field with Buffer.from(field, "hex").
    assert re.fullmatch(r"[0-9a-f]{32}", encrypted["iv"])
    assert re.fullmatch(r"04[0-9a-f]{128}", encrypted["ephemPublicKey"])
    assert re.fullmatch(r"(?:[0-9a-f]{32})+", encrypted["ciphertext"])
    assert re.fullmatch(r"[0-9a-f]{64}", encrypted["mac"])


def test_fresh_ephemeral_key_and_iv_every_time() -> None:
    first = ecies.encrypt(PUBLIC, b"same")
    second = ecies.encrypt(PUBLIC, b"same")
    assert first["ephemPublicKey"] != second["ephemPublicKey"]
    assert first["iv"] != second["iv"]
    assert first["ciphertext"] != second["ciphertext"]


def test_construction_spelled_out() -> None:
    """Rebuild the MAC and keys from the recipe in docs/interface.md with hashlib/hmac directly."""
    encrypted = ecies.encrypt(PUBLIC, b"recipe")
    ephem = bytes.fromhex(encrypted["ephemPublicKey"])
    shared_x = PublicKey(ephem).multiply(RECIPIENT.secret).format(compressed=True)[1:]
    digest = hashlib.sha512(shared_x).digest()
    iv, ciphertext = bytes.fromhex(encrypted["iv"]), bytes.fromhex(encrypted["ciphertext"])
    mac = hmac.new(digest[32:], iv + ephem + ciphertext, hashlib.sha256).hexdigest()
    assert mac == encrypted["mac"]
    padded = AES.new(digest[:32], AES.MODE_CBC, iv).decrypt(ciphertext)
    assert padded == b"recipe" + bytes([10]) * 10


@pytest.mark.parametrize(("label", "plaintext", "expected"), VECTORS, ids=["utf8", "zero-x"])
def test_eth_crypto_vectors_encrypt(label: str, plaintext: bytes, expected: dict[str, str]) -> None:
    """Given eth-crypto's ephemeral key and iv, we produce its bytes exactly."""
    produced = ecies.encrypt_with(RECIPIENT.public_key, plaintext, key(label), VECTOR_IV)
    assert produced == expected


@pytest.mark.parametrize(("label", "plaintext", "expected"), VECTORS, ids=["utf8", "zero-x"])
def test_eth_crypto_vectors_decrypt(label: str, plaintext: bytes, expected: dict[str, str]) -> None:
    assert ecies.decrypt(RECIPIENT, expected) == plaintext
    assert ecies.decrypt(RECIPIENT, ecies.stringify(expected)) == plaintext


def test_stringify_parse_round_trip() -> None:
    encrypted = ecies.encrypt(PUBLIC, b"compact")
    compact = ecies.stringify(encrypted)
    # iv (16) + compressed ephemeral key (33) + mac (32) + ciphertext, as eth-crypto lays it out
    assert len(compact) == 2 * (16 + 33 + 32 + 16)
    assert compact[32:34] in ("02", "03")
    assert ecies.parse(compact) == encrypted


# -- refusals ------------------------------------------------------------------------------


@pytest.mark.parametrize("field", ["iv", "ephemPublicKey", "ciphertext", "mac"])
@pytest.mark.parametrize("index", [0, -1])
def test_tampering_is_refused(field: str, index: int) -> None:
    encrypted = ecies.encrypt(PUBLIC, b'{"value":"10"}')
    if field == "ephemPublicKey" and index == 0:
        index = 1  # byte 0 is the 04 prefix; flip the key itself
    tampered = {**encrypted, field: _flip(encrypted[field], index)}
    with pytest.raises(EciesError):
        ecies.decrypt(RECIPIENT, tampered)


def test_every_ciphertext_byte_is_covered_by_the_mac() -> None:
    encrypted = ecies.encrypt(PUBLIC, b"x" * 40)
    for index in range(len(encrypted["ciphertext"]) // 2):
        tampered = {**encrypted, "ciphertext": _flip(encrypted["ciphertext"], index)}
        with pytest.raises(EciesError, match="bad MAC"):
            ecies.decrypt(RECIPIENT, tampered)


def test_swapped_ephemeral_key_is_refused() -> None:
    encrypted = ecies.encrypt(PUBLIC, b"x")
    other = ecies.encrypt(PUBLIC, b"x")
    with pytest.raises(EciesError, match="bad MAC"):
        ecies.decrypt(RECIPIENT, {**encrypted, "ephemPublicKey": other["ephemPublicKey"]})


def test_wrong_private_key_is_refused() -> None:
    encrypted = ecies.encrypt(PUBLIC, b"secret")
    with pytest.raises(EciesError, match="bad MAC"):
        ecies.decrypt(key("someone else"), encrypted)


def test_truncated_ciphertext_is_refused() -> None:
    encrypted = ecies.encrypt(PUBLIC, b"x" * 40)
    for cut in (encrypted["ciphertext"][:-32], encrypted["ciphertext"][:-2], ""):
        with pytest.raises(EciesError):
            ecies.decrypt(RECIPIENT, {**encrypted, "ciphertext": cut})


def test_bad_padding_behind_a_valid_mac_is_refused() -> None:
    """A sender with the right keys but broken padding: refused, not returned half-decoded."""
    ephemeral = PrivateKey()
    shared_x = RECIPIENT.public_key.multiply(ephemeral.secret).format(compressed=True)[1:]
    digest = hashlib.sha512(shared_x).digest()
    enc_key, mac_key = digest[:32], digest[32:]
    iv = bytes(16)
    ciphertext = AES.new(enc_key, AES.MODE_CBC, iv).encrypt(b"no padding here!")
    ephem = ephemeral.public_key.format(compressed=False)
    message = {
        "iv": iv.hex(),
        "ephemPublicKey": ephem.hex(),
        "ciphertext": ciphertext.hex(),
        "mac": hmac.new(mac_key, iv + ephem + ciphertext, hashlib.sha256).hexdigest(),
    }
    with pytest.raises(EciesError, match="bad padding"):
        ecies.decrypt(RECIPIENT, message)


def test_mac_is_compared_in_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)  # the module ecies uses
    ecies.decrypt(RECIPIENT, ecies.encrypt(PUBLIC, b"x"))
    assert len(calls) == 1


@pytest.mark.parametrize(
    "change",
    [
        {"iv": "00" * 15},
        {"mac": "00" * 31},
        {"ephemPublicKey": "02" + "11" * 32},  # compressed: not what the MAC covers
        {"ephemPublicKey": "04" + "00" * 64},  # not on the curve
        {"iv": "zz" * 16},
        {"ciphertext": "0a 0b"},
        {"mac": None},
        {"iv": 5},
    ],
    ids=str,
)
def test_malformed_fields_are_refused(change: dict[str, object]) -> None:
    encrypted: dict[str, object] = {**ecies.encrypt(PUBLIC, b"x"), **change}
    with pytest.raises(EciesError):
        ecies.decrypt(RECIPIENT, encrypted)  # type: ignore[arg-type]


def test_missing_field_is_refused() -> None:
    encrypted = ecies.encrypt(PUBLIC, b"x")
    del encrypted["mac"]
    with pytest.raises(EciesError, match="mac"):
        ecies.decrypt(RECIPIENT, encrypted)


@pytest.mark.parametrize("compact", ["", "00" * 80, "not hex"])
def test_malformed_compact_form_is_refused(compact: str) -> None:
    with pytest.raises(EciesError):
        ecies.decrypt(RECIPIENT, compact)


@pytest.mark.parametrize(
    "public_key", ["0x04" + "00" * 64, "0x04" + "ab" * 10, "nothex", b"\x04" + b"\x01" * 64]
)
def test_unusable_public_key_is_refused(public_key: str | bytes) -> None:
    with pytest.raises(EciesError):
        ecies.encrypt(public_key, b"x")


@pytest.mark.parametrize("private", ["00" * 32, "ff" * 32, "ab" * 31, "0xzz"])
def test_unusable_private_key_is_refused(private: str) -> None:
    with pytest.raises(EciesError):
        ecies.decrypt(private, ecies.encrypt(PUBLIC, b"x"))
