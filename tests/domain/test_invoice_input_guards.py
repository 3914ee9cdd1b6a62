"""POST /invoice's limits, exactly at their edges, and the words of every refusal.

A merchant fixes a request from its 400 text alone, so each refusal is compared whole: the
field that was wrong and why. Each limit is tried on both sides (2000 characters of
description, 20 accepted tokens, 1 second to 366 days of deadline), since a limit that moved
by one, or vanished, would otherwise go unnoticed (docs/mutation.md).
"""

from __future__ import annotations

from typing import Any

import pytest

from paycore import Gateway, Settings
from paycore.api.requests import CreateInvoice
from paycore.api.wire import read
from paycore.domain.invoices import parse_new_invoice
from paycore.domain.tokens import NATIVE
from paycore.errors import Forbidden, InvalidInput

CHAIN = 31337
USDC = f"{CHAIN}:0x5FbDB2315678afecb367f032d93F642f64180aa3"
ETH = f"{CHAIN}:{NATIVE}"
OWNER = "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359"
ADDRESS = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"
NOW = 1_700_000_000
MAX_DEADLINE = 366 * 24 * 3600
TRON = 728126428
TRON_USDT = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"
TRON_ADDRESS = "T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwb"


@pytest.fixture
def gw() -> Gateway:
    settings = Settings(database_url="memory://", vs_currencies=("eur",))
    return Gateway(settings, entry_points=False, clock=lambda: NOW)


def fields(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "value": "10",
        "chainId": CHAIN,
        "description": "d",
        "acceptedTokens": [USDC],
        "address": ADDRESS,
    }
    base.update(changes)
    return {k: v for k, v in base.items() if v is not DROP}


DROP = object()


def refused(gw: Gateway, **changes: Any) -> str:
    with pytest.raises(InvalidInput) as err:
        gw.create_invoice(OWNER, fields(**changes))
    return err.value.text


@pytest.mark.parametrize(
    ("changes", "text"),
    [
        ({"value": "ten"}, 'value: must be a decimal string such as "12.50"'),
        ({"value": DROP}, "value: required"),
        ({"chainId": DROP}, "chainId: required"),
        ({"chainId": True}, "chainId: must be a non-negative integer"),
        ({"chainId": 1.5}, "chainId: must be a non-negative integer"),
        ({"chainId": "abc"}, "chainId: must be a non-negative integer"),
        ({"chainId": "-1"}, "chainId: must be a non-negative integer"),
        ({"description": DROP}, "description: required"),
        ({"description": 5}, "description: must be a string"),
        ({"acceptedTokens": []}, "acceptedTokens: must be a non-empty array"),
        ({"acceptedTokens": USDC}, "acceptedTokens: must be an array"),
        (
            {"acceptedTokens": [USDC, "1:" + NATIVE]},
            "acceptedTokens[1]: is on chain 1, the invoice on 31337",
        ),
        ({"token": ETH}, "token: must be one of acceptedTokens"),
        ({"token": "31337:0xnothex"}, "token: not a 20-byte hex address"),
        ({"deadlineSecs": 0}, f"deadlineSecs: must be between 1 and {MAX_DEADLINE}"),
        ({"deadlineSecs": MAX_DEADLINE + 1}, f"deadlineSecs: must be between 1 and {MAX_DEADLINE}"),
        ({"deadlineSecs": "1" + "0" * 17}, f"deadlineSecs: must be between 1 and {MAX_DEADLINE}"),
        ({"deadlineSecs": "1" + "0" * 18}, "deadlineSecs: must have at most 18 digits"),
        ({"data": [1]}, "data: must be an object"),
        ({"data": "x"}, "data: must be an object"),
        ({"address": "0x123"}, "address: not a 20-byte hex address"),
        ({"vsCurrency": "gbp"}, "vsCurrency: must be one of usd, eur"),
        ({"vsCurrency": 1}, "vsCurrency: must be a string"),
    ],
)
def test_each_refusal_names_the_field_and_the_reason(
    gw: Gateway, changes: dict[str, Any], text: str
) -> None:
    assert refused(gw, **changes) == f"invalid request: {text}"


