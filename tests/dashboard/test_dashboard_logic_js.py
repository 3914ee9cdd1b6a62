"""The dashboard's own logic, run in Node on the shipped modules: what the fallback search
finds, how the chart sums deposits per UTC day, which symbol a token is shown with, and
the billing views' logic: the plan a form makes, the bad rows of a refused payout upload, the
order a batch's transactions are sent in, and the webhook endpoint bodies."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from node_oracles import run_oracle

pytestmark = pytest.mark.node
ROOT = Path(__file__).resolve().parents[2]
TOKEN = "31337:0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512"


def node(tasks: list[dict[str, Any]]) -> list[Any]:
    return run_oracle("dashboard_logic.mjs", None, tasks)


def test_the_search_matches_order_ids_in_data_descriptions_and_ids() -> None:
    invoice = {"guid": "9629d9e4-aaaa", "description": "Two Mugs", "data": {"orderId": "ORD-7731"}}
    texts = ["ord-7731", "ORD-77", "mugs", "9629D9E4", "", "  ", "ORD-7732", "cups"]
    got = node([{"op": "matches", "invoice": invoice, "text": t} for t in texts])
    assert got == [True, True, True, True, True, True, False, False]


def test_deposits_are_summed_per_utc_day_and_nothing_else_counts() -> None:
    day = 86400
    now = 20_000 * day + 3600  # one hour into day 20000
    items = [
        {"type": "deposit", "timestamp": now, "vsValue": 10},
        {"type": "deposit", "timestamp": 20_000 * day, "vsValue": 2.5},  # midnight: same day
        {"type": "deposit", "timestamp": 20_000 * day - 1, "vsValue": 4},  # the day before
        {"type": "withdraw", "timestamp": now, "vsValue": 99},
        {"type": "refund", "timestamp": now, "vsValue": 99},
        {"type": "deposit", "timestamp": 19_990 * day, "vsValue": 7},  # outside 3 days
        {"type": "deposit", "timestamp": now, "vsValue": None},  # unpriced
    ]
    (series,) = node([{"op": "perDay", "items": items, "now": now, "days": 3}])
    assert series == [
        {"day": 19_998, "value": 0},
        {"day": 19_999, "value": 4},
        {"day": 20_000, "value": 12.5},
    ]


def test_a_token_is_named_by_tokeninfo_then_the_merchant_hint_then_its_address() -> None:
    tasks = [
        {"invoice": {"token": TOKEN, "tokenInfo": {TOKEN: {"symbol": "USDC"}}, "data": {}}},
        {"invoice": {"token": TOKEN, "data": {"symbol": {TOKEN: "TUSDC"}}}},
        {"invoice": {"token": TOKEN, "data": {"symbol": "TUSDC"}}},
        {"invoice": {"token": "1:0x0", "data": {"symbol": "TUSDC"}}},
        {"invoice": {"token": TOKEN, "data": {}}},
    ]
    got = node([{"op": "symbol", "tokenId": TOKEN, **t} for t in tasks])
    assert got == ["USDC", "TUSDC", "TUSDC", "0xe7f1725E…", "0xe7f1725E…"]


def test_a_refused_upload_is_read_back_row_by_row_with_its_line_numbers() -> None:
    text = (
        "invalid request: rows: 23 bad row(s)\n"
        "line 3: address: not a 20-byte hex address\n"
        "line 5: amount: has more than 6 decimal places for this token\n"
        "line 6: token: no token 'DOGE' known on chain 1\n"
        "... and 20 more"
    )
    got = node(
        [{"op": "badRows", "text": t} for t in (text, "invalid request: chainId: required", "")]
    )
    assert got[0] == {
        "rows": [
            {"line": 3, "field": "address", "message": "not a 20-byte hex address"},
            {
                "line": 5,
                "field": "amount",
                "message": "has more than 6 decimal places for this token",
            },
            {"line": 6, "field": "token", "message": "no token 'DOGE' known on chain 1"},
        ],
        "more": 20,
    }
    assert got[1:] == [{"rows": [], "more": 0}, {"rows": [], "more": 0}]


def test_a_batch_is_sent_approvals_first_then_its_pay_calls_in_order() -> None:
    answer = {
        "approvals": [{"to": "0xA", "nonce": 1}],
        "transactions": [{"to": "0xB", "nonce": 2}, {"to": "0xB", "nonce": 3}],
    }
    got = node(
        [{"op": "payoutCalls", "answer": a} for a in (answer, {"transactions": [{"to": "0xB"}]})]
    )
    assert got[0] == [
        {"kind": "approve", "tx": {"to": "0xA", "nonce": 1}},
        {"kind": "pay", "tx": {"to": "0xB", "nonce": 2}},
        {"kind": "pay", "tx": {"to": "0xB", "nonce": 3}},
    ]
    assert got[1] == [{"kind": "pay", "tx": {"to": "0xB"}}]


def test_the_plan_form_makes_the_body_post_plan_reads() -> None:
    base = {
        "name": " Gold ",
        "amount": " 9.90 ",
        "chainId": "31337",
        "periodUnit": "month",
        "periodCount": "1",
    }
    tasks = [
        {**base, "tokens": "", "trialDays": "", "graceDays": "", "currency": "usd"},
        {
            **base,
            "tokens": "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512, 1:0xA0b8",
            "trialDays": "7",
            "graceDays": "0",
        },
    ]
    first, second = node([{"op": "planBody", "values": v} for v in tasks])
    assert first == {
        "name": "Gold",
        "amount": "9.90",
        "chainId": 31337,
        "acceptedTokens": ["31337:0x0000000000000000000000000000000000000000"],
        "periodUnit": "month",
        "periodCount": 1,
        "currency": "usd",
    }
    assert second["acceptedTokens"] == [TOKEN, "1:0xA0b8"]
    assert (second["trialDays"], second["graceDays"]) == (7, 0)
    assert "currency" not in second


def test_endpoint_types_are_split_on_commas_and_spaces_and_empty_means_the_default() -> None:
    texts = ["invoice.paid, invoice.expired", " invoice.paid\ninvoice.paid ,, ", "", "  ,  "]
    got = node([{"op": "parseTypes", "text": t} for t in texts])
    assert got == [["invoice.paid", "invoice.expired"], ["invoice.paid"], None, None]


def test_endpoint_bodies_add_without_id_and_update_with_every_shown_field() -> None:
    add = {"url": "  https://shop.example/hook ", "types": "", "enabled": True}
    update = {
        "id": "ep_" + "a" * 24,
        "url": "https://shop.example/h2",
        "types": "invoice.paid",
        "enabled": False,
    }
    got = node([{"op": "endpointBody", "values": add}, {"op": "endpointBody", "values": update}])
    # an add leaves types out (the server's default, the status changes) and carries no id
    assert got[0] == {"url": "https://shop.example/hook", "enabled": True}
    # an update names the endpoint and sends what the form shows, a disabled flag included
    assert got[1] == {
        "id": "ep_" + "a" * 24,
        "url": "https://shop.example/h2",
        "types": ["invoice.paid"],
        "enabled": False,
    }


OWNER = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"
KEY = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"


def test_the_app_key_consent_text_is_the_one_the_server_checks() -> None:
    (got,) = node([{"op": "consentText", "owner": OWNER, "key": f"  {KEY} ", "salt": 1764300000}])
    assert got == f"accept-app-key:{OWNER.lower()}:{KEY.lower()}:1764300000"


def test_the_app_key_bodies_are_signed_in_the_order_they_are_sent() -> None:
    add, remove = node(
        [
            {
                "op": "addBody",
                "owner": OWNER,
                "key": f" {KEY}",
                "consent": " 0xabc ",
                "salt": 1764300000,
            },
            {"op": "removeBody", "owner": OWNER, "key": KEY, "salt": 1764300001},
        ]
    )
    # the wallet signs JSON.stringify(body): the server rebuilds that text in this key order
    assert add == json.dumps(
        {
            "salt": 1764300000,
            "appKeyAddress": KEY,
            "appKeySignature": "0xabc",
            "ownerAddress": OWNER,
        },
        separators=(",", ":"),
    )
    assert remove == json.dumps(
        {"salt": 1764300001, "appKeyAddress": KEY, "ownerAddress": OWNER}, separators=(",", ":")
    )
