"""Input that used to answer 500 (the security audit's finding 3), on every transport: a body
nested past the parser's depth, a lone UTF-16 surrogate or a NUL in any string, a NUL in a
path or query, and digits outside ASCII where an integer is expected. Each is now a 400
whose one-line text names what was wrong, and nothing is stored."""

from __future__ import annotations

import pytest
from conf_env import Env, invoice_body

DEPTH = 1000


def _one_line_400(answer: object, expected: str) -> None:
    status, text = answer.status, answer.text  # type: ignore[attr-defined]
    assert (status, text) == (400, expected)
    assert "\n" not in text


def test_a_body_nested_a_thousand_deep_is_400(env: Env) -> None:
    _, [key] = env.merchant("m", "k")
    raw = ("[" * DEPTH + "]" * DEPTH).encode()
    body = b'{"value":"1","x":' + raw + b"}"
    answer = env.api.call("POST", "/invoice", raw_body=body, session=key)
    _one_line_400(answer, "invalid request: body: not valid JSON")


@pytest.mark.parametrize(
    ("escape", "reason"),
    [
        ("\\ud800", "must not contain a lone UTF-16 surrogate"),
        ("\\udfff", "must not contain a lone UTF-16 surrogate"),
        ("\\u0000", "must not contain a NUL character"),
    ],
)
def test_a_bad_character_in_a_field_is_400_and_nothing_is_stored(
    env: Env, escape: str, reason: str
) -> None:
    owner, [key] = env.merchant("m", "k")
    body = (
        '{"value":"10","chainId":1,"description":"mug ' + escape + '",'
        '"acceptedTokens":["1:0x0000000000000000000000000000000000000000"]}'
    ).encode()
    answer = env.api.call("POST", "/invoice", raw_body=body, session=key)
    _one_line_400(answer, f"invalid request: description: {reason}")
    listed = env.api.get("/invoices", query=f"owner={owner.address}", session=key).ok()
    assert listed == []


def test_a_nul_in_a_poll_token_is_400_without_authentication(env: Env) -> None:
    answer = env.api.call(
        "POST",
        "/poll/events",
        raw_body=b'{"ownerAddress":"0x0000000000000000000000000000000000000001","token":"\\u0000"}',
    )
    _one_line_400(answer, "invalid request: token: must not contain a NUL character")


def test_a_nul_in_the_path_or_query_is_400(env: Env) -> None:
    _one_line_400(
        env.api.get("/invoice/%00"), "invalid request: path: must not contain a NUL character"
    )
    _one_line_400(
        env.api.get("/invoices", query="address=%00&chainId=1"),
        "invalid request: address: must not contain a NUL character",
    )


@pytest.mark.parametrize("chain_id", ["²", "٣", "３"])
def test_digits_outside_ascii_are_not_a_chain_id(env: Env, chain_id: str) -> None:
    _, [key] = env.merchant("m", "k")
    answer = env.api.post("/invoice", invoice_body(chainId=chain_id), session=key)
    _one_line_400(answer, "invalid request: chainId: must be a non-negative integer")
