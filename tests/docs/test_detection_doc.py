"""docs/chains.md's Detection example is the record paycore sends: the element of an
invoice's ``detected`` list, with exactly the fields and types the OpenAPI schema names."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

from paycore.api.schemas import DETECTED
from paycore.domain.detected import Detected

DOC = Path(__file__).resolve().parents[2] / "docs" / "chains.md"


def example() -> dict[str, object]:
    text = DOC.read_text("utf-8")
    block = text.split("<!-- paycore-detected-example -->", 1)[1].split("```json\n", 1)[1]
    parsed: dict[str, object] = json.loads(block.split("```", 1)[0])
    return parsed


def test_the_documented_detected_element_is_what_paycore_sends() -> None:
    [shown] = example()["detected"]  # type: ignore[misc]
    assert set(shown) == set(DETECTED["required"]) == set(DETECTED["properties"])
    read = Detected.from_wire(shown)
    assert read.amount == Decimal("25.5") and read.confirmations <= read.required
    assert read.to_wire() == shown
