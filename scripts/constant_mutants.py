"""Mutate the module-level limits that mutmut leaves alone, and check the fast tests notice.

mutmut 3 mutates code inside functions only, so the constants that carry most of the money's
bounds (``MAX_AMOUNT = 10**30``, ``MAX_DESCRIPTION = 2000``, ``OPEN``, ``_HALF_N``, ...) are
never changed by ``mutmut run``. This script changes each of them by one step, one at a time,
in a throw-away copy of ``src/`` and ``tests/``, and runs the fast tests that guard that
module (two copies at a time; ``MUTATE_JOBS`` to change). Every mutant here changes
behaviour, so each must be killed; the exit status is 1 if any survives. Part of
``make mutate`` (docs/mutation.md).
"""

from __future__ import annotations

import os
import queue
import shutil
import subprocess
import sys
import tempfile
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: (module, text, replacement): each replacement is one step off the real value.
MUTANTS: list[tuple[str, str, str]] = [
    ("paycore/domain/money.py", "MAX_AMOUNT = Decimal(10) ** 30", "MAX_AMOUNT = Decimal(10) ** 29"),
    ("paycore/domain/money.py", "MAX_AMOUNT = Decimal(10) ** 30", "MAX_AMOUNT = Decimal(10) ** 31"),
    ("paycore/domain/money.py", "MAX_SCALE = 18", "MAX_SCALE = 17"),
    ("paycore/domain/money.py", "MAX_SCALE = 18", "MAX_SCALE = 19"),
    ("paycore/domain/money.py", "Context(prec=80)", "Context(prec=28)"),
    ("paycore/domain/money.py", "VS_PLACES = 8", "VS_PLACES = 7"),
    ("paycore/domain/money.py", "VS_PLACES = 8", "VS_PLACES = 9"),
    ("paycore/domain/invoices.py", "MAX_ACCEPTED_TOKENS = 20", "MAX_ACCEPTED_TOKENS = 19"),
    ("paycore/domain/invoices.py", "MAX_ACCEPTED_TOKENS = 20", "MAX_ACCEPTED_TOKENS = 21"),
    ("paycore/domain/invoices.py", "MAX_DESCRIPTION = 2000", "MAX_DESCRIPTION = 1999"),
    ("paycore/domain/invoices.py", "MAX_DESCRIPTION = 2000", "MAX_DESCRIPTION = 2001"),
    (
        "paycore/domain/invoices.py",
        "MAX_DEADLINE_SECS = 366 * 24 * 3600",
        "MAX_DEADLINE_SECS = 365 * 24 * 3600",
    ),
    (
        "paycore/domain/invoices.py",
        "MAX_DEADLINE_SECS = 366 * 24 * 3600",
        "MAX_DEADLINE_SECS = 366 * 24 * 3600 + 1",
    ),
    (
        "paycore/domain/invoices.py",
        "OPEN = (Status.INIT, Status.PARTIAL_PAID)",
        "OPEN = (Status.INIT,)",
    ),
    (
        "paycore/domain/invoices.py",
        "OPEN = (Status.INIT, Status.PARTIAL_PAID)",
        "OPEN = (Status.PARTIAL_PAID,)",
    ),
    (
        "paycore/domain/machine.py",
        "SETTLED = frozenset({Status.PAID, Status.EXPIRED})",
        "SETTLED = frozenset({Status.PAID})",
    ),
    (
        "paycore/domain/machine.py",
        "Status.PAID: {Move.SETTLED_DEPOSIT: Status.PAID}",
        "Status.PAID: {Move.SETTLED_DEPOSIT: Status.EXPIRED}",
    ),
    ("paycore/auth/session.py", 'r"[1-9][0-9]{0,18}"', 'r"[1-9][0-9]{0,17}"'),
    ("paycore/auth/session.py", "_MAX_NONCE = 2**63 - 1", "_MAX_NONCE = 2**63"),
    ("paycore/auth/session.py", 'frozenset({"GET", "HEAD"})', 'frozenset({"GET"})'),
    ("paycore/auth/signatures.py", "_HALF_N = SECP256K1_N // 2", "_HALF_N = SECP256K1_N // 2 - 1"),
    ("paycore/auth/signatures.py", "_HALF_N = SECP256K1_N // 2", "_HALF_N = SECP256K1_N // 2 + 1"),
    ("paycore/auth/signatures.py", "BFD25E8CD0364141", "BFD25E8CD0364142"),
    (
        "paycore/auth/signatures.py",
        'r"(?:0[xX])?([0-9a-fA-F]{130})"',
        'r"(?:0x)?([0-9a-fA-F]{130})"',
    ),
]


