"""Parameter smuggling on every session-signed endpoint, through the core and both adapters.

A session signature covers ``sess:{nonce}:{sha256}`` of the body (POST) or of the request
URI as sent (GET), and nothing else (docs/decisions.md, "What a session signature covers").
These tests walk the route table: every route that takes session headers is sent what a
signature does not cover -- a query string on a POST, a body on a GET, repeated headers,
repeated JSON keys and query parameters, form and text bodies -- and must take nothing
from it. The audit's exploit (a captured poll signature, an empty body and
``?url=https://attacker.example/steal`` on register-callback) is one case of the walk.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import attrs
import pytest
from conf_api import Answer
from conf_env import ETH_1, Env, invoice_body
from conf_keys import SessionKey, account, session, sign_text
from conf_transport import encode_body, request_uri
from eth_account.signers.local import LocalAccount

from paycore.api.table import ROUTES
from paycore.api.wire import wire_name
from paycore.webhooks import netguard

AUTH = "session signature: "
GOOD_URL = "https://merchant.example.test/hooks/paycore"
EVIL_URL = "https://attacker.example/steal"
EMPTY_BODY_REFUSED = (
    "invalid request: body: required with session headers (the signature covers the body)"
)

#: Every (method, path) that takes session headers: the walk covers exactly these.
SIGNED = sorted({(m, r.path) for r in ROUTES if r.session != "none" for m in r.methods})
SIGNED_POST = [path for method, path in SIGNED if method == "POST"]
SIGNED_GET = [path for method, path in SIGNED if method == "GET"]
POLL = "/poll/events"


def test_the_walk_covers_every_signed_route() -> None:
    """A new signed route must be added to the bodies and queries below to be walked."""
    assert set(SIGNED_POST) == set(POST_BODIES), set(SIGNED_POST) ^ set(POST_BODIES)
    assert set(SIGNED_GET) == set(GET_QUERIES), set(SIGNED_GET) ^ set(GET_QUERIES)
    assert ("POST", "/auth/register-callback") in SIGNED and ("POST", POLL) in SIGNED


# -- what a well-formed request to each signed route looks like --------------------------------

Body = Callable[[LocalAccount, SessionKey], Any]


def _owner_chain(owner: LocalAccount, key: SessionKey) -> dict[str, Any]:
    return {"ownerAddress": owner.address, "chainId": 1}


def _refresh(owner: LocalAccount, key: SessionKey) -> dict[str, Any]:
    return {
        "ownerAddress": owner.address,
        "publicKey": key.public_key,
        "signature": sign_text(owner, key.public_key),
    }


POST_BODIES: dict[str, Body] = {
    "/invoice": lambda owner, key: invoice_body(),
    "/invoice/challenge": lambda owner, key: {"address": owner.address},
    "/refund": lambda owner, key: {"guid": "00000000-0000-4000-8000-000000000000"},
    "/refund/cancel": lambda owner, key: {"refundId": "00000000-0000-4000-8000-000000000000"},
    POLL: lambda owner, key: None,
    "/auth/register-pubkey": _refresh,
    "/auth/deregister-pubkey": lambda owner, key: {"publicKey": key.public_key},
    "/auth/register-callback": lambda owner, key: {"url": GOOD_URL},
    "/mevStakingInfo": lambda owner, key: {"owners": [owner.address]},
    "/mevStake": _owner_chain,
    "/mevUnstake": _owner_chain,
    "/mevClaim": _owner_chain,
    "/getAddress": lambda owner, key: {**_owner_chain(owner, key), "index": 0},
    "/initWallet": _owner_chain,
    "/deployWallet": lambda owner, key: {"chainId": 1, "rawTx": "0x00"},
    "/getBalances": _owner_chain,
    "/initWithdraw": _owner_chain,
    "/history": _owner_chain,
    "/getFaucet": lambda owner, key: {"chainId": 31337, "to": owner.address},
    "/webhook/redeliver": lambda owner, key: {"id": 1},
    "/webhook/redeliver-failed": lambda owner, key: {"since": 0},
    "/webhook/endpoints": lambda owner, key: {"url": GOOD_URL, "types": ["invoice.paid"]},
    "/webhook/endpoints/update": lambda owner, key: {"id": "ep_none", "url": GOOD_URL},
    "/webhook/endpoints/rotate-secret": lambda owner, key: {"id": "ep_none"},
    "/webhook/endpoints/delete": lambda owner, key: {"id": "ep_none"},
    "/link": lambda owner, key: {
        "chainId": 1,
        "description": "d",
        "acceptedTokens": [ETH_1],
        "amount": "1",
    },
    "/link/disable": lambda owner, key: {"id": "no-such-link"},
    "/merchant/profile": lambda owner, key: {"name": "Mugs & Co"},
    "/plan": lambda owner, key: {
        "name": "Gold",
        "amount": "10",
        "chainId": 1,
        "acceptedTokens": [ETH_1],
        "periodUnit": "month",
        "periodCount": 1,
    },
    "/subscription": lambda owner, key: {"planId": "plan_none", "reference": "c1"},
    "/subscription/cancel": lambda owner, key: {"id": "sub_none"},
    "/payouts": lambda owner, key: {"chainId": 1, "csv": "address,token,amount\n"},
    "/payouts/confirm": lambda owner, key: {"batchId": "pob_none", "txHashes": ["0x" + "ab" * 32]},
}

Query = Callable[[Env, LocalAccount], str]


def _owner_query(env: Env, owner: LocalAccount) -> str:
    return f"owner={owner.address}"


def _owner_chain_query(env: Env, owner: LocalAccount) -> str:
    return f"ownerAddress={owner.address}&chainId=1"


GET_QUERIES: dict[str, Query] = {
    "/invoice/{guid}": lambda env, owner: "",
    "/invoices": _owner_query,
    "/transactions": _owner_query,
    "/stats": lambda env, owner: f"owner={owner.address}&from=0&to=86400",
    "/prices": lambda env, owner: "vsCurrency=usd",
    "/auth/pubkeys": _owner_query,
    "/mevStakingInfo": lambda env, owner: f"owners={owner.address}",
    "/mevStake": _owner_chain_query,
    "/mevUnstake": _owner_chain_query,
    "/mevClaim": _owner_chain_query,
    "/getAddress": lambda env, owner: _owner_chain_query(env, owner) + "&index=0",
    "/initWallet": _owner_chain_query,
    "/deployWallet": lambda env, owner: "chainId=1&rawTx=0x00",
    "/getBalances": _owner_chain_query,
    "/initWithdraw": _owner_chain_query,
    "/history": _owner_chain_query,
    "/getFaucet": lambda env, owner: f"chainId=31337&to={owner.address}",
    "/webhook/deliveries": _owner_query,
    "/webhook/endpoints": _owner_query,
    "/export": _owner_query,
    "/links": _owner_query,
    "/plans": _owner_query,
    "/subscriptions": _owner_query,
    "/subscriptions/{id}": _owner_query,
    "/payouts/{id}": _owner_query,
    "/merchant/profile": _owner_query,
}


def _path(env: Env, path: str, key: SessionKey) -> str:
    if "{guid}" in path:
        return path.replace("{guid}", env.create(key)["guid"])
    return path


def _hostile_query(path: str, other: LocalAccount, other_key: SessionKey) -> str:
    """Every parameter the route knows, and the audit's, set to another owner's values."""
    route = next(r for r in ROUTES if r.path == path)
    names = {wire_name(a) for a in attrs.fields(route.request)} if route.request else set()
    names |= {"url", "ownerAddress", "owner", "publicKey", "encryptionPublicKey", "value"}
    values = {
        "url": EVIL_URL,
        "ownerAddress": other.address,
        "owner": other.address,
        "publicKey": other_key.public_key,
        "encryptionPublicKey": other_key.public_key,
        "address": other.address,
        "to": other.address,
        "value": "1000",
    }
    return urlencode({name: values.get(name, "1") for name in sorted(names)})


def _webhook_url(env: Env, owner: LocalAccount) -> str:
    body = {
        "ownerAddress": owner.address,
        "signature": sign_text(owner, f"get-webhook:{owner.address.lower()}"),
    }
    url: str = env.api.post("/webhook/get", body).ok()["url"]
    return url


def _same_answer(first: Answer, second: Answer) -> None:
    assert first.status == second.status, (first.status, first.body, second.status, second.body)
    if first.status >= 400:
        assert first.text == second.text


@pytest.fixture(autouse=True)
def no_dns(monkeypatch: pytest.MonkeyPatch) -> None:
    """The webhook URLs here are under .example names, which never resolve: answer that at
    once instead of waiting out the resolver (5 s a lookup on a machine without DNS). The
    guard's outcome is the one a real lookup gives."""
    real = netguard.resolve

    def resolve(host: str, port: int) -> list[Any]:
        if host.endswith((".example", ".example.test")):
            raise netguard.Unresolvable(f"cannot resolve {host}: a reserved test name")
        return real(host, port)

    monkeypatch.setattr(netguard, "resolve", resolve)