def test_description_up_to_2000_characters(gw: Gateway) -> None:
    assert len(gw.create_invoice(OWNER, fields(description="é" * 2000)).description) == 2000
    assert refused(gw, description="é" * 2001) == (
        "invalid request: description: longer than 2000 characters"
    )


def test_a_buyer_email_up_to_254_characters(gw: Gateway) -> None:
    """254 is the longest mailbox SMTP carries (RFC 5321's 256-octet path, less the angle
    brackets); a longer one would fail at every receipt, so it is refused when set."""
    mailbox = "a" * (254 - len("@shop.example")) + "@shop.example"
    assert gw.create_invoice(OWNER, fields(buyerEmail=mailbox)).buyer_email == mailbox
    assert refused(gw, buyerEmail="a" + mailbox) == (
        "invalid request: buyerEmail: longer than 254 characters"
    )


def test_up_to_20_accepted_tokens(gw: Gateway) -> None:
    twenty = [f"{CHAIN}:0x{i:040d}" for i in range(1, 21)]
    invoice = gw.create_invoice(OWNER, fields(acceptedTokens=twenty))
    assert invoice.accepted_tokens == tuple(twenty)
    over = [*twenty, f"{CHAIN}:0x{21:040d}"]
    assert refused(gw, acceptedTokens=over) == "invalid request: acceptedTokens: at most 20 entries"


def test_accepted_tokens_are_normalised_and_deduplicated(gw: Gateway) -> None:
    lower = USDC.lower()
    invoice = gw.create_invoice(OWNER, fields(acceptedTokens=[lower, ETH, USDC]))
    assert invoice.accepted_tokens == (USDC, ETH)
    assert invoice.token == USDC  # the first accepted, when no display token is named


def test_the_display_token_is_normalised(gw: Gateway) -> None:
    invoice = gw.create_invoice(OWNER, fields(acceptedTokens=[ETH, USDC], token=USDC.lower()))
    assert invoice.token == USDC


def test_deadline_from_one_second_to_366_days(gw: Gateway) -> None:
    assert gw.create_invoice(OWNER, fields(deadlineSecs=1)).deadline == NOW + 1
    assert gw.create_invoice(OWNER, fields(deadlineSecs=MAX_DEADLINE)).deadline == (
        NOW + MAX_DEADLINE
    )
    assert gw.create_invoice(OWNER, fields(deadlineSecs="60")).deadline == NOW + 60
    assert gw.create_invoice(OWNER, fields()).deadline == NOW + gw.settings.default_deadline_secs


def test_chain_id_may_be_a_decimal_string(gw: Gateway) -> None:
    assert gw.create_invoice(OWNER, fields(chainId=str(CHAIN))).chain_id == CHAIN


def test_merchant_data_is_kept_and_null_means_none(gw: Gateway) -> None:
    kept = gw.create_invoice(OWNER, fields(data={"order": 7, "note": "x"}))
    assert gw.get_invoice(kept.guid).data == {"order": 7, "note": "x"}
    assert gw.create_invoice(OWNER, fields(data=None)).data == {}
    assert gw.create_invoice(OWNER, fields()).data == {}


def test_a_claimed_owner_must_be_the_callers(gw: Gateway) -> None:
    assert gw.create_invoice(OWNER, fields(owner=OWNER.lower())).owner == OWNER
    with pytest.raises(Forbidden) as err:
        gw.create_invoice(OWNER, fields(owner=ADDRESS))
    assert err.value.text == "forbidden: owner does not match the session key's owner"


def test_the_deposit_address_is_normalised_for_its_chain(gw: Gateway) -> None:
    assert gw.create_invoice(OWNER, fields(address=ADDRESS.lower())).address == ADDRESS
    tron = gw.create_invoice(
        OWNER,
        fields(chainId=TRON, acceptedTokens=[f"{TRON}:{TRON_USDT}"], address=TRON_ADDRESS),
    )
    assert (tron.address, tron.accepted_tokens) == (TRON_ADDRESS, (f"{TRON}:{TRON_USDT}",))


