"""Layers point one way (issue 29): domain < services < facade < api < adapters.

The layers, and which paths under ``src/`` belong to each, are the table in
docs/architecture.md §Layers; this test reads that table, so the page and the rule cannot
drift. Every import of every module is read with ``ast``: at the top of a file, inside a
function, and under ``if TYPE_CHECKING:`` too (a service whose signature names the
``Gateway`` depends on it as much as one that calls it). Only a script entry
(``if __name__ == "__main__":``) is passed over: it runs when the module is a program,
never when it is imported. Imports made by name at run time (``importlib.import_module``)
are not seen.

An import that points up fails, naming the file, the line and the rule, unless it is in
:data:`ALLOWED` with its reason. A listed import that is gone fails too, so the list only
shrinks.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
PACKAGES = ("paycore", "paycore_flask", "paycore_litestar", "paycore_storage")

#: Imports that point up today: (importing file, imported module) -> why it is still there.
#: Remove an entry when its import goes; add none.
ALLOWED: dict[tuple[str, str], str] = {}


@attrs.frozen
class Layers:
    """The table of docs/architecture.md §Layers: names in order, and path -> layer index."""

    names: tuple[str, ...]
    paths: dict[str, int]

    def of(self, file: str) -> int | None:
        """The layer of ``file`` (a path under ``src/``): its most specific listed path."""
        best: tuple[int, int] | None = None
        for prefix, layer in self.paths.items():
            hit = file == prefix or (prefix.endswith("/") and file.startswith(prefix))
            if hit and (best is None or len(prefix) > best[0]):
                best = (len(prefix), layer)
        return None if best is None else best[1]


def read_layers(text: str) -> Layers:
    """Parse the table under ``## Layers``: ``| N name | `path`, `path` | ... |`` rows."""
    section = text.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    names: list[str] = []
    paths: dict[str, int] = {}
    for line in section.splitlines():
        match = re.match(r"^\| (\d+) (\w+) \| ([^|]+) \|", line)
        if match is None:
            continue
        assert int(match[1]) == len(names) + 1, f"layers out of order at {line!r}"
        for path in re.findall(r"`([^`]+)`", match[3]):
            assert path not in paths, f"{path} is listed in two layers"
            paths[path] = len(names)
        names.append(match[2])
    return Layers(tuple(names), paths)


@attrs.frozen
class Import:
    """One import statement's target, resolved to a module of ours."""

    file: str  # path under src/, such as "paycore/gateway.py"
    line: int
    target: str  # dotted module name, such as "paycore.api.requests"


def _module_file(module: str, src: Path) -> str | None:
    base = module.replace(".", "/")
    for candidate in (f"{base}.py", f"{base}/__init__.py"):
        if (src / candidate).is_file():
            return candidate
    return None


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _is_script_entry(test: ast.expr) -> bool:
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in test.comparators)
    )


