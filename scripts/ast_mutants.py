"""A second mutator for ``make mutate``: the operators mutmut does not make, scored on their own.

mutmut (step 1 of ``make mutate``) swaps operators and strings inside functions; it never
deletes a statement, makes a function return ``None`` (or ``[]``, or the opposite bool),
flips only the boundary of a comparison, or swaps ``and`` for ``or`` everywhere. A review
with such a mutator found behaviour-changing survivors that mutmut's 97% had hidden
(docs/mutation.md), so this script makes exactly those mutants, from the syntax tree, over
the same modules (``[tool.mutmut] only_mutate``) and against the same fast tests
(``pytest_add_cli_args_test_selection``, with its marker filter).

Operators:

- ``delete``: a statement inside a function replaced by ``pass`` (calls, raises, ``if`` /
  ``for`` / ``while`` / ``with`` blocks, augmented assignments, assignments to an attribute or
  an item, and assignments to a name the function assigns elsewhere too; deleting a name's
  only assignment is a NameError, which any test reaching it notices, so it is not made);
- ``return``: ``return x`` to ``return None``; a list to ``[]``; ``True`` <-> ``False``; a
  comparison or a negation to its opposite;
- ``boundary``: ``<`` <-> ``<=``, ``>`` <-> ``>=``, ``==`` <-> ``!=``, one operator at a time;
- ``boolop``: ``and`` <-> ``or``;
- ``constant``: an integer literal ``n`` to ``n + 1`` and ``n - 1`` (module level too).

Not mutated: annotations, docstrings, ``if TYPE_CHECKING:`` blocks, anything inside an
f-string (Python 3.11 does not locate nodes there), a ``...`` body (Protocol methods,
overloads) and an ``assert isinstance(...)`` that narrows a type: deleting either changes
nothing a test can observe; nor the size of a ``@lru_cache`` (how many answers it keeps, not
what they are).

How it runs, in about a quarter of an hour on two cores:

1. the tree (``src``, ``tests``, ``docs``, ``pyproject.toml``) is copied twice into a
   temporary folder, and the fast tests run once in the first copy under coverage, one
   coverage context per test, which records which tests reach which line of the mutated
   modules and how long each takes;
2. each mutant is written into a copy (the mutated node's text replaced, the rest of the file
   byte for byte), and only the tests that reach the mutated line run, fastest first, and
   stop at the first failure (``pytest -x``); a mutant no test reaches survives;
3. the score (killed / all) per module and overall is printed with every survivor's diff.
   Exit status 1 below ``--min``.

``--sample N`` mutates at most N mutants per module, a fixed random sample (``--seed``), when
time is short; ``--module`` restricts the run to some modules; ``--only NAME`` runs named
mutants; ``--list`` and ``--show NAME`` print them without running anything.
"""

from __future__ import annotations

import argparse
import ast
import copy
import difflib
import json
import os
import queue
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: The pytest plugins that slow startup and play no part in the fast tests.
QUIET = ["-p", "no:cacheprovider", "-p", "no:schemathesis", "-p", "no:faker", "-p", "no:xdist"]

#: Logging calls: deleting one changes what is logged, which no money rule depends on.
LOG_NAMES = {"log", "logger", "_log", "_logger", "logging", "LOG"}


@dataclass(frozen=True)
class Mutant:
    """One change to one module: the byte range it replaces and the text put there."""

    module: str  # "src/paycore/domain/machine.py"
    number: int
    operator: str
    line: int
    end_line: int
    start: int  # byte offsets into the file
    end: int
    replacement: str
    in_function: bool

    @property
    def name(self) -> str:
        stem = self.module.removeprefix("src/").removesuffix(".py").replace("/", ".")
        return f"{stem}:{self.number}"

    def apply(self, source: bytes) -> bytes:
        return source[: self.start] + self.replacement.encode("utf-8") + source[self.end :]

    def diff(self, source: bytes) -> str:
        before = source.decode("utf-8").splitlines()
        after = self.apply(source).decode("utf-8").splitlines()
        lines = difflib.unified_diff(before, after, self.module, self.module, n=1, lineterm="")
        return "\n".join(list(lines)[2:])


# -- making the mutants --------------------------------------------------------------------


def _offsets(source: bytes) -> list[int]:
    """Byte offset of the start of each line (1-based: index 0 unused)."""
    starts = [0, 0]
    for line in source.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return starts


def _type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and ast.unparse(node.test) in {
        "TYPE_CHECKING",
        "typing.TYPE_CHECKING",
    }


