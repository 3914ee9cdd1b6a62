"""The dashboard's own logic, run in Node on the shipped modules: what the fallback search
finds, how the chart sums deposits per UTC day, which symbol a token is shown with."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.node
ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "node" / "dashboard_logic.mjs"
TOKEN = "31337:0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512"


def node(tasks: list[dict[str, Any]]) -> list[Any]:
    if shutil.which("node") is None:
        if os.environ.get("PAYCORE_REQUIRE_NODE") == "1":
            pytest.fail("PAYCORE_REQUIRE_NODE=1 but node is not installed")
        pytest.skip("node is not installed")
    done = subprocess.run(
        ["node", str(SCRIPT)],
        input=json.dumps({"tasks": tasks}),
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    answers: list[Any] = json.loads(done.stdout)
    return answers


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
