"""Webhook endpoints over HTTP, through the core and both adapters, on each storage: several
per owner, each with its own secret and event types, managed with the owner's session key
(docs/interface.md §Webhook endpoints), beside the ``/webhook/set`` URL, listed first as
``default``. Deliveries go to real receivers on loopback, each verified with its own
endpoint's secret; every answer is checked against the served OpenAPI document.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from conf_env import Env
from test_conf_merchant_tools import (  # the fixtures and helpers of the delivery log's walk
    BACKENDS,
    FAST_RETRIES,
    MakeTools,
    Receiver,
    _invoice,
    _webhook,
    checked,
    make_tools,
)

from paycore.domain.changes import ALL_TYPES, STATUS_CHANGES
from paycore.webhooks import netguard

__all__ = ["make_tools"]

ENDPOINTS = "/webhook/endpoints"
SPEC_TYPES = sorted(STATUS_CHANGES)


@pytest.fixture(autouse=True)
def no_dns(monkeypatch: pytest.MonkeyPatch) -> None:
    """``.example.test`` names never resolve: say so at once rather than wait out the
    resolver; the guard's outcome is the one a real lookup gives."""
    real = netguard.resolve

    def resolve(host: str, port: int) -> list[Any]:
        if host.endswith(".example.test"):
            raise netguard.Unresolvable(f"cannot resolve {host}: a reserved test name")
        return real(host, port)

    monkeypatch.setattr(netguard, "resolve", resolve)


@pytest.fixture
def receivers() -> Any:
    found = [Receiver(), Receiver(), Receiver()]
    for receiver in found:
        receiver.up()
    yield found
    for receiver in found:
        receiver.down()


def _create(env: Env, key: Any, **body: Any) -> Any:
    return checked(env.api, env.api.post(ENDPOINTS, body, session=key), "POST", ENDPOINTS, 201)


def _deliver_all(env: Env) -> None:
    dispatcher = env.gateway.webhooks.dispatcher()
    for _ in range(20):  # bounded: each round delivers what is due
        if not dispatcher.run_once(limit=50):
            return
    raise AssertionError("deliveries still due after 20 rounds")


@pytest.mark.parametrize("backend", BACKENDS)
def test_each_endpoint_gets_its_types_signed_with_its_own_secret(
    make_tools: MakeTools, backend: str, receivers: list[Receiver]
) -> None:
    spec_hook, shop, books = receivers
    env = make_tools(backend, **FAST_RETRIES)
    owner, [key] = env.merchant("m", "k")
    spec_hook.secret = _webhook(env, owner, spec_hook.url)
    made = _create(env, key, url=shop.url)  # no types: the status changes, as /webhook/set
    assert made["types"] == SPEC_TYPES and made["enabled"] is True
    assert made["id"].startswith("ep_") and made["secret"].startswith("whsec_")
    shop.secret = made["secret"]
    every = _create(env, key, url=books.url, types=sorted(ALL_TYPES))
    books.secret = every["secret"]
    assert every["secret"] != made["secret"] != spec_hook.secret

    listed = checked(
        env.api, env.api.get(ENDPOINTS, f"owner={owner.address}", session=key), "GET", ENDPOINTS
    )
    assert [e["id"] for e in listed["items"]] == ["default", made["id"], every["id"]]
    assert listed["items"][0]["url"] == spec_hook.url
    assert listed["items"][0]["types"] == SPEC_TYPES

    invoice = _invoice(env, key)
    env.deposit(invoice["address"], "0.002")  # partialPaid
    env.deposit(invoice["address"], "0.001")  # a further part: no status change
    env.deposit(invoice["address"], "0.002")  # paid
    env.deposit(invoice["address"], "0.004")  # overpaid: no status change
    _deliver_all(env)

    def types(receiver: Receiver) -> list[str]:
        assert all(r["verified"] for r in receiver.got), "signed with another secret"
        return [json.loads(r["body"])["type"] for r in receiver.got]

    assert types(spec_hook) == ["invoice.partially_paid", "invoice.paid"]
    assert types(shop) == ["invoice.partially_paid", "invoice.paid"]
    assert types(books) == [
        "invoice.partially_paid",
        "invoice.further_payment",
        "invoice.paid",
        "invoice.overpaid",
    ]
    log = env.api.get("/webhook/deliveries", f"owner={owner.address}", session=key).ok()
    assert sorted(d["endpointId"] for d in log["items"]) == sorted(
        ["default"] * 2 + [made["id"]] * 2 + [every["id"]] * 4
    )
    only = env.api.get(
        "/webhook/deliveries", f"owner={owner.address}&endpoint={every['id']}", session=key
    ).ok()
    assert only["total"] == 4 and {d["endpointId"] for d in only["items"]} == {every["id"]}


