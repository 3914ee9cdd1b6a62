"""docs/interface.md's examples of the dashboard's reads run: the search request is answered
as shown, and the GET /stats example is exactly what paycore answers for such invoices."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from urllib.parse import urlsplit

from paycore import Gateway, Settings
from paycore.accounting.search import _stats_wire
from paycore.api import Request, handle
from paycore.api.schemas import STATS
from paycore.domain.records import Status
from paycore.storage.search import StatsRow

DOC = Path(__file__).resolve().parents[2] / "docs" / "interface.md"


def _block(marker: str, language: str) -> str:
    after = DOC.read_text("utf-8").split(f"<!-- {marker} -->", 1)[1]
    return after.split(f"```{language}\n", 1)[1].split("```", 1)[0]


def test_the_search_example_is_answered_as_a_filtered_page() -> None:
    method, target = _block("paycore-search-example", "http").split()[:2]
    url = urlsplit(target)
    gateway = Gateway(Settings(database_url="memory://", auth_mode="soft"), entry_points=False)
    try:
        response = handle(gateway, Request(method, url.path, url.query))
    finally:
        gateway.close()
    assert response.status == 200, response.body
    page = json.loads(response.body)
    assert page["items"] == [] and page["totalCapped"] is False and page["nextCursor"] is None


def test_the_stats_example_is_what_paycore_answers() -> None:
    shown = json.loads(_block("paycore-stats-example", "json"))
    token = "1:0xdAC17F958D2ee523a2206206994597C13D831ec7"
    day = shown["from"] // 86_400
    rows = [
        StatsRow(day, 1, token, Status.EXPIRED, "usd", 1, Decimal(0)),
        StatsRow(day, 1, token, Status.PAID, "usd", 2, Decimal(100)),
        StatsRow(day + 2, 1, token, Status.PAID, "usd", 1, Decimal("75.5")),
    ]
    assert _stats_wire(rows, shown["from"], shown["to"], "usd", 0) == shown
    assert set(shown) == set(STATS["required"])