def test_without_an_address_or_a_backend_to_derive_one_the_request_is_refused() -> None:
    request = read(CreateInvoice, fields(address=DROP))
    with pytest.raises(InvalidInput) as err:
        parse_new_invoice(Settings(database_url="memory://"), request, OWNER, NOW, None)
    assert err.value.text == (
        "invalid request: address: required: no chain backend derives deposit addresses on "
        "31337 (give chain 31337 a factory and an rpc_url in PAYCORE_CHAINS, docs/chains.md)"
    )


def test_another_vs_currency_is_taken_in_any_case(gw: Gateway) -> None:
    assert gw.create_invoice(OWNER, fields(vsCurrency=" EUR ")).vs_currency == "eur"
    assert gw.create_invoice(OWNER, fields()).vs_currency == "usd"


def test_return_links_are_kept_and_shown_on_the_record(gw: Gateway) -> None:
    invoice = gw.create_invoice(
        OWNER,
        fields(
            redirectUrl=" https://shop.example/thanks?order=42#done ",
            cancelUrl="http://localhost:8080/cart",
            redirectAutomatically=True,
        ),
    )
    assert invoice.redirect_url == "https://shop.example/thanks?order=42#done"
    # "~" (126, just below DEL) is an ordinary URL character.
    tilde = gw.create_invoice(OWNER, fields(redirectUrl="https://shop.example/~ann/thanks"))
    assert tilde.redirect_url == "https://shop.example/~ann/thanks"
    wire = gw.invoice_wire(invoice)
    assert wire["redirectUrl"] == "https://shop.example/thanks?order=42#done"
    assert wire["cancelUrl"] == "http://localhost:8080/cart"
    assert wire["redirectAutomatically"] is True
    plain = gw.invoice_wire(gw.create_invoice(OWNER, fields()))
    assert not {"redirectUrl", "cancelUrl", "redirectAutomatically"} & plain.keys()


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"redirectUrl": "javascript:alert(1)"}, "redirectUrl: must be an http or https URL"),
        ({"redirectUrl": "data:text/html,hi"}, "redirectUrl: must be an http or https URL"),
        ({"redirectUrl": "https:///no-host"}, "redirectUrl: must be an http or https URL"),
        ({"redirectUrl": "//shop.example/x"}, "redirectUrl: must be an http or https URL"),
        ({"redirectUrl": "https://x.example:99999/"}, "redirectUrl: must be an http or https URL"),
        (
            {"redirectUrl": "https://shop.example/a b"},
            "redirectUrl: must be an http or https URL without spaces",
        ),
        (
            {"redirectUrl": "https://shop.example/a\x7fb"},  # DEL, the one control above 31
            "redirectUrl: must be an http or https URL without spaces",
        ),
        (
            {"cancelUrl": "https://user:pw@shop.example/"},
            "cancelUrl: must not carry a user name or password",
        ),
        (
            {"cancelUrl": "https://user@shop.example/"},  # a user name alone is refused too
            "cancelUrl: must not carry a user name or password",
        ),
        (
            {"cancelUrl": "https://shop.example/" + "a" * 2000},
            "cancelUrl: longer than 2000 characters",
        ),
        ({"cancelUrl": 7}, "cancelUrl: must be a string"),
        ({"redirectAutomatically": True}, "redirectAutomatically: needs a redirectUrl"),
        (
            {"redirectAutomatically": "yes", "redirectUrl": "https://shop.example/"},
            "redirectAutomatically: must be true or false",
        ),
    ],
)
def test_return_links_that_are_not_plain_web_urls_are_refused(
    gw: Gateway, changes: dict[str, Any], reason: str
) -> None:
    assert refused(gw, **changes) == f"invalid request: {reason}"


def test_the_documented_schema_takes_one_to_20_accepted_tokens_as_the_parser_does(
    gw: Gateway,
) -> None:
    """The OpenAPI document promises what parse_new_invoice accepts: a client generated from
    it may send a single token, and no more than 20."""
    from paycore.api import routes
    from paycore.api.openapi import document

    post = document(routes())["paths"]["/invoice"]["post"]
    schema = post["requestBody"]["content"]["application/json"]["schema"]
    accepted = schema["properties"]["acceptedTokens"]
    assert (accepted["minItems"], accepted["maxItems"]) == (1, 20)
    assert gw.create_invoice(OWNER, fields(acceptedTokens=[ETH])).accepted_tokens == (ETH,)
