"""The second mutator (scripts/ast_mutants.py) itself: what it mutates and what it leaves alone.

A ``...`` body and an ``assert isinstance`` that narrows a type are equivalent when deleted,
so mutating them only pads the survivors a reader must check by hand (docs/mutation.md). The
mutator must skip them and still delete the real statements beside them.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _mutator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "ast_mutants", ROOT / "scripts" / "ast_mutants.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("ast_mutants", module)
    spec.loader.exec_module(module)
    return module


SOURCE = b'''\
from typing import Protocol, overload


class Quotes(Protocol):
    def fetch(self, token: str) -> int:
        """A docstring."""
        ...


@overload
def scale(x: int) -> int: ...
@overload
def scale(x: str) -> str: ...
def scale(x):
    return x


def normalize(value: object, seen: list[object]) -> int:
    exponent = getattr(value, "exponent", 0)
    assert isinstance(exponent, int)
    assert exponent >= 0, "negative"
    seen.append(value)
    return exponent
'''


def _deleted_lines(source: bytes) -> dict[int, list[str]]:
    by_line: dict[int, list[str]] = {}
    for mutant in _mutator().make_mutants("m.py", source):
        if mutant.operator == "delete":
            by_line.setdefault(mutant.line, []).append(mutant.replacement)
    return by_line


def test_no_mutant_is_made_of_an_ellipsis_body_or_a_narrowing_assert() -> None:
    lines = SOURCE.decode().splitlines()
    deleted = _deleted_lines(SOURCE)
    for number in deleted:
        text = lines[number - 1].strip()
        assert text != "...", f"line {number}: a `...` body was mutated"
        assert not text.endswith(": ..."), f"line {number}: an overload's `...` was mutated"
        assert not text.startswith("assert isinstance"), f"line {number}: a narrowing assert"
    everything = _mutator().make_mutants("m.py", SOURCE)
    narrowing = lines.index("    assert isinstance(exponent, int)") + 1
    assert not [m for m in everything if m.line == narrowing]


def test_the_real_statements_beside_them_are_still_mutated() -> None:
    lines = SOURCE.decode().splitlines()
    deleted = _deleted_lines(SOURCE)
    checking = lines.index('    assert exponent >= 0, "negative"') + 1
    appending = lines.index("    seen.append(value)") + 1
    assert deleted.get(checking) == ["pass"], "an assert that checks a value must be deleted"
    assert deleted.get(appending) == ["pass"], "a call's deletion must still be made"
    names = {m.operator for m in _mutator().make_mutants("m.py", SOURCE)}
    assert {"delete", "return", "boundary"} <= names


def test_the_same_source_without_the_skipped_constructs_loses_only_their_mutants() -> None:
    """The skip is narrow: removing the two constructs by hand removes no other mutant."""
    mutator = _mutator()
    stripped = SOURCE.replace(b"    assert isinstance(exponent, int)\n", b"")
    with_them = [(m.operator, m.replacement) for m in mutator.make_mutants("m.py", SOURCE)]
    without = [(m.operator, m.replacement) for m in mutator.make_mutants("m.py", stripped)]
    assert with_them == without