@pytest.fixture
def parties(env: Env) -> tuple[LocalAccount, list[SessionKey], LocalAccount, SessionKey]:
    owner, keys = env.merchant("m", "k1", "k2", "k3")
    other, [other_key] = env.merchant("other", "k")
    env.api.post("/auth/register-callback", {"url": GOOD_URL}, session=keys[2]).ok()
    return owner, keys, other, other_key


Parties = tuple[LocalAccount, list[SessionKey], LocalAccount, SessionKey]


# -- POST: the body is all there is ------------------------------------------------------------


@pytest.mark.parametrize("path", [p for p in SIGNED_POST if p != POLL])
def test_a_captured_poll_signature_buys_nothing_on_another_post(
    env: Env, parties: Parties, path: str
) -> None:
    """The audit's finding 1: an empty body signed for a poll, the parameters in the query."""
    owner, [key, *_], other, other_key = parties
    captured = key.headers_for(b"")  # what every polling client signs every few seconds
    query = _hostile_query(path, other, other_key)
    env.api.call("POST", path, query=query, headers=captured).error(400, EMPTY_BODY_REFUSED)
    assert _webhook_url(env, owner) == GOOD_URL
    # Refused before its nonce was spent: the captured poll is still the owner's own poll.
    answer = env.api.post(POLL, headers=captured).ok()
    assert answer == {"ownerAddress": owner.address, "events": []}
    assert env.poll(key) == []  # the key was neither deregistered nor changed


