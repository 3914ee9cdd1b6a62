"""docs/dashboard.md says what the code does: its Python example runs, and the
Content-Security-Policy it quotes is the one the page is served with."""

from __future__ import annotations

import re
from pathlib import Path

from paycore.api.dashboard import CSP

PAGE = Path(__file__).resolve().parents[2] / "docs" / "dashboard.md"


def test_every_python_example_runs() -> None:
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)
    assert blocks
    for source in blocks:
        exec(compile(source, str(PAGE), "exec"), {})


def test_the_quoted_policy_is_the_served_one() -> None:
    [quoted] = re.findall(r"```text\n(.*?)\n```", PAGE.read_text(encoding="utf-8"), re.S)
    assert quoted == CSP