@pytest.mark.parametrize("backend", BACKENDS)
def test_update_rotate_disable_and_delete(
    make_tools: MakeTools, backend: str, receivers: list[Receiver]
) -> None:
    first, second, _ = receivers
    env = make_tools(backend, **FAST_RETRIES)
    owner, [key] = env.merchant("m", "k")
    made = _create(env, key, url=first.url, types=["invoice.paid"])
    update = "/webhook/endpoints/update"
    moved = checked(
        env.api,
        env.api.post(
            update,
            {"id": made["id"], "url": second.url, "types": ["invoice.overpaid"]},
            session=key,
        ),
        "POST",
        update,
    )
    assert (moved["url"], moved["types"], moved["secret"]) == (
        second.url,
        ["invoice.overpaid"],
        made["secret"],  # the secret survives a move
    )
    rotate = "/webhook/endpoints/rotate-secret"
    rotated = checked(
        env.api, env.api.post(rotate, {"id": made["id"]}, session=key), "POST", rotate
    )
    assert rotated["secret"].startswith("whsec_") and rotated["secret"] != made["secret"]
    second.secret = rotated["secret"]
    invoice = _invoice(env, key)
    env.deposit(invoice["address"], "0.005")
    env.deposit(invoice["address"], "0.001")
    _deliver_all(env)
    assert [(json.loads(r["body"])["type"], r["verified"]) for r in second.got] == [
        ("invoice.overpaid", True)  # the new secret signs it
    ]
    assert first.got == []

    off = env.api.post(update, {"id": made["id"], "enabled": False}, session=key).ok()
    assert off["enabled"] is False
    env.deposit(invoice["address"], "0.001")
    _deliver_all(env)
    assert len(second.got) == 1  # a disabled endpoint is sent nothing

    delete = "/webhook/endpoints/delete"
    gone = checked(env.api, env.api.post(delete, {"id": made["id"]}, session=key), "POST", delete)
    assert gone == {"removed": True, "id": made["id"]}
    env.api.post(delete, {"id": made["id"]}, session=key).error(
        404, f"webhook endpoint {made['id']} not found"
    )
    listed = env.api.get(ENDPOINTS, f"owner={owner.address}", session=key).ok()
    assert listed == {"ownerAddress": owner.address, "items": []}


def test_bad_input_other_owners_and_unsigned_calls_are_refused(make_tools: MakeTools) -> None:
    env = make_tools()
    owner, [key] = env.merchant("m", "k")
    other, [theirs] = env.merchant("o", "k")
    good = "https://hooks.example.test/in"
    bad = {
        "types": (
            {"url": good, "types": ["invoice.shipped"]},
            "invalid request: types: unknown event type 'invoice.shipped'",
        ),
        "empty": ({"url": good, "types": []}, None),
        "scheme": ({"url": "ftp://hooks.example.test/"}, None),
        "private": ({"url": "http://127.0.0.1:9/in"}, None),  # the address guard
        "no url": ({}, "invalid request: url: required"),
        "extra": ({"url": good, "secret": "whsec_mine"}, None),
    }
    for name, (body, text) in bad.items():
        answer = env.api.post(ENDPOINTS, body, session=key)
        assert answer.status == 400, name
        said = answer.error(400, text) if text else answer.error(400, prefix="invalid request")
        assert good not in said or name == "types"
    assert env.api.get(ENDPOINTS, f"owner={owner.address}", session=key).ok()["items"] == []

    made = _create(env, key, url=good)
    env.api.post(ENDPOINTS, {"url": good}).error(401)
    env.api.get(ENDPOINTS, f"owner={owner.address}").error(401)
    env.api.get(ENDPOINTS, f"owner={owner.address}", session=theirs).error(403)
    env.api.post(ENDPOINTS, {"url": good, "ownerAddress": owner.address}, session=theirs).error(403)
    for path in ("/webhook/endpoints/update", "/webhook/endpoints/rotate-secret"):
        # Another owner's endpoint id is "not found" for them; their own owner is implied.
        env.api.post(path, {"id": made["id"]}, session=theirs).error(
            404, f"webhook endpoint {made['id']} not found"
        )
        env.api.post(path, {"id": "default"}, session=key).error(
            400,
            "invalid request: id: the default endpoint is set with /webhook/set and /webhook/clear",
        )
    env.api.post("/webhook/endpoints/delete", {"id": made["id"]}, session=theirs).error(404)
    env.api.post(
        "/webhook/endpoints/update", {"id": made["id"], "types": ["nope"]}, session=key
    ).error(400, "invalid request: types: unknown event type 'nope'")
    [kept] = env.api.get(ENDPOINTS, f"owner={owner.address}", session=key).ok()["items"]
    assert kept == made  # nothing half-changed
    assert env.api.get(ENDPOINTS, f"owner={other.address}", session=theirs).ok()["items"] == []