def test_a_poll_takes_nothing_from_its_query(env: Env, parties: Parties) -> None:
    owner, [key, *_], other, other_key = parties
    query = _hostile_query(POLL, other, other_key) + "&token=x"
    answer = env.api.call("POST", POLL, query=query, session=key).ok()
    assert answer == {"ownerAddress": owner.address, "events": []}


@pytest.mark.parametrize("path", SIGNED_POST)
def test_a_post_query_string_is_never_read(env: Env, parties: Parties, path: str) -> None:
    """The same well-formed body with and without a hostile query: the same answer."""
    owner, [first, second, third], other, other_key = parties
    body = POST_BODIES[path]
    # Two keys of the owner, so that state-changing calls (deregistration) can run twice;
    # the query names the other call's key, which a reader of the query would act on.
    with_query = env.api.call(
        "POST",
        path,
        json_body=body(owner, first),
        query=_hostile_query(path, other, second),
        session=first,
    )
    without = env.api.call("POST", path, json_body=body(owner, second), session=second)
    _same_answer(with_query, without)
    assert _webhook_url(env, owner) == GOOD_URL
    if path == "/invoice":
        assert with_query.json()["value"] == "10"
        assert with_query.json()["owner"] == owner.address
    env.api.post(POLL, session=other_key).ok()  # the other owner's key is untouched


def test_register_callback_takes_its_url_from_the_body(env: Env, parties: Parties) -> None:
    owner, [key, *_], _, _ = parties
    new_url = GOOD_URL + "/v2"
    answer = env.api.call(
        "POST",
        "/auth/register-callback",
        json_body={"url": new_url},
        query=urlencode({"url": EVIL_URL}),
        session=key,
    ).ok()
    assert answer == {"ownerAddress": owner.address, "url": new_url}
    assert _webhook_url(env, owner) == new_url


@pytest.mark.parametrize("path", SIGNED_POST)
def test_a_repeated_json_key_is_refused(env: Env, parties: Parties, path: str) -> None:
    """Signers and parsers disagree on which of two keys wins; paycore picks neither."""
    _, [key, *_], _, _ = parties
    raw = f'{{"url":"{GOOD_URL}","url":"{EVIL_URL}","chainId":1}}'.encode()
    answer = env.api.call("POST", path, raw_body=raw, headers=key.headers_for(raw))
    expected = (
        "invalid request: body: must be empty with session headers"
        if path == POLL
        else "invalid request: body: key 'url' appears more than once"
    )
    answer.error(400, expected)
    assert _webhook_url(env, parties[0]) == GOOD_URL


