"""The merchant dashboard as a merchant uses it: Chromium against anvil, the owner's wallet
injected as ``window.ethereum`` (tests/node/dashboard_browser.mjs signs with the owner's key
through ethers and sends to anvil).

The walk: sign in with the wallet, find an invoice by the order id in its ``data``, refund
part of it, withdraw the rest, redeliver a webhook, download the export and parse it, visit
every view (screenshots in test-artifacts/dashboard/, axe-core with 0 violations), reload
(the session holds), sign out (the key is deregistered). The chain and the server are the
judges: the refund is confirmed by the watcher, the withdrawal lands at the owner, and the
session key's private half appears in no request the page made and no server log line.
"""

from __future__ import annotations

import json
import logging
import subprocess
import threading
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import httpx
import pytest
from checkout_browser_driver import ARTIFACTS, CHROMIUM, ROOT, require_browser, serve  # noqa: E402
from eth_account import Account
from evm_chain import Deployment
from evm_gateway import CHAIN_ID, USD, chain_config, drain, pay_token, watcher

from paycore import Gateway, Settings
from paycore.api.table import ROUTES
from paycore.chains.evm import plugin as evm_plugin
from paycore.subscriptions.requests import NewPlan, NewSubscription
from paycore.webhooks.dispatcher import Dispatcher  # noqa: E402
from paycore_storage import SqlStorage  # noqa: E402

pytestmark = [pytest.mark.node, pytest.mark.browser]  # anvil, node and chromium

SCRIPT = ROOT / "tests" / "node" / "dashboard_browser.mjs"


class Receiver:
    """The shop's webhook endpoint on loopback, down: every POST is answered 503."""

    def __init__(self) -> None:
        outer = self
        self.hits = 0

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the http.server name)
                self.rfile.read(int(self.headers.get("content-length", "0")))
                outer.hits += 1
                self.send_response(503)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                return None

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/paycore"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()


ORDER = "ORD-7731"