def _no_op(node: ast.AST) -> bool:
    """A statement whose deletion no test can see, only a type checker.

    A ``...`` body (a Protocol method, an ``@overload``) does nothing, so replacing it with
    ``pass`` is equivalent by construction; ``assert isinstance(x, T)`` narrows a type for mypy
    where the value is already of that type, so deleting it is equivalent too. Both were
    survivors that only padded the equivalent count (docs/mutation.md).
    """
    if isinstance(node, ast.Expr):
        return isinstance(node.value, ast.Constant) and node.value.value is Ellipsis
    if isinstance(node, ast.Assert):
        test = node.test
        return (
            isinstance(test, ast.Call)
            and isinstance(test.func, ast.Name)
            and test.func.id == "isinstance"
        )
    return False


#: Decorators whose size argument bounds a cache: how many answers are kept, not what they are.
CACHES = {"lru_cache"}


def _cache_size(node: ast.AST) -> ast.expr | None:
    """The size given to ``@lru_cache(maxsize=N)`` (or ``lru_cache(N)``), if ``node`` is that.

    Changing the size changes how often an answer is recomputed, never the answer (the cached
    function must be pure to be cached at all), so a size off by one is equivalent by
    construction, as ``signatures.py``'s ``maxsize=4096`` to 4095 was (docs/mutation.md).
    ``typed=`` and anything else in the call are still mutated.
    """
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if name not in CACHES:
        return None
    for keyword in node.keywords:
        if keyword.arg == "maxsize":
            return keyword.value
    return node.args[0] if node.args else None


def _skipped(tree: ast.Module) -> set[int]:
    """ids of the nodes never mutated: annotations, docstrings, TYPE_CHECKING blocks, f-strings,
    ``...`` bodies, ``assert isinstance`` narrowing (``_no_op``) and a decorator's cache size
    (``_cache_size``)."""
    skip: set[int] = set()

    def under(node: ast.AST | None) -> None:
        if node is not None:
            skip.update(id(n) for n in ast.walk(node))

    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            under(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            under(node.returns)
        elif isinstance(node, ast.AnnAssign):
            under(node.annotation)
        elif isinstance(node, ast.JoinedStr) or _type_checking(node) or _no_op(node):
            under(node)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for decorator in node.decorator_list:
                under(_cache_size(decorator))
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                under(body[0])
    return skip


def _is_log_call(stmt: ast.stmt) -> bool:
    if not isinstance(stmt, ast.Expr) or not isinstance(stmt.value, ast.Call):
        return False
    func = stmt.value.func
    return (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id in LOG_NAMES
    )


def _assigned_names(function: ast.AST) -> dict[str, int]:
    counts: dict[str, int] = {}
    for node in ast.walk(function):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign | ast.AugAssign | ast.For):
            targets = [node.target]
        for target in targets:
            for name in ast.walk(target):
                if isinstance(name, ast.Name):
                    counts[name.id] = counts.get(name.id, 0) + 1
    return counts


def _deletable(stmt: ast.stmt, assigned: dict[str, int]) -> bool:
    if isinstance(stmt, ast.Expr):
        return not _is_log_call(stmt)
    if isinstance(stmt, ast.Assign | ast.AnnAssign):
        if isinstance(stmt, ast.AnnAssign) and stmt.value is None:
            return False
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        names = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
        plain = all(isinstance(t, ast.Name | ast.Tuple) for t in targets)
        return not plain or all(assigned.get(name, 0) > 1 for name in names)
    return isinstance(
        stmt,
        ast.AugAssign
        | ast.Raise
        | ast.If
        | ast.For
        | ast.While
        | ast.With
        | ast.Assert
        | ast.Delete,
    )


FLIPS: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
}


def _return_swaps(value: ast.expr | None) -> list[str]:
    if value is None or (isinstance(value, ast.Constant) and value.value is None):
        return []
    if isinstance(value, ast.Constant) and isinstance(value.value, bool):
        return [repr(not value.value)]
    swaps = ["None"]
    if isinstance(value, ast.List | ast.ListComp) and not (
        isinstance(value, ast.List) and not value.elts
    ):
        swaps.append("[]")
    if isinstance(value, ast.Compare | ast.BoolOp) or (
        isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not)
    ):
        swaps.append(f"not ({ast.unparse(value)})")
    return swaps


