"""The capacity bench's command as docs/performance.md shows it: the script exists and takes
every option the line names (the bench itself runs for minutes: not in the test suite)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_documented_capacity_bench_command_takes_its_options() -> None:
    text = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    [line] = [ln for ln in text.splitlines() if ln.startswith("$ python bench/ws_capacity_bench")]
    script = ROOT / line.split()[2]
    assert script.is_file()
    helped = subprocess.run(
        [sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=60
    )
    assert helped.returncode == 0, helped.stderr
    options = set(re.findall(r"--[a-z][a-z-]+", line))
    assert options >= {"--sockets", "--reps", "--only", "--framework"}
    missing = [option for option in options if option not in helped.stdout]
    assert missing == []
