"""docs/payouts.md's examples run as written: the Python block checks rows and prints the
400 text the page shows for its bad upload, and the payout record it shows has exactly the
fields the OpenAPI schema names and reads back into the record it came from."""

from __future__ import annotations

import contextlib
import io
import json
from decimal import Decimal
from pathlib import Path

from paycore.api.schemas import PAYOUT
from paycore.payouts.records import Payout, PayoutStatus

DOC = Path(__file__).resolve().parents[2] / "docs" / "payouts.md"


def _block(marker: str, language: str) -> str:
    text = DOC.read_text("utf-8")
    after = text.split(f"<!-- {marker} -->", 1)[1]
    return after.split(f"```{language}\n", 1)[1].split("```", 1)[0]


def test_the_python_example_runs_and_prints_the_documented_refusal() -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(_block("payouts-example", "python"), str(DOC), "exec"), {})  # noqa: S102
    assert out.getvalue() == _block("payouts-bad-rows", "text")


def test_the_documented_record_is_what_paycore_sends() -> None:
    shown = json.loads(_block("payouts-record", "json"))
    assert set(shown) == set(PAYOUT["properties"])
    record = Payout(
        batch_id=shown["batchId"],
        line=shown["line"],
        to=shown["to"],
        token=shown["token"],
        amount=Decimal(shown["amount"]),
        value=int(shown["value"]),
        reference=shown["reference"],
        call=shown["transaction"],
        status=PayoutStatus(shown["status"]),
        tx_hash=shown["txHash"],
        updated_at=shown["updatedAt"],
    )
    assert record.to_wire() == shown
