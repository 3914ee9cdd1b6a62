"""The second mutator (scripts/ast_mutants.py) itself: what it mutates and what it leaves alone.

A ``...`` body and an ``assert isinstance`` that narrows a type are equivalent when deleted,
and so is a ``@lru_cache`` size moved by one, so mutating them only pads the survivors a
reader must check by hand (docs/mutation.md). The mutator must skip them and still mutate the
real statements and constants beside them.
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


CACHED = b"""\
from functools import lru_cache
import functools


@lru_cache(maxsize=4096)
def address(key: bytes) -> int:
    return len(key) + 1


@functools.lru_cache(256, typed=True)
def checksum(text: str) -> int:
    return len(text) * 2


@lru_cache(maxsize=None)
def table() -> list[int]:
    return [1, 2]
"""


def test_a_cache_size_is_not_mutated_but_the_cached_function_is() -> None:
    """``@lru_cache(maxsize=N)``: N is how many answers are kept, never what they are (a
    function is cached only because it is pure), so N +- 1 is equivalent by construction.
    Only that argument is skipped: the cached function's own constants are still mutated."""
    mutants = _mutator().make_mutants("m.py", CACHED)
    replaced = [(m.line, m.operator, m.replacement) for m in mutants]
    for size in ("4095", "4097", "255", "257"):
        assert not [r for r in replaced if r[2] == size], f"cache size mutated to {size}"
    lines = CACHED.decode().splitlines()
    body = lines.index("    return len(key) + 1") + 1
    assert (body, "constant", "2") in replaced  # + 1 to + 2 in the cached function itself
    doubled = lines.index("    return len(text) * 2") + 1
    assert (doubled, "constant", "3") in replaced


def test_a_call_that_is_not_a_cache_keeps_its_size_mutants() -> None:
    """The skip is by name: another decorator's integer argument is still mutated."""
    other = CACHED.replace(b"@lru_cache(maxsize=4096)", b"@retry(maxsize=4096)")
    replaced = {m.replacement for m in _mutator().make_mutants("m.py", other)}
    assert {"4095", "4097"} <= replaced
