"""Every success answer conforms to the schema the served OpenAPI document declares for it."""

from __future__ import annotations

from typing import Any

from conf_api import Answer
from conf_env import Env, invoice_body
from conf_keys import sign_text
from conf_schema import problems

WALLET_HELPERS = {
    "/getAddress",
    "/initWallet",
    "/deployWallet",
    "/getBalances",
    "/initWithdraw",
    "/history",
    "/withdraw",
    "/getFaucet",
}
#: Walked elsewhere against this same document: the salt-signed management calls and app
#: keys in test_conf_management.py (their bodies need a fresh signed salt each), the staking
#: helpers in tests/chains/evm/test_evm_staking.py and the refunds in
#: tests/chains/evm/test_evm_refunds.py (they answer only with a chain node behind them).
WALKED_ELSEWHERE = {
    "/refund",
    "/refund/cancel",
    "/changeCallbackUrl",
    "/setEmailNotifications",
    "/disableWalletIndex",
    "/enableWalletIndex",
    "/addNewAppKey",
    "/removeAppKey",
    "/getAppKeys",
    "/mevStakingInfo",
    "/mevStake",
    "/mevUnstake",
    "/mevClaim",
    # The delivery log, the export and payment links, in test_conf_merchant_tools.py (links
    # need a chain backend that derives addresses; the export is CSV, the link page HTML).
    "/webhook/deliveries",
    "/webhook/redeliver",
    "/webhook/redeliver-failed",
    "/export",
    "/link",
    "/links",
    "/link/disable",
    "/link/{id}",
    # Webhook endpoints, in test_conf_webhook_endpoints.py (real receivers on each store).
    "/webhook/endpoints",
    "/webhook/endpoints/update",
    "/webhook/endpoints/rotate-secret",
    "/webhook/endpoints/delete",
    # Subscriptions, in test_conf_subscriptions.py (plans need a chain backend that derives
    # addresses; the subscriber's page is HTML).
    "/plan",
    "/plans",
    "/subscription",
    "/subscriptions",
    "/subscriptions/{id}",
    "/subscription/cancel",
    "/subscription/{id}",
    # Batch payouts, in tests/chains/evm/test_evm_payouts_http.py (they need a node and the batch
    # contract on it).
    "/payouts",
    "/payouts/confirm",
    "/payouts/{id}",
    # The invoice's Server-Sent Events (text/event-stream): tests/realtime, under both
    # adapters' real servers.
    "/invoice/{guid}/events",
}
#: Not JSON at all: the WebSocket stream (tests/realtime) and the checkout page and its
#: files (tests/checkout) are checked where their protocol is.
NOT_JSON_PREFIXES = ("/ws", "/checkout")


class Checked:
    """Calls through ``env.api`` and checks each 2xx body against the document."""

    def __init__(self, env: Env) -> None:
        self.env = env
        self.paths: dict[str, Any] = env.api.get("/openapi.json").ok()["paths"]
        self.seen: set[tuple[str, str]] = set()

    def check(self, method: str, template: str, answer: Answer) -> Any:
        operation = self.paths[template][method.lower()]
        declared = operation["responses"]
        assert str(answer.status) in declared, (template, answer.status, list(declared))
        schema = declared[str(answer.status)]["content"]["application/json"]["schema"]
        body = answer.json()
        assert problems(body, schema) == [], (template, problems(body, schema))
        self.seen.add((method, template))
        return body


def test_success_answers_match_their_declared_schemas(env: Env) -> None:
    checked = Checked(env)
    api = env.api
    owner, [key] = env.merchant("m", "k")
    lower = owner.address.lower()

    pk = key.public_key
    body = {"ownerAddress": owner.address, "publicKey": pk, "signature": sign_text(owner, pk)}
    checked.check("POST", "/auth/register-pubkey", api.post("/auth/register-pubkey", body))
    invoice = checked.check(
        "POST", "/invoice", api.post("/invoice", invoice_body(value="1"), session=key)
    )
    env.deposit(invoice["address"], "0.001")
    guid = invoice["guid"]
    checked.check("GET", "/invoice/{guid}", api.get(f"/invoice/{guid}"))
    q = f"owner={owner.address}"
    checked.check("GET", "/invoices", api.get("/invoices", q, session=key))
    checked.check("GET", "/invoices", api.get("/invoices", q + "&limit=1", session=key))
    search = q + "&cursor=first&status=paid,init&q=order"
    checked.check("GET", "/invoices", api.get("/invoices", search, session=key))
    span = f"&from={env.clock.now - 86_400:.0f}&to={env.clock.now + 1:.0f}"
    checked.check("GET", "/stats", api.get("/stats", q + span, session=key))
    checked.check("GET", "/transactions", api.get("/transactions", q, session=key))
    checked.check("GET", "/prices", api.get("/prices"))
    events = checked.check("POST", "/poll/events", api.post("/poll/events", session=key))
    assert events["events"], "the deposit should have produced an event to check"
    reg = {"ownerAddress": owner.address, "signature": sign_text(owner, f"poll-register:{lower}")}
    checked.check("POST", "/poll/register", api.post("/poll/register", reg))
    checked.check("POST", "/invoice/challenge", api.post("/invoice/challenge", {"address": lower}))
    checked.check("GET", "/auth/pubkeys", api.get("/auth/pubkeys", q, session=key))
    url = "https://merchant.example.test/h"
    checked.check(
        "POST",
        "/auth/register-callback",
        api.post("/auth/register-callback", {"url": url}, session=key),
    )
    signed = {"ownerAddress": owner.address, "url": url}
    signed["signature"] = sign_text(owner, f"set-webhook:{lower}:{url}")
    checked.check("POST", "/webhook/set", api.post("/webhook/set", signed))
    for op in ("get", "clear"):
        body = {
            "ownerAddress": owner.address,
            "signature": sign_text(owner, f"{op}-webhook:{lower}"),
        }
        checked.check("POST", f"/webhook/{op}", api.post(f"/webhook/{op}", body))
    profile = {"name": "Mugs & Co", "logoUrl": "https://cdn.shop.example/logo.svg"}
    checked.check("POST", "/merchant/profile", api.post("/merchant/profile", profile, session=key))
    checked.check("GET", "/merchant/profile", api.get("/merchant/profile", q, session=key))
    checked.check(
        "POST",
        "/auth/deregister-pubkey",
        api.post("/auth/deregister-pubkey", {"publicKey": key.public_key}, session=key),
    )

    every = {(m.upper(), p) for p, item in checked.paths.items() for m in item}
    # The smart-wallet helpers answer only with a chain node behind them: tests/chains/evm checks
    # their answers against this same served document, on anvil.
    every = {(m, p) for m, p in every if p not in WALLET_HELPERS | WALKED_ELSEWHERE}
    every = {(m, p) for m, p in every if not p.startswith(NOT_JSON_PREFIXES)}
    assert every - checked.seen == set(), "add the missing operations to this walk"