def test_a_repeated_key_at_any_depth_and_non_json_constants_are_refused(
    env: Env, parties: Parties
) -> None:
    owner, [key, *_], _, _ = parties
    for raw, reason in (
        (b'{"value":"10","data":{"a":1,"a":2}}', "key 'a' appears more than once"),
        (b'{"value":NaN}', "NaN is not JSON"),
        (b'{"value":Infinity}', "Infinity is not JSON"),
        ('{"value":"10"}'.encode("utf-16"), "not valid JSON"),
        (b'\xef\xbb\xbf{"value":"10"}', "not valid JSON"),  # a UTF-8 byte order mark
    ):
        env.api.call("POST", "/invoice", raw_body=raw, headers=key.headers_for(raw)).error(
            400, f"invalid request: body: {reason}"
        )
    assert env.api.get("/invoices", f"owner={owner.address}", session=key).ok() == []


def test_a_repeated_key_in_a_wallet_signed_body_is_refused(env: Env) -> None:
    owner, key = account("owner:w"), session("w:k")
    pub = key.public_key
    raw = (
        f'{{"ownerAddress":"{owner.address}","publicKey":"{pub}","publicKey":"{pub}",'
        f'"signature":"{sign_text(owner, pub)}"}}'
    ).encode()
    env.api.call("POST", "/auth/register-pubkey", raw_body=raw).error(
        400, "invalid request: body: key 'publicKey' appears more than once"
    )


FOREIGN_BODIES = {
    "form": (
        "application/x-www-form-urlencoded",
        urlencode({"url": EVIL_URL, "publicKey": "x", "chainId": "1"}).encode(),
    ),
    "text": ("text/plain", f"url={EVIL_URL}".encode()),
    "multipart": (
        "multipart/form-data; boundary=b0undary",
        (
            f'--b0undary\r\nContent-Disposition: form-data; name="url"\r\n\r\n{EVIL_URL}\r\n'
            "--b0undary--\r\n"
        ).encode(),
    ),
}


@pytest.mark.parametrize("kind", list(FOREIGN_BODIES))
@pytest.mark.parametrize("path", SIGNED_POST)
def test_form_and_text_bodies_are_not_reinterpreted(
    env: Env, parties: Parties, path: str, kind: str
) -> None:
    owner, [key, *_], _, _ = parties
    content_type, raw = FOREIGN_BODIES[kind]
    headers = {**key.headers_for(raw), "content-type": content_type}
    answer = env.api.call("POST", path, raw_body=raw, headers=headers)
    expected = (
        "invalid request: body: must be empty with session headers"
        if path == POLL
        else "invalid request: body: not valid JSON"
    )
    answer.error(400, expected)
    assert _webhook_url(env, owner) == GOOD_URL


def test_the_content_type_is_not_consulted_for_signed_json(env: Env, parties: Parties) -> None:
    """The signature covers bytes; JSON bytes are read as JSON whatever the label says."""
    owner, [key, *_], _, _ = parties
    raw = encode_body({"url": GOOD_URL + "/plain"}, None)
    headers = {**key.headers_for(raw), "content-type": "text/plain"}
    env.api.call("POST", "/auth/register-callback", raw_body=raw, headers=headers).ok()
    assert _webhook_url(env, owner) == GOOD_URL + "/plain"


# -- GET: the URI is all there is --------------------------------------------------------------


@pytest.mark.parametrize("path", SIGNED_GET)
def test_the_signature_of_a_get_binds_its_query(env: Env, parties: Parties, path: str) -> None:
    owner, [key, *_], other, _ = parties
    target = _path(env, path, key)
    query = GET_QUERIES[path](env, owner)
    joiner = "&" if query else ""
    for added in (f"{joiner}limit=1", f"{joiner}address={other.address}"):
        env.api.get(target, query + added, session=key, sign_uri=request_uri(target, query)).error(
            401, prefix=AUTH
        )
    # and a signature over the query cannot be spent without it
    if query:
        env.api.get(target, None, session=key, sign_uri=request_uri(target, query)).error(
            401, prefix=AUTH
        )


