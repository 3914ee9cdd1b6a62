"""POST /invoice: the created record, its defaults, and one 400 line per bad field."""

from __future__ import annotations

import re
from typing import Any

import pytest
from conf_env import (
    CHECKOUT,
    ETH_1,
    INVOICE_FIELDS,
    NATIVE,
    NOW,
    POL_137,
    USDC,
    USDC_1,
    Env,
    MakeEnv,
    deposit_address,
    invoice_body,
)

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def test_created_invoice_has_exactly_the_spec_fields(env: Env) -> None:
    owner, [key] = env.merchant("m", "k")
    address = deposit_address("a1")
    answer = env.api.post(
        "/invoice",
        invoice_body(address.lower(), value="12.50", description="two mugs"),
        session=key,
    )
    created = answer.ok(201)
    assert set(created) == INVOICE_FIELDS
    assert UUID.match(created["guid"]), created["guid"]
    assert created["paymentUrl"] == f"{CHECKOUT}/?invoice={created['guid']}"
    assert created["status"] == "init"
    assert created["paidAmount"] == "0"
    assert created["payments"] == []
    assert created["value"] == "12.5"
    assert created["description"] == "two mugs"
    assert created["chainId"] == 1
    assert created["owner"] == owner.address
    assert created["address"] == address  # lowercase in, EIP-55 out
    assert created["acceptedTokens"] == [ETH_1]
    assert created["tokenInfo"] == {ETH_1: {"symbol": "ETH", "decimals": 18}}
    assert created["createdAt"] == NOW


def test_defaults_token_data_and_ninety_hour_deadline(env: Env) -> None:
    _, [key] = env.merchant("m", "k")
    created = env.create(key, acceptedTokens=[USDC_1, ETH_1])
    assert created["token"] == USDC_1
    assert created["data"] == {}
    # Symbol and decimals from the registry (USDC) and the chain's native coin: no data hints.
    assert created["tokenInfo"] == {
        USDC_1: {"symbol": "USDC", "decimals": 6},
        ETH_1: {"symbol": "ETH", "decimals": 18},
    }
    assert created["deadline"] == created["createdAt"] + 90 * 3600


def test_given_token_data_and_deadline_are_kept(env: Env) -> None:
    _, [key] = env.merchant("m", "k")
    created = env.create(
        key,
        acceptedTokens=[USDC_1, ETH_1],
        token=f"1:{USDC.lower()}",
        data={"order": 7, "tags": ["a"]},
        deadlineSecs=600,
    )
    assert created["token"] == USDC_1
    assert created["data"] == {"order": 7, "tags": ["a"]}
    assert created["deadline"] == NOW + 600


def test_each_creation_gets_its_own_guid(env: Env) -> None:
    _, [key] = env.merchant("m", "k")
    guids = {env.create(key)["guid"] for _ in range(3)}
    assert len(guids) == 3


def _without(field: str) -> dict[str, Any]:
    body = invoice_body()
    del body[field]
    return body


BAD_BODIES: list[tuple[str, dict[str, Any], str]] = [
    ("missing value", _without("value"), "value"),
    ("missing chainId", _without("chainId"), "chainId"),
    ("missing description", _without("description"), "description"),
    ("missing acceptedTokens", _without("acceptedTokens"), "acceptedTokens"),
    ("NaN value", invoice_body(value="NaN"), "value"),
    ("1e400 value", invoice_body(value="1e400"), "value"),
    ("negative value", invoice_body(value="-1"), "value"),
    ("float value", invoice_body(value=0.1), "value"),
    ("empty acceptedTokens", invoice_body(acceptedTokens=[]), "acceptedTokens"),
    ("token id without chain", invoice_body(acceptedTokens=[USDC]), "acceptedTokens[0]"),
    ("token id with bad chain", invoice_body(acceptedTokens=["x:" + USDC]), "acceptedTokens[0]"),
    (
        "token id with short address",
        invoice_body(acceptedTokens=[ETH_1, "1:0x1234"]),
        "acceptedTokens[1]",
    ),
    ("token on another chain", invoice_body(acceptedTokens=[POL_137]), "acceptedTokens[0]"),
    (
        "bad address checksum",
        invoice_body("0x" + deposit_address("a1")[2:].swapcase()),
        "address",
    ),
    (
        "unknown chainId",
        invoice_body(chainId=999_999_999, acceptedTokens=[f"999999999:{NATIVE}"]),
        "chainId",
    ),
    ("token not accepted", invoice_body(token=USDC_1), "token"),
    ("data not an object", invoice_body(data=[1]), "data"),
    ("deadlineSecs zero", invoice_body(deadlineSecs=0), "deadlineSecs"),
]