@pytest.mark.parametrize("framework", ["litestar", "flask"])
def test_a_merchant_signs_in_finds_refunds_withdraws_redelivers_and_exports(
    framework: str, evm: Deployment, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    require_browser()
    caplog.set_level(logging.DEBUG)
    storage = SqlStorage(f"sqlite:///{tmp_path}/paycore.db")  # a real file, as a shop runs
    batch_pay = evm.chain.deploy(evm.admin, "PaycoreBatchPay").address  # for the payouts
    settings = Settings(
        database_url="memory://",  # unused: the storage above is given
        prices={f"{CHAIN_ID}:{evm.token.address}": "1"},
        chains={CHAIN_ID: chain_config(evm, batch_pay=batch_pay)},
        webhook_allow_private=True,  # the shop's receiver below is on loopback
    )
    gateway = Gateway(settings, storage=storage, entry_points=False, plugins=[evm_plugin])
    receiver = Receiver()
    owner = Account.create()
    w3 = evm.chain.w3
    evm.chain.send_value(evm.admin, owner.address, 10 * 10**18)
    tusdc = f"{CHAIN_ID}:{evm.token.address}"
    gateway.webhooks.set(owner.address, receiver.url)
    others = [
        gateway.create_invoice(
            owner.address,
            {
                "value": "3",
                "chainId": CHAIN_ID,
                "description": f"Order {n}",
                "acceptedTokens": [tusdc],
                "data": {"orderId": f"ORD-{1000 + n}"},
            },
        )
        for n in range(3)
    ]
    target = gateway.create_invoice(
        owner.address,
        {
            "value": "10",
            "chainId": CHAIN_ID,
            "description": "Two mugs",
            "acceptedTokens": [tusdc],
            "data": {"orderId": ORDER, "symbol": {tusdc: "TUSDC"}},
        },
    )
    # a subscriber whose first period the worker has invoiced: the page shows its period
    silver = gateway.subscriptions.create_plan(
        owner.address,
        NewPlan(
            name="Silver",
            amount=Decimal("5"),
            chain_id=CHAIN_ID,
            accepted_tokens=(tusdc,),
            period_unit="month",
            period_count=1,
        ),
    )
    subscriber = gateway.subscriptions.create(
        owner.address, NewSubscription(silver.id, "customer-7")
    )
    gateway.subscriptions.tick()
    (period,) = gateway.subscriptions.view(subscriber.id).periods
    payee = Account.create().address
    w = watcher(gateway)
    pay_token(evm, evm.token, target.address, 10 * USD)
    drain(w)
    assert gateway.get_invoice(target.guid).status.value == "paid"
    # the shop's endpoint is down: the paid event's first attempt fails with its 503
    assert Dispatcher(storage, settings).run_once() == 1
    assert receiver.hits == 1
    artifacts = ARTIFACTS / "dashboard" / framework
    artifacts.mkdir(parents=True, exist_ok=True)
    try:
        with serve(framework, gateway) as base:
            # the owner's wallet contract, deployed as the wallet would (once, before the walk)
            query = {"ownerAddress": owner.address, "chainId": CHAIN_ID}
            unsigned = httpx.get(base + "/initWallet", params=query).json()
            fields = ("to", "data", "gas", "gasPrice", "nonce", "value", "chainId")
            signed = owner.sign_transaction({k: unsigned[k] for k in fields})
            w3.eth.wait_for_transaction_receipt(w3.eth.send_raw_transaction(signed.raw_transaction))
            config = {
                "base": base,
                "chromium": CHROMIUM,
                "artifacts": str(artifacts),
                "ownerKey": "0x" + bytes(owner.key).hex(),
                "rpcUrl": evm.chain.rpc_url,
                "orderId": ORDER,
                "refundAmount": "4",
                "email": "books@shop.example",
                "token": evm.token.address,
                "subscriber": "customer-7",
                "payoutTo": payee,
            }
            run = subprocess.run(
                ["node", str(SCRIPT), json.dumps(config)],
                capture_output=True,
                text=True,
                timeout=600,
                cwd=ROOT,
                check=False,
            )
            assert run.returncode == 0, run.stderr[-3000:]
            seen = json.loads(run.stdout.strip().splitlines()[-1])
            drain(w)
    finally:
        gateway.close()
        receiver.close()

    assert seen["problems"] == [], (seen["problems"], seen.get("failedAt"))
    assert "script-src 'self'" in seen["csp"] and "unsafe-inline" not in seen["csp"]
    assert "frame-ancestors 'none'" in seen["csp"]
    # every view, desktop and phone, light and dark: no accessibility violation
    assert "button-name" in seen["axeControl"]  # the audit can fail
    assert len(seen["audits"]) >= 40
    assert {k: v for k, v in seen["audits"].items() if v} == {}

    # signed in as the wallet's account; the list shows the owner's five invoices (the four
    # made here and the subscriber's first period)
    assert seen["ownerShown"] == owner.address
    assert seen["listed"] == 5
    # found by the order id alone: one invoice, the right one
    assert seen["found"] == [f"#/invoice/{target.guid}"]
    assert [o.guid for o in others if f"#/invoice/{o.guid}" in seen["found"]] == []
    # by the server's search where this paycore has one (GET /stats came with it), else
    # by the page's walk over the owner's pages
    urls = [r["url"] for r in seen["requests"]]
    if any(route.path == "/stats" for route in ROUTES):
        assert any("/invoices?" in u and f"q={ORDER}" in u for u in urls)
        assert any("/stats?" in u for u in urls)
        assert seen["searchSummary"] == "1 invoices"
    else:
        assert not any(f"q={ORDER}" in u for u in urls)
        assert seen["searchSummary"] == "1 found among the 5 newest invoices"

    # the refund: 4 TUSDC back to the payer, seen on chain and confirmed by the watcher
    after = gateway.get_invoice(target.guid)
    (made,) = after.refunds
    assert (made.status.value, made.amount, made.to) == ("confirmed", Decimal(4), evm.payer.address)
    assert w3.eth.get_transaction_receipt(seen["refundTx"])["status"] == 1
    # the withdrawal of the rest: the 6 left, to the owner
    assert seen["withdrawAmount"] == "6"
    assert w3.eth.get_transaction_receipt(seen["withdrawTx"])["status"] == 1
    assert evm.token.functions.balanceOf(owner.address).call() == 6 * USD

    # the redelivered webhook is queued again: a new retry schedule from the click on
    items = gateway.webhooks.deliveries(owner.address)[0]
    (delivery,) = [d for d in items if str(d.id) == seen["redelivered"]]
    assert delivery.status.value == "pending"
    assert delivery.retry_from > delivery.created_at
    assert seen["attemptsShown"] == "1 attempts"
    assert "503" in seen["attemptsText"]

    # the webhook endpoint added on the page: its secret shown once, rotated, edited, deleted
    endpoint_id = seen["endpointId"]
    assert endpoint_id.startswith("ep_")
    assert seen["endpointSecret"].startswith("whsec_")
    assert seen["rotatedSecret"].startswith("whsec_")
    assert seen["rotatedSecret"] != seen["endpointSecret"]
    assert seen["endpointRows"] == 3  # edit, rotate, delete of the one endpoint
    assert seen["endpointProblem"] == ""
    assert seen["endpointTypesShown"] == "invoice.expired, invoice.paid"  # as stored
    assert seen["endpointRowsAfter"] == 0
    assert gateway.webhooks.endpoints.of(owner.address) == []
    posted = {
        r["url"].rsplit("/", 1)[-1].split("?")[0]: json.loads(r["body"])
        for r in seen["requests"]
        if r["method"] == "POST" and "/webhook/endpoints" in r["url"]
    }
    assert posted["endpoints"]["types"] == ["invoice.paid"]
    assert posted["update"] == {
        "id": endpoint_id,
        "url": posted["endpoints"]["url"],
        "types": ["invoice.paid", "invoice.expired"],
        "enabled": False,
    }
    assert posted["rotate-secret"] == {"id": endpoint_id} == posted["delete"]

    # the app key added on the page with its consent, then removed by the owner
    app_key = seen["appKey"]
    assert seen["appKeyConsentText"].startswith(
        f"accept-app-key:{owner.address.lower()}:{app_key.lower()}:"
    )
    signed_calls = {
        r["url"].rsplit("/", 1)[-1]: json.loads(r["body"])
        for r in seen["requests"]
        if r["method"] == "POST" and r["url"].endswith(("/addNewAppKey", "/removeAppKey"))
    }
    assert signed_calls["addNewAppKey"]["appKeyAddress"] == app_key
    assert signed_calls["removeAppKey"]["appKeyAddress"] == app_key
    assert seen["appKeyRowsAfter"] == 0

    # the export, downloaded and parsed: the target's invoice row with its order's payment
    rows = [json.loads(line) for line in Path(seen["exportFile"]).read_text().splitlines()]
    invoices = {r["guid"]: r for r in rows if r["record"] == "invoice"}
    assert set(invoices) == {target.guid, period.guid, *(o.guid for o in others)}
    assert invoices[target.guid]["paid_amount"] == "10"
    payments = [r for r in rows if r["record"] == "payment"]
    assert [(p["guid"], p["amount"]) for p in payments] == [(target.guid, "10")]
    assert seen["exportStatus"] == f"Downloaded {len(rows)} rows."

    # Japanese words on ?lang=ja; a reload kept the session; sign-out forgot and deregistered
    assert seen["japaneseTitle"] == "請求書"
    assert seen["afterReload"] == owner.address
    assert seen["afterSignOut"] is None
    key = seen["session"]["key"]
    assert gateway.sessions.list(owner.address, session=None).keys == ()

    # e-mail notices: stored for the owner by the wallet's salted signature, sending still off
    with storage.transaction() as tx:
        stored = tx.get_email(owner.address, CHAIN_ID)
    assert stored is not None
    assert (stored.email, stored.enabled) == ("books@shop.example", False)
    assert seen["notify"].startswith("Saved: books@shop.example.")

    # subscriptions: the plan and subscriber made in the page are stored for the owner; the
    # worker's period links its invoice and the subscriber's page; the cancel took
    plans = gateway.subscriptions.list_plans(owner.address)
    assert {p.name for p in plans[0]} == {"Silver", "Gold"}
    (gold,) = [p for p in plans[0] if p.name == "Gold"]
    assert (gold.amount, gold.grace_days, gold.accepted_tokens) == (Decimal("9.90"), 3, (tusdc,))
    assert seen["newSubscription"] == "customer-42"
    assert sorted(seen["subscriptionsListed"]) == ["customer-42", "customer-7"]
    assert seen["periodInvoices"] == [f"#/invoice/{period.guid}"]
    assert seen["subscriberPage"].endswith(f"/subscription/{subscriber.id}")
    assert seen["cancelledBadge"] == "Cancelled"
    assert gateway.subscriptions.view(subscriber.id).subscription.status.value == "cancelled"

    # payouts: the bad row refused by its line; the good batch paid on chain and confirmed
    assert seen["badLines"] == [["3", "Line 3: address: not a 20-byte hex address"]]
    assert w3.eth.get_balance(payee) == 10**16
    assert seen["payoutCounts"] == "Pending: 0 · Confirmed: 1 · Failed: 0"
    assert seen["payoutBadges"] == ["badge confirmed"]
    (paid,) = gateway.payouts.get(owner.address, seen["payoutBatch"])[1]
    assert paid.status.value == "confirmed"

    # the wallet signed the registration, the e-mail setting and the app key's add and removal
    assert seen["walletCalls"].count("personal_sign") == 4
    assert seen["walletCalls"].count("eth_sendTransaction") == 3
    # the session key's private half is in no request and no server log line
    assert len(seen["requests"]) > 20
    signed = [r for r in seen["requests"] if "x-session-signature" in r["headers"]]
    assert len(signed) > 10
    assert key.lower() not in json.dumps(seen["requests"]).lower()
    assert key.lower() not in caplog.text.lower()
