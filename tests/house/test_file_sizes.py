"""No file in src/ over 800 lines (issue 29): a module past that size holds more than one
concern, and its reader cannot keep it in mind. A file that grows past it is split into
modules named for what they hold (as ``gateway.py`` gave its lists and refunds to
``paycore/facade/`` and ``config.py`` its chain entries to ``chain_config.py``)."""

from __future__ import annotations

from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
LIMIT = 800


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def oversized(src: Path = SRC) -> list[str]:
    """Every ``.py`` file under ``src`` longer than ``LIMIT`` lines, as ``path: lines``."""
    return [
        f"{path.relative_to(src).as_posix()}: {count}"
        for path in sorted(src.rglob("*.py"))
        if (count := _lines(path)) > LIMIT
    ]


def test_no_file_in_src_is_over_800_lines() -> None:
    found = oversized()
    assert found == [], f"split these by concern (at most {LIMIT} lines): {found}"


def test_the_check_counts_lines(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "small.py").write_text("x = 1\n" * LIMIT, encoding="utf-8")
    (tmp_path / "pkg" / "big.py").write_text("x = 1\n" * (LIMIT + 1), encoding="utf-8")
    assert oversized(tmp_path) == [f"pkg/big.py: {LIMIT + 1}"]
