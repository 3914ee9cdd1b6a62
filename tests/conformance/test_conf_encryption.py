"""Encrypted owner-scoped answers for keys registered with an encryptionPublicKey.

The format is docs/interface.md §Encrypted responses.
"""

from __future__ import annotations

import json

from conf_ecies import decrypt
from conf_env import Env, invoice_body
from conf_keys import SessionKey, account, public_key_of, session, sign_text
from eth_account.signers.local import LocalAccount

ECIES_FIELDS = {"iv", "ephemPublicKey", "ciphertext", "mac"}


def _register_encrypted(env: Env) -> tuple[LocalAccount, SessionKey, LocalAccount]:
    owner = account("owner:enc")
    key = session("enc:k")
    reader = account("enc:reader")
    answer = env.api.post(
        "/auth/register-pubkey",
        {
            "ownerAddress": owner.address,
            "publicKey": key.public_key,
            "signature": sign_text(owner, key.public_key),
            "encryptionPublicKey": public_key_of(reader),
        },
    ).ok()
    assert answer["registered"] is True  # the registration answer itself is plain
    return owner, key, reader


def test_owner_scoped_answers_are_encrypted_for_the_registered_key(env: Env) -> None:
    owner, key, reader = _register_encrypted(env)
    answer = env.api.post("/invoice", invoice_body(), session=key)
    assert answer.status == 201
    assert answer.headers.get("x-encryption") == "ecies-secp256k1"
    sealed = answer.json()
    assert set(sealed) == ECIES_FIELDS
    invoice = json.loads(decrypt(reader, sealed))
    assert invoice["owner"] == owner.address and invoice["status"] == "init"

    listed = env.api.get("/invoices", f"owner={owner.address}", session=key)
    assert listed.headers.get("x-encryption") == "ecies-secp256k1"
    assert json.loads(decrypt(reader, listed.json())) == [invoice]


def test_x_encryption_none_opts_out(env: Env) -> None:
    owner, key, _ = _register_encrypted(env)
    plain = env.api.get(
        "/invoices",
        f"owner={owner.address}",
        session=key,
        headers={"x-encryption": "none"},
    )
    assert plain.ok() == []
    assert plain.headers.get("x-encryption") != "ecies-secp256k1"


def test_errors_and_sessionless_answers_stay_plain(env: Env) -> None:
    owner, key, _ = _register_encrypted(env)
    other = account("owner:someone-else")
    env.api.get("/invoices", f"owner={other.address}", session=key).error(403, prefix="forbidden: ")
    assert "x-encryption" not in env.api.get("/prices").headers


def test_keys_without_encryption_key_get_plain_answers(env: Env) -> None:
    owner, [key] = env.merchant("m", "k")
    answer = env.api.get("/invoices", f"owner={owner.address}", session=key)
    assert answer.ok() == []
    assert "x-encryption" not in answer.headers