def make_mutants(module: str, source: bytes) -> list[Mutant]:
    """Every mutant of one module, in source order, numbered from 1."""
    tree = ast.parse(source)
    skip = _skipped(tree)
    starts = _offsets(source)
    found: list[tuple[int, int, str, ast.AST, str, bool]] = []

    def span(node: ast.AST) -> tuple[int, int]:
        a = starts[node.lineno] + node.col_offset  # type: ignore[attr-defined]
        b = starts[node.end_lineno] + node.end_col_offset  # type: ignore[attr-defined]
        return a, b

    def add(node: ast.AST, operator: str, replacement: str, in_function: bool) -> None:
        a, b = span(node)
        found.append((a, b, operator, node, replacement, in_function))

    def visit(node: ast.AST, function: ast.AST | None, assigned: dict[str, int]) -> None:
        if id(node) in skip:
            return
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            # Defaults and decorators run where the function is defined, not when it is called.
            for outer in (*node.decorator_list, *node.args.defaults, *node.args.kw_defaults):
                if outer is not None:
                    visit(outer, function, assigned)
            for stmt in node.body:
                visit(stmt, node, _assigned_names(node))
            return
        if isinstance(node, ast.Lambda):
            function, assigned = node, _assigned_names(node)
        inside = function is not None
        if (
            isinstance(node, ast.stmt)
            and inside
            and not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        ):
            if _deletable(node, assigned):
                add(node, "delete", "pass", inside)
            if isinstance(node, ast.Return):
                for swap in _return_swaps(node.value):
                    add(node, "return", f"return {swap}", inside)
        if isinstance(node, ast.Compare):
            for i, op in enumerate(node.ops):
                flipped = FLIPS.get(type(op))
                if flipped is not None:
                    changed = copy.deepcopy(node)
                    changed.ops[i] = flipped()
                    add(node, "boundary", ast.unparse(changed), inside)
        if isinstance(node, ast.BoolOp):
            changed = copy.deepcopy(node)
            changed.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
            add(node, "boolop", ast.unparse(changed), inside)
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, int)
            and not isinstance(node.value, bool)
        ):
            for step in (1, -1):
                add(node, "constant", repr(node.value + step), inside)
        for child in ast.iter_child_nodes(node):
            visit(child, function, assigned)

    visit(tree, None, {})
    mutants: list[Mutant] = []
    for a, b, operator, node, replacement, in_function in found:
        mutant = Mutant(
            module,
            len(mutants) + 1,
            operator,
            node.lineno,  # type: ignore[attr-defined]
            node.end_lineno,  # type: ignore[attr-defined]
            a,
            b,
            replacement,
            in_function,
        )
        changed = mutant.apply(source)
        if changed == source:
            continue
        try:
            compile(changed, module, "exec")
        except SyntaxError:
            continue
        mutants.append(mutant)
    return mutants


# -- configuration shared with mutmut ------------------------------------------------------


