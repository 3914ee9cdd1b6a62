"""The merchant tools over HTTP, through the core and both adapters, on each storage: the
webhook delivery log and redelivery against a real receiver that is down and then up, the
accounting export loaded with the csv module and reconciled with the invoices, and payment
links from creation to the buyer's redirect.

Each answer is checked against the served OpenAPI document (``conf_schema``), the same
way test_conf_openapi_responses.py walks the other operations.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import hmac
import io
import json
import re
import socket
import threading
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from conf_api import Answer, Api
from conf_env import CHECKOUT, ETH_1, NATIVE, PRICES, USDC, USDC_1, Env, FakeClock
from conf_keys import account, sign_text
from conf_schema import problems
from conf_transport import open_transport

from paycore import ChainConfig, Gateway, Settings
from paycore.chains.evm import plugin as evm_plugin
from paycore.chains.records import DepositBatch
from paycore.domain.records import RateSource, Refund, RefundStatus, Transaction, TxType
from paycore.errors import InvalidInput
from paycore.links.requests import NewLink
from paycore.prices.pricing import value_at
from paycore.storage import Storage

FACTORY = "0x5FbDB2315678afecb367f032d93F642f64180aa3"
#: Chain 1 with a factory, so the EVM backend derives deposit addresses (no node is asked).
CHAINS = {
    1: ChainConfig(chain_id=1, name="ethereum", rpc_url="http://127.0.0.1:9", factory=FACTORY),
    137: ChainConfig(chain_id=137, name="polygon", native_symbol="POL"),
}
BACKENDS = ["memory", "sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
MakeTools = Callable[..., Env]


@pytest.fixture
def make_tools(transport_name: str, make_storage: Callable[..., Storage]) -> Iterator[MakeTools]:
    """An Env on the given storage backend, with chain 1 able to derive addresses."""
    stack = ExitStack()

    def make(backend: str = "memory", **overrides: Any) -> Env:
        clock = FakeClock()
        values: dict[str, Any] = {
            "database_url": "memory://",
            "prices": PRICES,
            "checkout_url": CHECKOUT,
            "chains": CHAINS,
        }
        values.update(overrides)
        gateway = Gateway(
            Settings(**values),
            storage=make_storage(backend),
            entry_points=False,
            plugins=[evm_plugin],
            clock=clock,
        )
        transport = stack.enter_context(open_transport(transport_name, gateway))
        return Env(Api(transport), gateway, clock)

    with stack:
        yield make


def checked(api: Api, answer: Answer, method: str, template: str, status: int = 200) -> Any:
    """The JSON body, after checking it against the served document's schema."""
    body = answer.ok(status)
    declared = api.get("/openapi.json").ok()["paths"][template][method.lower()]["responses"]
    schema = declared[str(status)]["content"]["application/json"]["schema"]
    assert problems(body, schema) == [], (template, problems(body, schema))
    return body


