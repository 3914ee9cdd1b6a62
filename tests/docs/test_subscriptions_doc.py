"""docs/subscriptions.md's Python example runs as shown, and its status table is the one
``paycore.domain.subscription_machine`` holds."""

from __future__ import annotations

import re
from pathlib import Path

from paycore.domain.subscription_machine import TRANSITIONS, SubscriptionMove
from paycore.domain.subscriptions import SubscriptionStatus

DOC = Path(__file__).resolve().parents[2] / "docs" / "subscriptions.md"


def test_the_python_example_runs(capsys: object) -> None:
    text = DOC.read_text("utf-8")
    block = text.split("<!-- paycore-subscriptions-example -->", 1)[1].split("```python\n", 1)[1]
    code = block.split("```", 1)[0]
    namespace: dict[str, object] = {}
    exec(compile(code, str(DOC), "exec"), namespace)  # noqa: S102 - the doc's own example
    gateway = namespace["gateway"]
    out = capsys.readouterr().out  # type: ignore[attr-defined]
    assert out.startswith("http") and "/checkout" in out
    gateway.close()  # type: ignore[attr-defined]


def test_the_status_table_is_the_machine() -> None:
    text = DOC.read_text("utf-8")
    section = text.split("## Statuses", 1)[1].split("\n## ", 1)[0]
    moves = [SubscriptionMove.PAID, SubscriptionMove.OVERDUE, SubscriptionMove.LAPSED,
             SubscriptionMove.CANCEL]  # fmt: skip
    for status in SubscriptionStatus:
        [row] = [r for r in section.splitlines() if r.startswith(f"| `{status.value}`")]
        cells = [c.strip() for c in row.strip("|").split("|")[1:]]
        shown = {
            m: re.findall(r"`(\w+)`", c)[0] if "`" in c else None
            for m, c in zip(moves, cells, strict=True)
        }
        for move, target in shown.items():
            table = TRANSITIONS[status].get(move)
            if move is SubscriptionMove.OVERDUE and status is SubscriptionStatus.PENDING:
                assert table is None and target == "pending"  # "stays pending"
                continue
            assert (table.value if table else None) == target, (status, move)
