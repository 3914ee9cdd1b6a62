"""Every file of the checkout page is package data, so a wheel serves the page too.

setuptools ships only .py files of a package unless pyproject.toml's package-data globs name
the rest; a missing glob would pass every test from a source checkout and 404 once installed.
"""

from __future__ import annotations

import tomllib
from fnmatch import fnmatch
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "paycore"


def test_checkout_files_are_package_data() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    globs = config["tool"]["setuptools"]["package-data"]["paycore"]
    files = [
        p.relative_to(PACKAGE).as_posix()
        for p in (PACKAGE / "checkout").rglob("*")
        if p.is_file() and p.suffix not in (".py", ".pyc")
    ]
    assert files
    unshipped = [f for f in files if not any(fnmatch(f, g) for g in globs)]
    assert unshipped == []