def imports_of(file: str, source: str, src: Path = SRC) -> Iterator[Import]:
    """Every import in ``source`` of a module under ``src``, wherever it stands, except in a
    script entry. ``from package import name`` names the submodule when ``name`` is one."""
    package = file.rsplit("/", 1)[0].split("/")
    tree = ast.parse(source, filename=file)
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_script_entry(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in PACKAGES:
                    yield Import(file, node.lineno, alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            if module.split(".")[0] not in PACKAGES:
                continue
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                yield Import(file, node.lineno, sub if _module_file(sub, src) else module)


def _sources(src: Path = SRC) -> Iterator[tuple[str, str]]:
    for package in PACKAGES:
        for path in sorted((src / package).rglob("*.py")):
            name = path.relative_to(src).as_posix()
            if "/migrations/" in name:
                continue  # Alembic revisions: run by Alembic, import nothing of ours
            yield name, path.read_text(encoding="utf-8")


def upward(layers: Layers, src: Path = SRC) -> Iterator[tuple[Import, str]]:
    """Every import that points up a layer, with the rule it breaks."""
    for file, source in _sources(src):
        own = layers.of(file)
        assert own is not None, f"{file} is in no layer of docs/architecture.md §Layers"
        for found in imports_of(file, source, src):
            target_file = _module_file(found.target, src)
            if target_file is None:
                continue  # a name re-exported by a package; the package's own file counts
            theirs = layers.of(target_file)
            assert theirs is not None, f"{target_file} is in no layer"
            if theirs > own:
                rule = f"{layers.names[own]} must not import {layers.names[theirs]}"
                yield found, rule


LAYERS = read_layers(ARCHITECTURE.read_text(encoding="utf-8"))


@functools.cache
def _upward_here() -> tuple[tuple[Import, str], ...]:
    return tuple(upward(LAYERS))


def test_the_table_lists_five_layers_in_order() -> None:
    assert LAYERS.names == ("domain", "services", "facade", "api", "adapters")
    for path in LAYERS.paths:
        assert (SRC / path).exists(), f"docs/architecture.md §Layers lists {path}: not in src/"


def test_no_import_points_up_a_layer() -> None:
    new = [
        f"{found.file}:{found.line}: imports {found.target} ({rule})"
        for found, rule in _upward_here()
        if (found.file, found.target) not in ALLOWED
    ]
    assert new == [], "imports that point up a layer:\n" + "\n".join(new)


def test_the_allow_list_only_shrinks() -> None:
    seen = {(found.file, found.target) for found, _ in _upward_here()}
    gone = [f"{file} -> {target}" for file, target in ALLOWED if (file, target) not in seen]
    assert gone == [], "no longer imported: remove from ALLOWED:\n" + "\n".join(gone)


# -- the checker itself, on a tree made for it ----------------------------------------------

_TABLE = """# A house

## Layers

| Layer | Paths | What |
| --- | --- | --- |
| 1 domain | `paycore/domain/` | records |
| 2 services | `paycore/svc/`, `paycore/svc/pure.py` | services |
| 3 facade | `paycore/gateway.py`, `paycore/__init__.py` | the facade |

## After
| 9 nothing | `paycore/` | not read |
"""


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for package in PACKAGES[1:]:
        (tmp_path / package).mkdir(exist_ok=True)
    return tmp_path


def test_the_table_reads_the_most_specific_path() -> None:
    layers = read_layers(_TABLE)
    assert layers.names == ("domain", "services", "facade")
    assert layers.of("paycore/svc/pure.py") == 1
    assert layers.of("paycore/svc/deep/x.py") == 1
    assert layers.of("paycore/gateway.py") == 2
    assert layers.of("paycore/gateway.pyx") is None
    assert layers.of("paycore/other.py") is None


def test_every_kind_of_upward_import_is_found(tmp_path: Path) -> None:
    src = _tree(
        tmp_path,
        {
            "paycore/__init__.py": "",
            "paycore/gateway.py": "from .domain import records\n",
            "paycore/domain/__init__.py": "",
            "paycore/domain/records.py": (
                "from typing import TYPE_CHECKING\n"
                "import json\n"
                "if TYPE_CHECKING:\n"
                "    from paycore.gateway import Gateway\n"
                "def late():\n"
                "    from ..svc import pure\n"
                "    import paycore.svc.pure\n"
                "if __name__ == '__main__':\n"
                "    from paycore.gateway import Gateway\n"
            ),
            "paycore/svc/__init__.py": "from . import pure\nfrom .. import gateway\n",
            "paycore/svc/pure.py": "from ..domain.records import X\n",
        },
    )
    found = sorted((i.file, i.line, i.target, rule) for i, rule in upward(read_layers(_TABLE), src))
    assert found == [
        ("paycore/domain/records.py", 4, "paycore.gateway", "domain must not import facade"),
        ("paycore/domain/records.py", 6, "paycore.svc.pure", "domain must not import services"),
        ("paycore/domain/records.py", 7, "paycore.svc.pure", "domain must not import services"),
        ("paycore/svc/__init__.py", 2, "paycore.gateway", "services must not import facade"),
    ]


def test_a_file_in_no_layer_fails(tmp_path: Path) -> None:
    src = _tree(tmp_path, {"paycore/__init__.py": "", "paycore/stray.py": ""})
    with pytest.raises(AssertionError, match="paycore/stray.py is in no layer"):
        list(upward(read_layers(_TABLE), src))
