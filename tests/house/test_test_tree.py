"""The tests mirror the source tree: a reader who opens ``src/paycore/<x>/`` finds its tests in
``tests/<x>/``, and every folder in ``tests/`` either mirrors one or is one of the few suites
that test the whole (tests/README.md lists them). A new subpackage without tests, or a test
folder named for nothing, fails here."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
TESTS = ROOT / "tests"

#: Folders that test the whole rather than one subpackage, and what each holds.
SUITES = {
    "conformance": "the HTTP interface as a black-box client sees it",
    "fuzz": "arbitrary and schema-driven input against both adapters",
    "docs": "every example the docs show, run",
    "examples": "the example shops in examples/",
    "node": "scripts the Node oracles run (ethers, eth-crypto, tronweb, Chromium)",
    "scripts": "the tools in scripts/",
    "house": "the rules of the tree itself: layers, file sizes, docstrings, this mirror",
    "shared": "helpers and fixtures several folders import (on pythonpath)",
}
#: Test folders for packages and top-level modules outside ``src/paycore/<subpackage>/``.
OTHER_SOURCES = {
    "adapters": ["paycore_flask", "paycore_litestar"],
    "storage": ["paycore_storage", "paycore/storage"],
    "config": ["paycore/config.py", "paycore/config_fields.py", "paycore/chain_config.py"],
    "facade": ["paycore/gateway.py", "paycore/facade"],
    "chains": ["paycore/chains"],
}


def _subpackages() -> list[str]:
    """``paycore``'s subpackages as test folder paths: the first level, and each chain."""
    found = []
    for package in sorted((SRC / "paycore").iterdir()):
        if (package / "__init__.py").exists():
            found.append(package.name)
    for chain in sorted((SRC / "paycore" / "chains").iterdir()):
        if (chain / "__init__.py").exists():
            found.append(f"chains/{chain.name}")
    return found


def _has_tests(folder: Path) -> bool:
    return any(folder.glob("test_*.py"))


def test_every_subpackage_has_a_test_folder_with_tests() -> None:
    missing = [name for name in _subpackages() if not _has_tests(TESTS / name)]
    assert missing == [], f"subpackages of src/paycore without tests/<name>/test_*.py: {missing}"


def test_every_test_folder_mirrors_a_source_or_is_a_named_suite() -> None:
    mirrors = {name.split("/")[0] for name in _subpackages()}
    named = mirrors | set(SUITES) | set(OTHER_SOURCES)
    folders = {p.name for p in TESTS.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))}
    assert sorted(folders - named) == [], "test folders that mirror nothing in src/"
    chain_folders = {p.name for p in (TESTS / "chains").iterdir() if p.is_dir()}
    chains = {name.split("/")[1] for name in _subpackages() if name.startswith("chains/")}
    assert chain_folders == chains


def test_the_other_sources_exist() -> None:
    for folder, sources in OTHER_SOURCES.items():
        assert (TESTS / folder).is_dir(), folder
        for source in sources:
            assert (SRC / source).exists(), f"tests/{folder} names src/{source}, which is gone"


def test_no_test_module_sits_at_the_top_of_tests() -> None:
    assert sorted(p.name for p in TESTS.glob("test_*.py")) == []


def test_the_readme_lists_every_suite() -> None:
    readme = (TESTS / "README.md").read_text(encoding="utf-8")
    for suite in [*SUITES, *OTHER_SOURCES]:
        assert f"`{suite}/`" in readme, suite


def test_the_folders_benches_and_scripts_reach_into_exist() -> None:
    """A bench that puts a test folder on ``sys.path`` (the EVM chain helpers) breaks
    silently when the tree moves; the paths it names must be there."""
    import re

    named = re.compile(r'"tests"((?:\s*/\s*"[\w.]+")+)')
    for script in [*ROOT.glob("bench/*.py"), *ROOT.glob("scripts/*.py")]:
        for match in named.finditer(script.read_text(encoding="utf-8")):
            parts = re.findall(r'"([\w.]+)"', match.group(1))
            assert TESTS.joinpath(*parts).exists(), f"{script.name}: tests/{'/'.join(parts)}"