#: The fast tests that guard each module's constants (a subset of ``[tool.mutmut]``'s
#: selection, to keep one run short: each mutant costs a fresh interpreter).
CORE = ["tests/domain", "tests/accounting", "tests/facade", "tests/prices/test_pricing.py"]
SELECTION = {
    "paycore/auth/": [*CORE, "tests/auth"],
    "paycore/webhooks/": [*CORE, "tests/webhooks/test_netguard_guards.py"],
}
DEFAULT_SELECTION = CORE


def selection_for(module: str) -> list[str]:
    for prefix, tests in SELECTION.items():
        if module.startswith(prefix):
            return tests
    return DEFAULT_SELECTION


def pytest_args() -> list[str]:
    """``[tool.mutmut]``'s pytest arguments (marker filter), so both runs skip the same."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["mutmut"]
    return list(config.get("pytest_add_cli_args", []))


def make_copy(parent: Path, name: str) -> Path:
    copy = parent / name
    shutil.copytree(ROOT / "src", copy / "src", ignore=shutil.ignore_patterns("*.egg-info"))
    shutil.copytree(ROOT / "tests", copy / "tests")
    shutil.copy2(ROOT / "pyproject.toml", copy / "pyproject.toml")
    return copy


def run_tests(copy: Path, tests: list[str]) -> int:
    # PYTHONPATH comes before the editable install's path entry: the copy is what imports.
    env = {**os.environ, "PYTHONPATH": str(copy / "src")}
    command = [sys.executable, "-m", "pytest", "-x", "-q", "--tb=no", *pytest_args(), *tests]
    return subprocess.run(command, cwd=copy, env=env, capture_output=True).returncode


def try_mutant(copies: queue.Queue[Path], mutant: tuple[str, str, str]) -> str:
    module, text, replacement = mutant
    copy = copies.get()
    try:
        path = copy / "src" / module
        original = path.read_text("utf-8")
        if original.count(text) != 1:
            return f"STALE    {module} no longer holds: {text}"
        path.write_text(original.replace(text, replacement), "utf-8")
        try:
            code = run_tests(copy, selection_for(module))
        finally:
            path.write_text(original, "utf-8")
    finally:
        copies.put(copy)
    verdict = "killed  " if code == 1 else f"SURVIVED (pytest exit {code})"
    return f"{verdict} {module}: {text}  ->  {replacement}"


def main() -> int:
    workers = int(os.environ.get("MUTATE_JOBS", "2"))
    with tempfile.TemporaryDirectory(prefix="paycore-constants-") as tmp:
        copies: queue.Queue[Path] = queue.Queue()
        for i in range(workers):
            copies.put(make_copy(Path(tmp), f"copy{i}"))
        clean = run_tests(copies.queue[0], sorted({t for s in SELECTION.values() for t in s}))
        if clean != 0:
            print(f"the fast tests fail without any mutant (pytest exit {clean}): fix them first")
            return 1
        with ThreadPoolExecutor(max_workers=workers) as pool:
            lines = list(pool.map(lambda m: try_mutant(copies, m), MUTANTS))
    for line in lines:
        print(line)
    survivors = sum(1 for line in lines if not line.startswith("killed"))
    total = len(MUTANTS)
    print(f"module-level constants: {total - survivors}/{total} mutants killed")
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
