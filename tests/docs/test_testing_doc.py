"""docs/testing.md's tests, taken from the page as written and run by pytest in a fresh
directory, as a merchant's project would run them: the plugin's fixtures come from the
``pytest11`` entry point, and ``from shop import create_app`` is examples/flask_shop."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "testing.md"


def doc_tests() -> list[str]:
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)
    return [block for block in blocks if re.search(r"^def test_", block, re.M)]


def test_every_test_on_the_page_runs_as_written(tmp_path: Path) -> None:
    found = doc_tests()
    assert len(found) == 3, "docs/testing.md lost one of its example tests"
    for n, block in enumerate(found):
        (tmp_path / f"test_doc_{n}.py").write_text(block, encoding="utf-8")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            [str(ROOT / "examples" / "flask_shop"), os.environ.get("PYTHONPATH", "")]
        ),
    }
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stdout[-4000:] + ran.stderr[-2000:]
    # The shop example runs on both backends: four tests in all, none skipped.
    assert re.search(r"\b4 passed\b", ran.stdout), ran.stdout[-2000:]
    assert "skipped" not in ran.stdout
    # Nothing written where the tests ran: the databases are the fixtures' own.
    assert not list(tmp_path.glob("*.sqlite3"))
