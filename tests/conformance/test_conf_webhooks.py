"""POST /webhook/set|get|clear with owner wallet signatures (docs/interface.md §Webhooks)."""

from __future__ import annotations

from typing import Any

import pytest
from conf_env import Env, MakeEnv
from conf_keys import account, sign_text
from eth_account.signers.local import LocalAccount

URL = "https://merchant.example.test/webhooks/paycore"


def _set(owner: LocalAccount, url: str, signer: LocalAccount | None = None) -> dict[str, Any]:
    text = f"set-webhook:{owner.address.lower()}:{url}"
    return {
        "ownerAddress": owner.address,
        "url": url,
        "signature": sign_text(signer or owner, text),
    }


def _owner_op(op: str, owner: LocalAccount, signer: LocalAccount | None = None) -> dict[str, Any]:
    text = f"{op}-webhook:{owner.address.lower()}"
    return {"ownerAddress": owner.address, "signature": sign_text(signer or owner, text)}


def test_set_get_clear_round_trip(env: Env) -> None:
    owner = account("owner:m")
    unset = env.api.post("/webhook/get", _owner_op("get", owner)).ok()
    assert unset["ownerAddress"] == owner.address
    assert unset["url"] == ""

    first = env.api.post("/webhook/set", _set(owner, URL)).ok()
    assert {k: first[k] for k in ("ownerAddress", "url")} == {
        "ownerAddress": owner.address,
        "url": URL,
    }
    secret = first["secret"]
    assert isinstance(secret, str) and secret.startswith("whsec_") and len(secret) > 20

    moved = env.api.post("/webhook/set", _set(owner, URL + "/v2")).ok()
    assert moved["url"] == URL + "/v2"
    assert moved["secret"] == secret  # stable across set calls

    current = env.api.post("/webhook/get", _owner_op("get", owner)).ok()
    assert current == {"ownerAddress": owner.address, "url": URL + "/v2", "secret": secret}

    assert env.api.post("/webhook/clear", _owner_op("clear", owner)).ok() == {"removed": True}
    assert env.api.post("/webhook/get", _owner_op("get", owner)).ok()["url"] == ""


def test_webhooks_are_per_owner(env: Env) -> None:
    owner, other = account("owner:m"), account("owner:other")
    mine = env.api.post("/webhook/set", _set(owner, URL)).ok()
    theirs = env.api.post("/webhook/set", _set(other, URL + "/other")).ok()
    assert mine["secret"] != theirs["secret"]
    assert env.api.post("/webhook/get", _owner_op("get", owner)).ok()["url"] == URL
    env.api.post("/webhook/clear", _owner_op("clear", other)).ok()
    assert env.api.post("/webhook/get", _owner_op("get", owner)).ok()["url"] == URL


def test_signatures_must_be_the_owners_over_the_exact_text(env: Env) -> None:
    owner, mallory = account("owner:m"), account("mallory")
    env.api.post("/webhook/set", _set(owner, URL, mallory)).error(401, prefix="wallet signature: ")
    signed_other_url = _set(owner, URL + "/evil")
    signed_other_url["url"] = URL
    env.api.post("/webhook/set", signed_other_url).error(401, prefix="wallet signature: ")
    checksum_case = _set(owner, URL)
    checksum_case["signature"] = sign_text(owner, f"set-webhook:{owner.address}:{URL}")
    env.api.post("/webhook/set", checksum_case).error(401, prefix="wallet signature: ")

    env.api.post("/webhook/set", _set(owner, URL)).ok()
    env.api.post("/webhook/get", _owner_op("get", owner, mallory)).error(
        401, prefix="wallet signature: "
    )
    # a signature for one operation is not valid for another
    env.api.post("/webhook/clear", _owner_op("get", owner)).error(401, prefix="wallet signature: ")
    env.api.post("/webhook/clear", _owner_op("clear", owner, mallory)).error(
        401, prefix="wallet signature: "
    )
    assert env.api.post("/webhook/get", _owner_op("get", owner)).ok()["url"] == URL


def test_malformed_webhook_requests_are_400(env: Env) -> None:
    owner = account("owner:m")
    env.api.post("/webhook/set", _set(owner, "ftp://merchant.example.test/")).error(
        400, prefix="invalid request: url: "
    )
    missing = _set(owner, URL)
    del missing["signature"]
    env.api.post("/webhook/set", missing).error(400, prefix="invalid request: signature: ")
    env.api.post("/webhook/get", {"signature": "0x00"}).error(
        400, prefix="invalid request: ownerAddress: "
    )
    env.api.post("/webhook/get", {"ownerAddress": "0x12", "signature": "0x00"}).error(
        400, prefix="invalid request: ownerAddress: "
    )


def test_webhook_calls_need_no_session_in_strict_mode(env: Env) -> None:
    assert env.settings.auth_mode == "strict"
    owner = account("owner:m")
    assert env.api.post("/webhook/set", _set(owner, URL)).ok()["url"] == URL


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/hook",
        "http://localhost/hook",
        "http://10.0.0.5/hook",
        "http://192.168.1.10/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]/hook",
    ],
)
def test_private_and_loopback_webhook_urls_are_refused(make_env: MakeEnv, url: str) -> None:
    """Refused unless the operator allows them (webhook_allow_private; docs/interface.md)."""
    env = make_env()
    owner, [key] = env.merchant("m", "k")
    env.api.post("/webhook/set", _set(owner, url)).error(400, prefix="invalid request: url: ")
    env.api.post("/auth/register-callback", {"url": url}, session=key).error(
        400, prefix="invalid request: url: "
    )

    allowing = make_env(webhook_allow_private=True)
    owner, [key] = allowing.merchant("m", "k")
    assert allowing.api.post("/webhook/set", _set(owner, url)).ok()["url"] == url
    answer = allowing.api.post("/auth/register-callback", {"url": url}, session=key)
    assert answer.ok()["url"] == url