def mutmut_config() -> dict[str, list[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["mutmut"]
    return {key: list(value) for key, value in config.items() if isinstance(value, list)}


# -- running the tests ---------------------------------------------------------------------


def make_copy(parent: Path, name: str) -> Path:
    target = parent / name
    ignore = shutil.ignore_patterns("*.egg-info", "__pycache__", ".hypothesis")
    for folder in ("src", "tests", "docs"):
        shutil.copytree(ROOT / folder, target / folder, ignore=ignore)
    shutil.copy2(ROOT / "pyproject.toml", target / "pyproject.toml")
    return target


def environment(tree: Path) -> dict[str, str]:
    # PYTHONPATH comes before the editable install's path entry: the copy is what imports.
    return {**os.environ, "PYTHONPATH": f"{tree / 'src'}{os.pathsep}{Path(__file__).parent}"}


def coverage_map(
    tree: Path, modules: list[str], config: dict[str, list[str]]
) -> tuple[dict[str, dict[int, list[str]]], dict[str, float]]:
    """Run the fast tests once under coverage: (module -> line -> tests, test -> seconds)."""
    out = tree / "map.json"
    env = {
        **environment(tree),
        "AST_MUTANTS_MAP": str(out),
        "AST_MUTANTS_MODULES": ",".join(modules),
    }
    command = [
        sys.executable, "-m", "pytest", "-q", "--tb=line", *QUIET, "-p", "ast_mutants",
        *config.get("pytest_add_cli_args", []),
        *config.get("pytest_add_cli_args_test_selection", []),
    ]  # fmt: skip
    started = time.monotonic()
    result = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True)
    print(f"clean run under coverage: {time.monotonic() - started:.0f} s, pytest exit "
          f"{result.returncode}", flush=True)  # fmt: skip
    if not out.exists():
        print(result.stdout[-3000:], result.stderr[-3000:])
        raise SystemExit(1)
    data = json.loads(out.read_text("utf-8"))
    failed = set(data["failed"])
    if failed:
        print(f"{len(failed)} tests fail without any mutant in the copy; left out:")
        for name in sorted(failed)[:20]:
            print(f"  {name}")
    lines = {
        module: {int(n): [t for t in tests if t not in failed] for n, tests in by_line.items()}
        for module, by_line in data["lines"].items()
    }
    return lines, data["seconds"]


def read_map(path: Path) -> tuple[dict[str, dict[int, list[str]]], dict[str, float]]:
    data = json.loads(path.read_text("utf-8"))
    lines = {m: {int(n): t for n, t in by_line.items()} for m, by_line in data["lines"].items()}
    return lines, data["seconds"]


def tests_for(
    mutant: Mutant, lines: dict[str, dict[int, list[str]]], seconds: dict[str, float]
) -> list[str]:
    by_line = lines.get(mutant.module, {})
    if mutant.in_function:
        wanted = range(mutant.line, mutant.end_line + 1)
        if mutant.operator in {"delete", "return"}:
            wanted = range(mutant.line, mutant.line + 1)
        chosen = {t for n in wanted for t in by_line.get(n, [])}
    else:  # module level runs at import: every test that reaches the module may depend on it
        chosen = {t for tests in by_line.values() for t in tests}
    return sorted(chosen, key=lambda t: (seconds.get(t, 0.0), t))


def run_mutant(
    copies: queue.Queue[Path], mutant: Mutant, tests: list[str], seconds: dict[str, float]
) -> tuple[Mutant, str, float]:
    if not tests:
        return mutant, "no test", 0.0
    tree = copies.get()
    path = tree / mutant.module
    original = path.read_bytes()
    started = time.monotonic()
    try:
        path.write_bytes(mutant.apply(original))
        args = tree / "args.txt"
        args.write_text("\n".join(tests) + "\n", "utf-8")
        config = mutmut_config()
        command = [
            sys.executable, "-m", "pytest", "-x", "-q", "--tb=no", *QUIET,
            *config.get("pytest_add_cli_args", []), f"@{args}",
        ]  # fmt: skip
        limit = 60 + 5 * sum(seconds.get(t, 0.0) for t in tests)
        process = subprocess.Popen(
            command,
            cwd=tree,
            env=environment(tree),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            code = process.wait(timeout=limit)
            verdict = "survived" if code == 0 else "no test" if code == 5 else "killed"
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            verdict = "timeout"
    finally:
        path.write_bytes(original)
        copies.put(tree)
    return mutant, verdict, time.monotonic() - started


# -- the coverage plugin (loaded into the clean run with ``-p ast_mutants``) ----------------

_MAP: dict[str, object] = {}


def pytest_configure(config: object) -> None:
    out = os.environ.get("AST_MUTANTS_MAP")
    if not out:
        return
    import coverage

    modules = os.environ["AST_MUTANTS_MODULES"].split(",")
    cov = coverage.Coverage(data_file=None, include=[str(Path.cwd() / m) for m in modules])
    cov.start()
    _MAP.update(cov=cov, out=out, modules=modules, seconds={}, failed=[])


def pytest_runtest_logreport(report: object) -> None:
    if not _MAP:
        return
    nodeid: str = report.nodeid  # type: ignore[attr-defined]
    seconds: dict[str, float] = _MAP["seconds"]  # type: ignore[assignment]
    seconds[nodeid] = seconds.get(nodeid, 0.0) + report.duration  # type: ignore[attr-defined]
    if report.failed:  # type: ignore[attr-defined]
        _MAP["failed"].append(nodeid)  # type: ignore[attr-defined]


def pytest_runtest_setup(item: object) -> None:
    if _MAP:
        _MAP["cov"].switch_context(item.nodeid)  # type: ignore[attr-defined]


def pytest_unconfigure(config: object) -> None:
    if not _MAP:
        return
    cov = _MAP["cov"]
    cov.stop()  # type: ignore[attr-defined]
    data = cov.get_data()  # type: ignore[attr-defined]
    lines: dict[str, dict[int, list[str]]] = {}
    for module in _MAP["modules"]:  # type: ignore[attr-defined]
        by_line = data.contexts_by_lineno(str(Path.cwd() / module))
        lines[module] = {n: sorted(c for c in tests if c) for n, tests in by_line.items()}
    payload = {"lines": lines, "seconds": _MAP["seconds"], "failed": _MAP["failed"]}
    Path(_MAP["out"]).write_text(json.dumps(payload), "utf-8")  # type: ignore[arg-type]


# -- the command ---------------------------------------------------------------------------


def selected(args: argparse.Namespace, modules: list[str]) -> Iterator[tuple[Mutant, bytes]]:
    rng = random.Random(args.seed)
    for module in modules:
        source = (ROOT / module).read_bytes()
        mutants = make_mutants(module, source)
        if args.only:
            mutants = [m for m in mutants if m.name in args.only]
        elif args.sample and len(mutants) > args.sample:
            mutants = sorted(rng.sample(mutants, args.sample), key=lambda m: m.number)
        for mutant in mutants:
            yield mutant, source


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min", type=float, default=0.0, help="fail below this overall %%")
    parser.add_argument("--sample", type=int, default=0, help="at most N mutants per module")
    parser.add_argument("--seed", type=int, default=29)
    parser.add_argument("--module", action="append", help="a path from only_mutate (repeatable)")
    parser.add_argument("--only", action="append", help="run only this mutant (repeatable)")
    parser.add_argument("--list", action="store_true", help="print the mutants, run nothing")
    parser.add_argument("--show", action="append", help="print this mutant's diff")
    parser.add_argument("--jobs", type=int, default=int(os.environ.get("MUTATE_JOBS", "2")))
    parser.add_argument(
        "--map", type=Path, help="keep the clean run's line -> tests map here, and reuse it"
    )
    parser.add_argument(
        "--tests", action="append", help="run these tests for every mutant instead (repeatable)"
    )
    args = parser.parse_args(argv)
    config = mutmut_config()
    modules = [m for m in config["only_mutate"] if not args.module or m in args.module]
    chosen = list(selected(args, modules))
    if args.list or args.show:
        for mutant, source in chosen:
            if args.show and mutant.name not in args.show:
                continue
            print(f"{mutant.name} [{mutant.operator}] line {mutant.line}")
            if args.show:
                print(mutant.diff(source))
        return 0
    print(f"{len(chosen)} mutants in {len(modules)} modules", flush=True)
    with tempfile.TemporaryDirectory(prefix="paycore-ast-mutants-") as tmp:
        copies: queue.Queue[Path] = queue.Queue()
        first = make_copy(Path(tmp), "copy0")
        if args.tests:
            lines, seconds = {}, {}
        elif args.map and args.map.exists():
            lines, seconds = read_map(args.map)
        else:
            lines, seconds = coverage_map(first, config["only_mutate"], config)
            if args.map:
                args.map.write_text(json.dumps({"lines": lines, "seconds": seconds}), "utf-8")
        copies.put(first)
        for i in range(1, args.jobs):
            copies.put(make_copy(Path(tmp), f"copy{i}"))
        results: list[tuple[Mutant, str, float]] = []
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            jobs = [
                pool.submit(
                    run_mutant, copies, m, args.tests or tests_for(m, lines, seconds), seconds
                )
                for m, _ in chosen
            ]
            for done, job in enumerate(jobs, 1):
                mutant, verdict, took = job.result()
                results.append((mutant, verdict, took))
                print(f"[{done}/{len(jobs)}] {mutant.name} {verdict} ({took:.0f} s)", flush=True)
    return report(results, {m.name: s for m, s in chosen}, args.min)


def report(
    results: list[tuple[Mutant, str, float]], sources: dict[str, bytes], minimum: float
) -> int:
    print(f"\n{'module':<36} {'killed':>7} {'total':>6} {'score':>7}")
    killed_all = 0
    for module in dict.fromkeys(m.module for m, _, _ in results):
        mine = [v for m, v, _ in results if m.module == module]
        killed = sum(1 for v in mine if v in {"killed", "timeout"})
        killed_all += killed
        print(f"{module:<36} {killed:>7} {len(mine):>6} {100 * killed / len(mine):>6.1f}%")
    total = len(results)
    score = 100 * killed_all / total if total else 100.0
    print(f"{'overall':<36} {killed_all:>7} {total:>6} {score:>6.1f}%")
    survivors = [(m, v) for m, v, _ in results if v in {"survived", "no test"}]
    if survivors:
        print(f"\nsurviving ({len(survivors)}; `--show NAME` prints one again):")
        for mutant, verdict in survivors:
            print(f"\n{mutant.name} [{mutant.operator}] {verdict}")
            print(mutant.diff(sources[mutant.name]))
    return 1 if score < minimum else 0


if __name__ == "__main__":
    sys.exit(main())