@pytest.mark.parametrize("path", SIGNED_GET)
def test_a_repeated_query_parameter_is_refused(env: Env, parties: Parties, path: str) -> None:
    owner, [key, *_], other, _ = parties
    target = _path(env, path, key)
    base = GET_QUERIES[path](env, owner)
    query = (base + "&" if base else "") + f"owner={owner.address}&owner={other.address}"
    if "owner=" in base:
        query = base + f"&owner={other.address}"
    env.api.get(target, query, session=key).error(
        400, "invalid request: owner: given more than once in the query"
    )


@pytest.mark.parametrize("path", SIGNED_GET)
def test_a_get_body_is_never_read(env: Env, parties: Parties, path: str) -> None:
    owner, [key, *_], other, other_key = parties
    target = _path(env, path, key)
    query = GET_QUERIES[path](env, owner)
    hostile = encode_body(
        {"owner": other.address, "ownerAddress": other.address, "chainId": 137}, None
    )
    with_body = env.api.call("GET", target, query=query, raw_body=hostile, session=key)
    without = env.api.call("GET", target, query=query, session=key)
    _same_answer(with_body, without)
    if with_body.status == 200 and path != "/auth/pubkeys":  # pubkeys shows each nonce
        assert with_body.body == without.body


# -- headers: repeated ones are refused, others change nothing --------------------------------


def _signed_call(
    env: Env, owner: LocalAccount, key: SessionKey, method: str, path: str
) -> tuple[str, str | None, bytes, dict[str, str]]:
    """(path, query, body, session headers) of a well-formed signed call."""
    target = _path(env, path, key)
    if method == "GET":
        query = GET_QUERIES[path](env, owner) or None
        return target, query, b"", key.headers_for(request_uri(target, query).encode())
    raw = encode_body(POST_BODIES[path](owner, key), None)
    return target, None, raw, key.headers_for(raw)


REPEATS = {
    "nonce": ("x-session-nonce", "x-session-nonce must be a positive decimal integer"),
    "signature": ("x-session-signature", "malformed signature"),
    "pubkey": ("x-session-pubkey", "x-session-pubkey: must be 0x04"),
}


@pytest.mark.parametrize("repeated", list(REPEATS))
@pytest.mark.parametrize(("method", "path"), SIGNED)
def test_a_repeated_session_header_is_refused(
    env: Env, parties: Parties, method: str, path: str, repeated: str
) -> None:
    """Servers join a repeated header field with ", " (and the Litestar adapter does the same
    for ASGI, see tests/adapters): one value that parses as neither of the two."""
    owner, [key, *_], _, other_key = parties
    target, query, raw, headers = _signed_call(env, owner, key, method, path)
    name, reason = REPEATS[repeated]
    first = headers.get(name, key.public_key)
    second = {"x-session-pubkey": other_key.public_key}.get(name, headers.get(name, ""))
    sent = {**headers, name: f"{first}, {second}"}
    if raw:
        sent["content-type"] = "application/json"
    answer = env.api.call(method, target, query=query, raw_body=raw or None, headers=sent)
    answer.error(401, prefix=AUTH + reason)


def test_method_and_url_override_headers_change_nothing(env: Env, parties: Parties) -> None:
    owner, [key, *_], other, _ = parties
    captured = key.headers_for(b"")
    overrides = {
        "x-http-method-override": "GET",
        "x-http-method": "GET",
        "x-original-url": f"/paycore/auth/register-callback?url={EVIL_URL}",
        "x-rewrite-url": f"/paycore/auth/register-callback?url={EVIL_URL}",
        "x-forwarded-prefix": "/elsewhere",
    }
    query = urlencode({"url": EVIL_URL})
    env.api.call(
        "POST", "/auth/register-callback", query=query, headers={**captured, **overrides}
    ).error(400, EMPTY_BODY_REFUSED)
    answer = env.api.post(POLL, headers={**captured, **overrides}).ok()
    assert answer["ownerAddress"] == owner.address
    listed = env.api.get("/invoices", f"owner={owner.address}", session=key, headers=overrides).ok()
    assert listed == []
    assert _webhook_url(env, owner) == GOOD_URL
    del other