@pytest.mark.parametrize(
    ("body", "field"), [(b, f) for _, b, f in BAD_BODIES], ids=[c for c, _, _ in BAD_BODIES]
)
def test_bad_field_is_a_one_line_400_naming_it(env: Env, body: dict[str, Any], field: str) -> None:
    owner, [key] = env.merchant("m", "k")
    env.api.post("/invoice", body, session=key).error(400, prefix=f"invalid request: {field}: ")
    # nothing was created by the refused request
    assert env.api.get("/invoices", f"owner={owner.address}", session=key).ok() == []


@pytest.mark.parametrize(
    ("raw", "field"),
    [(b"{not json", "body"), (b"[1,2,3]", "body"), (b'"text"', "body"), (b"\xff\xfe", "body")],
    ids=["not-json", "json-array", "json-string", "not-utf8"],
)
def test_body_that_is_not_a_json_object_is_a_400(env: Env, raw: bytes, field: str) -> None:
    _, [key] = env.merchant("m", "k")
    env.api.call("POST", "/invoice", raw_body=raw, session=key).error(
        400, prefix=f"invalid request: {field}: "
    )


def test_owner_in_body_must_be_the_session_owner(env: Env) -> None:
    _, [key] = env.merchant("m", "k")
    other, _ = env.merchant("other")
    body = invoice_body(owner=other.address)
    env.api.post("/invoice", body, session=key).error(403, prefix="forbidden: ")


def test_owner_in_body_matching_the_session_is_accepted(env: Env) -> None:
    owner, [key] = env.merchant("m", "k")
    created = env.create(key, owner=owner.address.lower())
    assert created["owner"] == owner.address


def test_strict_mode_refuses_creation_without_session(env: Env) -> None:
    owner, _ = env.merchant("m")
    env.api.post("/invoice", invoice_body(owner=owner.address)).error(
        401, prefix="session signature: "
    )


def test_soft_mode_creates_for_the_owner_named_in_the_body(make_env: MakeEnv) -> None:
    env = make_env(auth_mode="soft")
    owner, _ = env.merchant("m")
    created = env.create(None, owner=owner.address.lower())
    assert created["owner"] == owner.address
    # soft mode still needs to know whose invoice it is
    env.api.post("/invoice", invoice_body()).error(400, prefix="invalid request: owner: ")


def test_a_retry_under_an_idempotency_key_is_answered_again_through_each_adapter(
    env: Env,
) -> None:
    """The header reaches the core through both frameworks, in any case; a retry signed
    anew gets the first answer, marked, and the owner still has one invoice."""
    owner, [key] = env.merchant("m", "k")
    body = invoice_body(deposit_address("a1"), value="3")
    first = env.api.post("/invoice", body, session=key, headers={"Idempotency-Key": "o-17"})
    retry = env.api.post("/invoice", body, session=key, headers={"idempotency-key": "o-17"})
    assert retry.ok(201) == first.ok(201)
    assert retry.headers["idempotent-replayed"] == "true"
    other = env.api.post(
        "/invoice",
        invoice_body(deposit_address("a1"), value="4"),
        session=key,
        headers={"Idempotency-Key": "o-17"},
    )
    other.error(409, "idempotency-key: already used with a different request; use a new key")
    assert len(env.api.get("/invoices", f"owner={owner.address}", session=key).ok()) == 1
