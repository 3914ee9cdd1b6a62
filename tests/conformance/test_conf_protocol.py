"""What every route shares: size limit, 404/405, error bodies, and the OpenAPI document."""

from __future__ import annotations

import json
import re

import pytest
from conf_env import NATIVE as ETH_ZERO
from conf_env import Env, invoice_body

from paycore.api import MAX_BODY, ROUTES


def _padded_invoice_body(size: int) -> bytes:
    """A JSON object of exactly ``size`` bytes (an invoice body with long padding data)."""
    head = invoice_body(data={"pad": ""})
    base = json.dumps(head, separators=(",", ":")).encode()
    missing = size - len(base)
    assert missing >= 0
    head["data"]["pad"] = "x" * missing
    raw = json.dumps(head, separators=(",", ":")).encode()
    assert len(raw) == size
    return raw


def test_body_over_64_kib_is_a_413(env: Env) -> None:
    assert MAX_BODY == 64 * 1024
    _, [key] = env.merchant("m", "k")
    raw = _padded_invoice_body(MAX_BODY + 1)
    env.api.call("POST", "/invoice", raw_body=raw, session=key).error(413)
    # unauthenticated and on any route: the size is refused before anything else
    env.api.call("POST", "/webhook/set", raw_body=raw).error(413)
    env.api.call("POST", "/auth/register-pubkey", raw_body=b"x" * (MAX_BODY + 1)).error(413)


def test_body_of_exactly_64_kib_is_read(env: Env) -> None:
    _, [key] = env.merchant("m", "k")
    raw = _padded_invoice_body(MAX_BODY)
    created = env.api.call("POST", "/invoice", raw_body=raw, session=key).ok(201)
    assert len(created["data"]["pad"]) > 60_000


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/nope"),
        ("POST", "/nope"),
        ("GET", "/invoice/a/b"),
        ("GET", "/invoices/extra"),
        ("POST", "/webhook"),
    ],
)
def test_unknown_path_is_a_404(env: Env, method: str, path: str) -> None:
    env.api.call(method, path).error(404)


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("GET", "/invoice", "POST"),
        ("DELETE", "/invoice/00000000-0000-4000-8000-000000000000", "GET"),
        ("POST", "/prices", "GET"),
        ("GET", "/poll/events", "POST"),
        ("PUT", "/webhook/set", "POST"),
        ("POST", "/invoices", "GET"),
    ],
)
def test_wrong_method_is_a_405_with_allow(env: Env, method: str, path: str, allowed: str) -> None:
    answer = env.api.call(method, path)
    answer.error(405)
    assert allowed in [m.strip() for m in answer.headers.get("allow", "").split(",")]


def test_errors_never_leak_internals_for_hostile_input(env: Env) -> None:
    _, [key] = env.merchant("m", "k")
    hostile = [
        invoice_body(value={"$gt": 1}),
        invoice_body(chainId="1; drop table"),
        invoice_body(acceptedTokens=[None]),
        invoice_body(acceptedTokens="1:0x0"),
        invoice_body(description=None),
        invoice_body(deadlineSecs=10**40),
        invoice_body(address=7),
        invoice_body(value="1" * 200),
    ]
    for body in hostile:
        answer = env.api.post("/invoice", body, session=key)
        answer.error(400, prefix="invalid request: ")


def test_openapi_document_lists_every_route(env: Env) -> None:
    doc = env.api.get("/openapi.json").ok()
    assert re.fullmatch(r"3\.1\.\d+", doc["openapi"])
    assert doc["info"]["title"] and doc["info"]["version"]
    assert doc["servers"] == [{"url": "/paycore"}]
    paths = doc["paths"]
    for route in ROUTES:
        assert route.path in paths, route.path
        for method in route.methods:
            operation = paths[route.path][method.lower()]
            assert str(route.status) in operation["responses"]
    ids = [op["operationId"] for item in paths.values() for op in item.values()]
    assert len(ids) == len(set(ids))
    for path, item in paths.items():
        assert path.startswith("/")
        declared_params = set(re.findall(r"\{(\w+)\}", path))
        for operation in item.values():
            assert operation["responses"], path
            for code in operation["responses"]:
                assert re.fullmatch(r"[1-5]\d\d", code), code
            in_path = {p["name"] for p in operation.get("parameters", []) if p["in"] == "path"}
            assert in_path == declared_params, path
            for param in operation.get("parameters", []):
                assert param["in"] in ("query", "header", "path", "cookie")
                assert "schema" in param
                if param["in"] == "path":
                    assert param["required"] is True


def test_openapi_is_public_and_ignores_session_headers(env: Env) -> None:
    headers = {"x-session-nonce": "1", "x-session-signature": "0x00"}
    assert env.api.get("/openapi.json", headers=headers).ok()["openapi"].startswith("3.1")


def test_trailing_slash_is_another_path(env: Env) -> None:
    env.api.get("/prices/").error(404)
    env.api.get("/invoice/").error(404)


def test_path_with_an_encoded_newline_is_not_the_route(env: Env) -> None:
    assert env.api.get("/prices%0A").status == 404
    assert env.api.get("/invoices%0A", f"address={ETH_ZERO}&chainId=1").status == 404


def test_paths_any_framework_cannot_route_still_get_paycore_text(env: Env) -> None:
    env.api.get("/invoice/abc%0Adef").error(404)
    env.api.get("/nope%0A").error(404)
