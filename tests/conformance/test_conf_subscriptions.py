"""Subscriptions over HTTP, through the core and both adapters: plans and subscriptions made
with the owner's session (idempotently), the worker's period invoices read back with their
invoices, the status moved by a payment, the subscriber's public page, cancelling, and each
bad field refused with one line. Answers are checked against the served OpenAPI document."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import pytest
from conf_api import Api
from conf_env import CHECKOUT, ETH_1, PRICES, Env, FakeClock
from conf_schema import problems
from conf_transport import open_transport

from paycore import ChainConfig, Gateway, Settings
from paycore.chains.evm import plugin as evm_plugin
from paycore.storage import Storage

FACTORY = "0x5FbDB2315678afecb367f032d93F642f64180aa3"
CHAINS = {
    1: ChainConfig(chain_id=1, name="ethereum", rpc_url="http://127.0.0.1:9", factory=FACTORY),
    137: ChainConfig(chain_id=137, name="polygon", native_symbol="POL"),
}
PLAN = {
    "name": "Gold <b>",
    "amount": "10",
    "chainId": 1,
    "acceptedTokens": [ETH_1],
    "periodUnit": "month",
    "periodCount": 1,
    "graceDays": 3,
}


@pytest.fixture
def env(transport_name: str, make_storage: Callable[..., Storage]) -> Iterator[Env]:
    with ExitStack() as stack:
        clock = FakeClock()
        settings = Settings(
            database_url="memory://", prices=PRICES, checkout_url=CHECKOUT, chains=CHAINS
        )
        gateway = Gateway(
            settings,
            storage=make_storage("memory"),
            entry_points=False,
            plugins=[evm_plugin],
            clock=clock,
        )
        transport = stack.enter_context(open_transport(transport_name, gateway))
        yield Env(Api(transport), gateway, clock)


def checked(env: Env, answer: Any, method: str, template: str, status: int = 200) -> Any:
    body = answer.ok(status)
    declared = env.api.get("/openapi.json").ok()["paths"][template][method.lower()]
    schema = declared["responses"][str(status)]["content"]["application/json"]["schema"]
    assert problems(body, schema) == [], (template, problems(body, schema))
    return body


def test_a_subscription_from_plan_to_paid_period_and_cancel(env: Env) -> None:
    owner, [key] = env.merchant("subs", "k")
    headers = {"idempotency-key": "plan-gold"}
    plan = checked(
        env, env.api.post("/plan", PLAN, session=key, headers=headers), "POST", "/plan", 201
    )
    again = env.api.post("/plan", PLAN, session=key, headers=headers)
    assert again.ok(201) == plan and again.headers["idempotent-replayed"] == "true"
    plans = checked(
        env, env.api.get("/plans", f"owner={owner.address}", session=key), "GET", "/plans"
    )
    assert [p["id"] for p in plans["items"]] == [plan["id"]] and plans["total"] == 1
    assert (plan["currency"], plan["trialDays"], plan["graceDays"]) == ("usd", 0, 3)

    body = {"planId": plan["id"], "reference": "cust-1", "email": "c1@shop.example.test"}
    sub = checked(
        env, env.api.post("/subscription", body, session=key), "POST", "/subscription", 201
    )
    assert sub["status"] == "pending" and sub["url"].endswith(f"/subscription/{sub['id']}")
    env.gateway.subscriptions.tick()  # the worker's pass: period 0 is due at once

    path = f"/subscriptions/{sub['id']}"
    detail = checked(
        env, env.api.get(path, f"owner={owner.address}", session=key), "GET", "/subscriptions/{id}"
    )
    [period] = detail["periods"]
    invoice = period["invoice"]
    assert (invoice["value"], invoice["owner"], invoice["status"]) == ("10", owner.address, "init")
    assert invoice["data"]["subscription"] == sub["id"]

    page = env.api.get(f"/subscription/{sub['id']}")
    assert page.status == 200 and page.headers["content-type"].startswith("text/html")
    assert "script-src" not in page.headers["content-security-policy"]
    assert page.headers["content-security-policy"].startswith("default-src 'none'")
    assert invoice["paymentUrl"] in page.text and "Gold &lt;b&gt;" in page.text
    assert "<b>" not in page.text

    env.deposit(invoice["address"], "0.005")  # 10 usd at 2000 usd per ETH
    env.gateway.subscriptions.tick()
    listed = checked(
        env, env.api.get("/subscriptions", f"owner={owner.address}", session=key),
        "GET", "/subscriptions",
    )  # fmt: skip
    assert [s["status"] for s in listed["items"]] == ["active"]
    paid_page = env.api.get(f"/subscription/{sub['id']}", headers={"accept-language": "de"})
    assert "bezahlt" in paid_page.text and invoice["paymentUrl"] not in paid_page.text

    cancel = {"id": sub["id"]}
    done = checked(
        env, env.api.post("/subscription/cancel", cancel, session=key),
        "POST", "/subscription/cancel",
    )  # fmt: skip
    assert done["status"] == "cancelled" and done["cancelledAt"] is not None
    env.api.post("/subscription/cancel", cancel, session=key).error(
        409, f"subscription {sub['id']} is already cancelled"
    )
    other, [other_key] = env.merchant("subs-other", "k")
    env.api.post("/subscription/cancel", cancel, session=other_key).error(
        404, f"subscription {sub['id']} not found"
    )
    env.api.get(path, f"owner={other.address}", session=other_key).error(404)
    env.api.get("/subscription/sub_nope").error(404, "subscription sub_nope not found")


def test_every_bad_field_is_refused_with_one_line_and_nothing_stored(env: Env) -> None:
    owner, [key] = env.merchant("subs-bad", "k")
    cases = [
        ({"amount": "0"}, "amount: must be above 0"),
        ({"amount": "ten"}, "amount:"),
        ({"periodUnit": "week"}, "periodUnit:"),
        ({"periodCount": 0}, "periodCount: must be between 1 and 12 months"),
        ({"graceDays": 91}, "graceDays: must be at most 90"),
        ({"currency": "xyz"}, "currency: must be one of usd"),
        ({"chainId": 137, "acceptedTokens": ["137:0x0000000000000000000000000000000000000000"]},
         "chainId: every period's invoice needs a deposit address"),
        ({"colour": "red"}, "colour: is not a field of this request"),
    ]  # fmt: skip
    for fields, reason in cases:
        text = env.api.post("/plan", {**PLAN, **fields}, session=key).error(400)
        assert text.startswith(f"invalid request: {reason}") and "\n" not in text, text
    assert env.gateway.subscriptions.list_plans(owner.address)[1] == 0
    env.api.post("/plan", PLAN).error(401)
    env.api.post("/subscription", {"planId": "plan_x", "reference": "r"}, session=key).error(
        404, "plan plan_x not found"
    )
    env.api.post("/subscription", {"planId": "plan_x"}, session=key).error(400)
    assert env.gateway.subscriptions.list(owner.address)[1] == 0


def test_an_endpoint_that_names_subscription_events_gets_them(env: Env) -> None:
    owner, [key] = env.merchant("subs-hooks", "k")
    env.api.post(
        "/webhook/endpoints",
        {"url": "https://merchant.example.test/subs", "types": ["subscription.created"]},
        session=key,
    ).ok(201)
    plan = env.api.post("/plan", PLAN, session=key).ok(201)
    sub = env.api.post("/subscription", {"planId": plan["id"], "reference": "c"}, session=key)
    sub_id = sub.ok(201)["id"]
    with env.gateway.storage.transaction() as tx:
        deliveries, total = tx.list_deliveries(owner.address, guid=sub_id)
    assert total == 1
    assert '"type":"subscription.created"' in deliveries[0].body
