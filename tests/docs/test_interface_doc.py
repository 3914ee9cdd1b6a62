"""The repository documents itself: its interface reference is current, and nothing points
outside the repository for the interface or the architecture.

docs/interface.md opens its Endpoints section with an index generated from the route table
(scripts/interface_index.py); this checks the committed copy is what the script writes now.
The hand-written sections are checked against the router by
tests/conformance/test_conf_spec_paths.py.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "interface_index.py"

#: Where code and prose live; everything tracked under these is scanned.
SCANNED = ("src", "tests", "docs", "examples", "bench", "scripts", "README.md", "Makefile")
#: Documents that live outside the repository; built in pieces so this file does not match.
OUTSIDE = re.compile(
    "|".join(re.escape(x) for x in ("../" + "shared", "SPEC" + ".md", "DESIGN" + ".md"))
)
TEXT_SUFFIXES = {".py", ".md", ".js", ".mjs", ".sol", ".html", ".css", ".toml", ".ini", ".mako", ""}


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("interface_index", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_endpoint_index_is_generated_from_the_current_route_table() -> None:
    script = _script()
    text = script.DOC.read_text("utf-8")
    assert script.updated(text, script.render()) == text, (
        "docs/interface.md's endpoint index is stale: run python scripts/interface_index.py"
    )


def test_the_index_has_one_row_per_route() -> None:
    script = _script()
    block = script.render()
    rows = [line for line in block.splitlines() if line.startswith("| ") and "`/" in line]
    assert [row.split("`")[1] for row in rows] == [route.path for route in script.routes()]


def test_the_check_mode_fails_on_a_stale_index(tmp_path: Path) -> None:
    script = _script()
    stale = script.DOC.read_text("utf-8").replace("| `/prices` |", "| `/old-prices` |")
    assert script.updated(stale, script.render()) != stale
    copy = tmp_path / "interface.md"
    copy.write_text(stale, encoding="utf-8")
    script.DOC = copy
    assert script.main(["--check"]) == 1
    assert copy.read_text("utf-8") == stale, "--check must not write"
    assert script.main([]) == 0
    assert script.main(["--check"]) == 0


def test_nothing_points_outside_the_repository() -> None:
    tracked = subprocess.run(
        ["git", "ls-files", "--", *SCANNED], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    offenders: list[str] = []
    for name in tracked:
        path = ROOT / name
        if path.suffix not in TEXT_SUFFIXES or not path.is_file():
            continue
        for number, line in enumerate(path.read_text("utf-8", errors="replace").splitlines(), 1):
            if OUTSIDE.search(line):
                offenders.append(f"{name}:{number}: {line.strip()[:100]}")
    assert offenders == [], "point at docs/interface.md or docs/architecture.md instead"


def test_the_script_runs_as_documented() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--check"], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