# -- a merchant's webhook endpoint ---------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Receiver:
    """A webhook endpoint on 127.0.0.1 that checks each signature the Standard Webhooks
    way (HMAC-SHA256 over ``{id}.{timestamp}.{body}``), written here from the rule rather
    than with paycore's signer. ``down()``: nothing listens on its port (refused)."""

    def __init__(self) -> None:
        self.port = _free_port()
        self.secret = ""
        self.got: list[dict[str, Any]] = []
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks"

    def up(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = self.rfile.read(int(self.headers["content-length"]))
                receiver.got.append({**receiver.verify(body, self.headers), "body": body})
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *_args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def verify(self, body: bytes, headers: Any) -> dict[str, Any]:
        webhook_id, stamp = headers["webhook-id"], headers["webhook-timestamp"]
        key = base64.b64decode(self.secret.removeprefix("whsec_"))
        mac = hmac.new(key, f"{webhook_id}.{stamp}.".encode() + body, hashlib.sha256).digest()
        expected = "v1," + base64.b64encode(mac).decode()
        return {"id": webhook_id, "verified": expected in headers["webhook-signature"].split()}

    def down(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver()
    yield found
    found.down()


def _invoice(env: Env, key: Any, **fields: Any) -> Any:
    """POST /invoice without an address: the owner's next deposit address is derived."""
    body = {"value": "10", "chainId": 1, "description": "order", "acceptedTokens": [ETH_1]}
    return env.api.post("/invoice", {**body, **fields}, session=key).ok(201)


def _webhook(env: Env, owner: Any, url: str) -> str:
    lower = owner.address.lower()
    body = {"ownerAddress": owner.address, "url": url}
    body["signature"] = sign_text(owner, f"set-webhook:{lower}:{url}")
    secret: str = env.api.post("/webhook/set", body).ok()["secret"]
    return secret


FAST_RETRIES = {
    "webhook_allow_private": True,
    "webhook_retry_schedule": (5, 30),
    "webhook_retry_every": 60.0,
    "webhook_retry_horizon": 100.0,
    "webhook_retry_jitter": 0.0,
    "webhook_timeout": 2.0,
    "webhook_lease": 5.0,
}


@pytest.mark.parametrize("backend", BACKENDS)
def test_deliveries_that_failed_while_the_receiver_was_down_are_redelivered(
    make_tools: MakeTools, backend: str, receiver: Receiver
) -> None:
    """Down: every attempt is refused and logged (time, no status, the error, latency)
    until the deliveries fail. Up: one redelivered by id, the rest by "every failed one
    since", each arriving once, correctly signed, with the webhook-id it failed with."""
    env = make_tools(backend, **FAST_RETRIES)
    owner, [key] = env.merchant("m", "k")
    receiver.secret = _webhook(env, owner, receiver.url)
    since = int(env.clock.now)
    first = _invoice(env, key)
    second = _invoice(env, key)
    assert first["address"] != second["address"]
    env.deposit(first["address"], "0.002")  # partialPaid
    env.deposit(first["address"], "0.003")  # paid
    env.deposit(second["address"], "0.005")  # paid
    dispatcher = env.gateway.webhooks.dispatcher()
    for _ in range(8):  # attempts at +0, +5, +35, +95; the next would pass the horizon
        dispatcher.run_once(limit=50)
        env.clock.advance(30)
    q = f"owner={owner.address}"
    log = checked(
        env.api, env.api.get("/webhook/deliveries", q, session=key), "GET", "/webhook/deliveries"
    )
    assert log["total"] == 3 and {d["status"] for d in log["items"]} == {"failed"}
    failed_ids = {d["id"]: d["webhookId"] for d in log["items"]}
    assert {d["guid"] for d in log["items"]} == {first["guid"], second["guid"]}
    for item in log["items"]:
        attempts = item["attempts"]
        # The first invoice's second event waited for its first, on the same horizon.
        assert len(attempts) >= (1 if item["id"] == 2 else 3), item
        for attempt in attempts:
            assert attempt["statusCode"] is None and attempt["url"] == receiver.url
            assert attempt["error"] and attempt["latencyMs"] >= 0
            assert attempt["attemptedAt"] >= since * 1000
    mine = env.api.get("/webhook/deliveries", f"{q}&guid={first['guid']}", session=key).ok()
    assert mine["total"] == 2 and {d["guid"] for d in mine["items"]} == {first["guid"]}
    [oldest] = [d for d in mine["items"] if d["id"] == min(x["id"] for x in mine["items"])]
    none = env.api.get("/webhook/deliveries", f"{q}&status=delivered", session=key).ok()
    assert none["total"] == 0

    far = {"since": 10**18 - 1}  # the largest since the schema takes: nothing failed after it
    answer = env.api.post("/webhook/redeliver-failed", far, session=key).ok()
    assert answer["redelivered"] == 0

    receiver.up()
    again = checked(
        env.api,
        env.api.post("/webhook/redeliver", {"id": oldest["id"]}, session=key),
        "POST",
        "/webhook/redeliver",
    )
    assert again["status"] == "pending" and again["webhookId"] == oldest["webhookId"]
    assert dispatcher.run_once(limit=50) == 1
    assert [(r["id"], r["verified"]) for r in receiver.got] == [(oldest["webhookId"], True)]

    redone = checked(
        env.api,
        env.api.post("/webhook/redeliver-failed", {"since": since}, session=key),
        "POST",
        "/webhook/redeliver-failed",
    )
    assert redone == {"ownerAddress": owner.address, "since": since, "redelivered": 2}
    while dispatcher.run_once(limit=50):
        pass
    assert Counter(r["id"] for r in receiver.got) == Counter(failed_ids.values())
    assert all(r["verified"] for r in receiver.got)
    paid = [
        json.loads(r["body"])["payments"] for r in receiver.got if r["id"] != oldest["webhookId"]
    ]
    assert sorted(len(p) for p in paid) == [1, 2]  # the first invoice's events in order
    done = env.api.get("/webhook/deliveries", f"{q}&status=delivered", session=key).ok()
    assert done["total"] == 3
    assert all(d["attempts"][-1]["statusCode"] == 200 for d in done["items"])


def test_the_delivery_log_refuses_bad_input_and_other_owners(make_tools: MakeTools) -> None:
    env = make_tools()
    owner, [key] = env.merchant("m", "k")
    other, [theirs] = env.merchant("o", "k")
    q = f"owner={owner.address}"
    env.api.get("/webhook/deliveries", f"{q}&status=lost", session=key).error(
        400, "invalid request: status: must be one of pending, delivered, failed"
    )
    env.api.get("/webhook/deliveries", f"owner={other.address}", session=key).error(403)
    env.api.post("/webhook/redeliver", {"id": 1}, session=key).error(404, "delivery 1 not found")
    env.api.post("/webhook/redeliver", {"id": "x"}, session=key).error(400, prefix="invalid")
    env.api.post("/webhook/redeliver-failed", {}, session=key).error(
        400, "invalid request: since: required"
    )
    env.api.post("/webhook/redeliver-failed", {"since": 0}).error(401)
    env.api.post(
        "/webhook/redeliver-failed", {"since": 0, "ownerAddress": owner.address}, session=theirs
    ).error(403)


# -- the accounting export -----------------------------------------------------------------------


def _export(env: Env, key: Any, query: str) -> Answer:
    return env.api.get("/export", query, session=key)


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_csv_export_reconciles_with_the_invoices(make_tools: MakeTools, backend: str) -> None:
    """Loaded with the csv module: one row per invoice, payment and withdrawal, and per
    invoice the counted payments' fiat values add up to its paid amount exactly; every
    payment carries its rate (times the amount, its fiat value), source, tx hash and block
    time. Batches of 3 rows, so every section is read in several keyset batches."""
    env = make_tools(backend, export_batch=3)
    owner, [key] = env.merchant("m", "k")
    other, [theirs] = env.merchant("o", "k")
    start = int(env.clock.now)
    made = []
    for n in range(5):
        made.append(_invoice(env, key, description=f"=order {n}"))
        env.clock.advance(10)
    env.deposit(made[0]["address"], "0.002")
    env.deposit(made[0]["address"], "0.004")  # overpaid: 12 of 10
    env.deposit(made[1]["address"], "0.005")
    env.deposit(made[2]["address"], "3", token=USDC)  # not accepted: recorded, not counted
    env.clock.advance(4000)
    env.deposit(made[3]["address"], "0.001")  # a payment in a later hour
    _invoice(env, theirs)  # another owner's: never exported
    withdrawal = Transaction(
        TxType.WITHDRAW, "0x" + "77" * 32, 2, 1, NATIVE, owner.address, Decimal("0.01"),
        Decimal(20), int(env.clock.now), owner.address, to=account("payee").address,
        valuation=env.gateway.prices.rate(ETH_1),
    )  # fmt: skip
    env.gateway.ingest(DepositBatch(1, [], withdrawals=[withdrawal]))

    answer = _export(env, key, f"owner={owner.address}")
    assert answer.status == 200, answer.body[:300]
    assert answer.headers["content-type"].startswith("text/csv")
    assert "attachment" in answer.headers["content-disposition"]
    rows = list(csv.DictReader(io.StringIO(answer.text, newline="")))
    kinds = Counter(r["record"] for r in rows)
    assert kinds == {"invoice": 5, "payment": 5, "withdrawal": 1}
    invoices = {r["guid"]: r for r in rows if r["record"] == "invoice"}
    assert set(invoices) == {i["guid"] for i in made}
    counted: dict[str, Decimal] = defaultdict(Decimal)
    for row in rows:
        if row["record"] != "payment":
            continue
        assert row["guid"] in invoices and row["tx_hash"].startswith("0x")
        assert row["block_time"] == row["time"] and int(row["block_time"]) >= start
        rate, amount = Decimal(row["rate"]), Decimal(row["amount"])
        assert value_at(rate, amount) == Decimal(row["fiat_value"])
        assert (row["rate_source"], row["vs_currency"], row["rate_time"]) == (
            "static",
            "usd",
            row["time"],  # a configured price is as of the moment it values
        )
        if row["counted"] == "true":
            counted[row["guid"]] += Decimal(row["fiat_value"])
        else:  # the USDC sent to an ETH-only invoice: valued, recorded, not counted
            assert (row["guid"], row["token"], row["fiat_value"]) == (made[2]["guid"], USDC_1, "3")
    for guid, row in invoices.items():
        paid = Decimal(env.api.get(f"/invoice/{guid}").ok()["paidAmount"])
        assert Decimal(row["paid_amount"]) == paid == counted[guid], guid
    assert counted[made[0]["guid"]] == Decimal(12)
    assert invoices[made[0]["guid"]]["description"] == "'=order 0"  # no formula in a sheet
    [out] = [r for r in rows if r["record"] == "withdrawal"]
    assert (out["to"], out["amount"], out["rate_source"]) == (
        account("payee").address,
        "0.01",
        "static",
    )
    order = [r["record"] for r in rows]
    assert order == sorted(order, key=["invoice", "payment", "refund", "withdrawal"].index)

    lines = _export(env, key, f"owner={owner.address}&format=jsonl")
    assert lines.headers["content-type"].startswith("application/x-ndjson")
    parsed = [json.loads(line) for line in lines.text.splitlines()]
    assert [(p["record"], p["guid"], p["tx_hash"]) for p in parsed] == [
        (r["record"], r["guid"] or None, r["tx_hash"] or None) for r in rows
    ]
    window = _export(env, key, f"owner={owner.address}&from={start + 10}&to={start + 30}")
    ranged = list(csv.DictReader(io.StringIO(window.text, newline="")))
    assert [r["guid"] for r in ranged] == [made[1]["guid"], made[2]["guid"]]
    later = _export(
        env, key, f"owner={owner.address}&from={start + 1000}&records=payments,withdrawals"
    )
    late = list(csv.DictReader(io.StringIO(later.text, newline="")))
    assert [r["record"] for r in late] == ["payment", "withdrawal"]
    assert late[0]["guid"] == made[3]["guid"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_refund_paid_out_is_a_refund_row_at_its_own_rate(
    make_storage: Callable[..., Storage], backend: str
) -> None:
    """The watcher's withdrawal that pays a pending refund is exported in the refund
    section, not among withdrawals: the refund's id, its invoice, its vsValue and the rate
    that made it, and the transfer on chain."""
    clock = FakeClock()
    settings = Settings(database_url="memory://", prices=PRICES, chains=CHAINS)
    gw = Gateway(settings, storage=make_storage(backend), entry_points=False, clock=clock)
    owner, payer = account("owner:refund").address, account("payer:refund").address
    made = gw.create_invoice(
        owner,
        {"value": "10", "chainId": 1, "description": "d", "acceptedTokens": [ETH_1],
         "address": account("deposit:refund").address},
    )  # fmt: skip
    refund = Refund(
        "r-1", made.guid, owner, 1, NATIVE, payer, Decimal("0.001"), Decimal("2.5"),
        Decimal(2500), RateSource.PAYMENT, RefundStatus.PENDING, int(clock.now),
    )  # fmt: skip
    with gw.storage.transaction() as tx:
        tx.insert_refund(refund)
    clock.advance(100)
    paid_out = Transaction(
        TxType.WITHDRAW, "0x" + "99" * 32, 4, 1, NATIVE, owner, Decimal("0.001"), Decimal(2),
        int(clock.now), owner, to=payer, valuation=gw.prices.rate(ETH_1),
    )  # fmt: skip
    gw.ingest(DepositBatch(1, [], withdrawals=[paid_out]))
    rows = list(gw.accounting.rows(owner, records=("refunds", "withdrawals")))
    assert [r["record"] for r in rows] == ["refund"]
    [row] = rows
    assert (row["reference"], row["guid"], row["fiat_value"], row["rate"]) == (
        "r-1",
        made.guid,
        "2.5",
        "2500",
    )
    assert (row["rate_source"], row["vs_currency"], row["to"]) == ("refund:payment", "usd", payer)
    assert (row["tx_hash"], row["log_index"], row["block_time"]) == (
        paid_out.tx_hash,
        4,
        int(clock.now),
    )
    gw.close()


def test_the_export_refuses_bad_input_with_one_line(make_tools: MakeTools) -> None:
    env = make_tools()
    owner, [key] = env.merchant("m", "k")
    other, _ = env.merchant("o", "k")
    q = f"owner={owner.address}"
    _export(env, key, f"{q}&format=xml").error(
        400, "invalid request: format: must be one of csv, jsonl"
    )
    _export(env, key, f"{q}&from=20&to=20").error(400, "invalid request: to: must be after from")
    _export(env, key, f"{q}&records=payments,coupons").error(400, prefix="invalid request: records")
    _export(env, key, f"{q}&from=-1").error(400, prefix="invalid request: from")
    _export(env, key, f"owner={other.address}").error(403)
    env.api.get("/export", q).error(401)
    empty = _export(env, key, q)
    assert empty.status == 200 and empty.text.startswith("record,time,time_utc,guid")
    assert len(empty.text.splitlines()) == 1  # the header alone
    assert _export(env, key, f"{q}&format=jsonl").body == b""


# -- payment links --------------------------------------------------------------------------------


def _link(env: Env, key: Any, **fields: Any) -> Any:
    body = {"chainId": 1, "description": "A mug", "acceptedTokens": [ETH_1, USDC_1], **fields}
    return checked(env.api, env.api.post("/link", body, session=key), "POST", "/link", 201)


def _open(env: Env, link_id: str, query: str | None = None) -> Answer:
    return env.api.get(f"/link/{link_id}", query)


def _invoice_behind(env: Env, answer: Answer) -> Any:
    """The invoice a 303 sends the buyer to, read back through the public API."""
    assert answer.status == 303, (answer.status, answer.body[:300])
    location = answer.headers["location"]
    assert location.startswith(CHECKOUT + "/?invoice=")
    assert answer.headers["cache-control"] == "no-store"
    return env.api.get(f"/invoice/{location.rsplit('=', 1)[1]}").ok()


def test_a_fixed_link_makes_a_fresh_invoice_for_each_buyer(make_tools: MakeTools) -> None:
    env = make_tools()
    owner, [key] = env.merchant("m", "k")
    link = _link(env, key, amount="25", data={"sku": "mug-1"}, deadlineSecs=900)
    assert link["state"] == "active" and link["uses"] == 0 and link["amount"] == "25"
    # Beside the checkout page: CHECKOUT is https://pay.example.test/checkout.
    assert link["url"] == f"https://pay.example.test/link/{link['id']}"
    first = _invoice_behind(env, _open(env, link["id"]))
    second = _invoice_behind(env, _open(env, link["id"]))
    assert first["guid"] != second["guid"] and first["address"] != second["address"]
    for made in (first, second):
        assert (made["owner"], made["value"], made["status"]) == (owner.address, "25", "init")
        assert made["acceptedTokens"] == [ETH_1, USDC_1] and made["description"] == "A mug"
        assert made["data"] == {"sku": "mug-1", "paymentLink": link["id"]}
        assert made["deadline"] - made["createdAt"] == 900
    page = checked(
        env.api, env.api.get("/links", f"owner={owner.address}", session=key), "GET", "/links"
    )
    assert page["total"] == 1 and page["items"][0]["uses"] == 2
    head = env.api.call("HEAD", f"/link/{link['id']}")
    assert head.status == 200 and "location" not in head.headers
    assert (
        env.api.get("/links", f"owner={owner.address}", session=key).ok()["items"][0]["uses"] == 2
    )
    _open(env, link["id"], "amount=30").error(
        400, "invalid request: amount: this link's amount is fixed"
    )


def test_a_buyer_chosen_amount_goes_through_a_scriptless_form(make_tools: MakeTools) -> None:
    env = make_tools()
    _, [key] = env.merchant("m", "k")
    link = _link(env, key, minAmount="5", maxAmount="500", description="Tip <b>us</b> & co")
    form = _open(env, link["id"])
    assert form.status == 200 and form.headers["content-type"].startswith("text/html")
    policy = form.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "script-src" not in policy
    assert "form-action 'self' https://pay.example.test" in policy
    page = form.text
    assert "<script" not in page and not re.search(r"\son\w+=", page)  # no handler either
    assert "Tip &lt;b&gt;us&lt;/b&gt; &amp; co" in page and "<b>us" not in page
    assert 'name="amount"' in page and f'action="{link["id"]}"' in page
    assert 'href="../checkout/assets/checkout.css"' in page
    made = _invoice_behind(env, _open(env, link["id"], "amount=12.50"))
    assert Decimal(made["value"]) == Decimal("12.5")
    for bad, reason in [
        ("amount=4.99", "amount: must be between 5 and 500"),
        ("amount=500.01", "amount: must be between 5 and 500"),
        ("amount=1e3", 'amount: must be a decimal string such as "12.50"'),
        ("amount=-5", 'amount: must be a decimal string such as "12.50"'),
    ]:
        _open(env, link["id"], bad).error(400, f"invalid request: {reason}")
    assert env.gateway.links.get(link["id"]).uses == 1  # the refusals counted nothing


def test_a_link_stops_at_its_limit_expiry_or_when_disabled(make_tools: MakeTools) -> None:
    env = make_tools()
    owner, [key] = env.merchant("m", "k")
    _, [theirs] = env.merchant("o", "k")
    capped = _link(env, key, amount="1", maxUses=2)
    dated = _link(env, key, amount="1", expiresAt=int(env.clock.now) + 60)
    for _ in range(2):
        _invoice_behind(env, _open(env, capped["id"]))
    _open(env, capped["id"]).error(
        410, f"payment link {capped['id']} has made all the invoices it may"
    )
    _invoice_behind(env, _open(env, dated["id"]))
    env.clock.advance(60)
    _open(env, dated["id"]).error(410, f"payment link {dated['id']} has expired")
    open_one = _link(env, key, amount="1")
    env.api.post("/link/disable", {"id": open_one["id"]}, session=theirs).error(
        404, f"payment link {open_one['id']} not found"
    )
    off = checked(
        env.api,
        env.api.post("/link/disable", {"id": open_one["id"]}, session=key),
        "POST",
        "/link/disable",
    )
    assert off["state"] == "disabled" and off["disabledAt"] == int(env.clock.now)
    _open(env, open_one["id"]).error(410, f"payment link {open_one['id']} is disabled")
    _open(env, "no-such-link").error(404, "payment link no-such-link not found")
    made = env.gateway.list_invoices(owner=owner.address)
    assert isinstance(made, list) and len(made) == 3  # every refusal made nothing


def test_a_busy_link_is_told_to_wait(make_tools: MakeTools) -> None:
    env = make_tools(link_open_limit=2, link_open_window=60)
    _, [key] = env.merchant("m", "k")
    link = _link(env, key, amount="1")
    _invoice_behind(env, _open(env, link["id"]))
    _invoice_behind(env, _open(env, link["id"]))
    busy = _open(env, link["id"])
    busy.error(429, f"too many requests: payment link {link['id']} is busy, retry later")
    assert busy.headers["retry-after"] == "60"
    env.clock.advance(60)
    _invoice_behind(env, _open(env, link["id"]))


def test_creating_a_link_checks_every_field(make_tools: MakeTools) -> None:
    env = make_tools()
    owner, [key] = env.merchant("m", "k")
    no_backend = (
        "every invoice of a link needs a deposit address: no chain backend derives deposit "
        "addresses on 137 (give chain 137 a factory and an rpc_url in PAYCORE_CHAINS, "
        "docs/chains.md)"
    )
    cases = [
        ({"amount": "1", "minAmount": "1", "maxAmount": "2"},
         "amount: give amount, or minAmount and maxAmount, not both"),
        ({"minAmount": "1"}, "maxAmount: required without amount"),
        ({"minAmount": "0", "maxAmount": "2"}, "minAmount: must be above 0"),
        ({"minAmount": "3", "maxAmount": "2"}, "maxAmount: must not be below minAmount"),
        ({"amount": "1", "expiresAt": int(env.clock.now)}, "expiresAt: must be in the future"),
        ({"amount": "1", "maxUses": 0}, "maxUses: must be at least 1"),
        ({"amount": "1", "acceptedTokens": ["137:" + NATIVE], "chainId": 137},
         f"chainId: {no_backend}"),
        ({"amount": "1", "acceptedTokens": ["137:" + NATIVE]},
         "acceptedTokens[0]: is on chain 137, the invoice on 1"),
        ({"amount": "1", "vsCurrency": "xyz"}, "vsCurrency: must be one of usd"),
        ({"amount": "1", "colour": "red"}, "colour: is not a field of this request"),
    ]  # fmt: skip
    for fields, reason in cases:
        body = {"chainId": 1, "description": "d", "acceptedTokens": [ETH_1], **fields}
        env.api.post("/link", body, session=key).error(400, f"invalid request: {reason}")
    assert env.gateway.links.list(owner.address)[1] == 0  # nothing half-written
    env.api.post(
        "/link", {"chainId": 1, "description": "d", "acceptedTokens": [ETH_1], "amount": "1"}
    ).error(401)


@pytest.mark.parametrize(
    "backend", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
)
def test_concurrent_buyers_never_get_more_invoices_than_the_limit(
    make_storage: Callable[..., Storage], backend: str
) -> None:
    """Sixteen buyers open a link that may make four invoices at the same moment, through
    ``Gateway.links.open`` on a real database: four invoices exist, the rest were told 410,
    and a failure while making an invoice (no address can be derived) counts no use."""
    storage = make_storage(backend)
    settings = Settings(
        database_url="memory://", prices=PRICES, chains=CHAINS, checkout_url=CHECKOUT
    )
    gw = Gateway(settings, storage=storage, entry_points=False, plugins=[evm_plugin])
    owner = account("owner:race").address
    link = gw.links.create(owner, NewLink(1, "race", (ETH_1,), amount=Decimal(2), max_uses=4))
    barrier = threading.Barrier(16)

    def buy(_: int) -> str:
        barrier.wait(timeout=30)
        try:
            return gw.links.open(link.id).guid
        except Exception as exc:  # noqa: BLE001 - the refusal is the point
            return type(exc).__name__

    with ThreadPoolExecutor(16) as pool:
        got = Counter(pool.map(buy, range(16)))
    assert got["Gone"] == 12 and len([g for g in got if g != "Gone"]) == 4
    made = gw.list_invoices(owner=owner)
    assert isinstance(made, list) and len(made) == 4
    assert len({i.address for i in made}) == 4
    assert gw.links.get(link.id).uses == 4

    second = gw.links.create(owner, NewLink(1, "broken", (ETH_1,), amount=Decimal(1)))
    backend_ = gw.chains.pop(1)
    try:
        with pytest.raises(InvalidInput):
            gw.links.open(second.id)
    finally:
        gw.chains[1] = backend_
    assert gw.links.get(second.id).uses == 0
    assert len(gw.list_invoices(owner=owner)) == 4  # type: ignore[arg-type]
    gw.close()
