"""Every service depends on the narrow storage protocols it uses (issue 29), not on the whole
``StorageTx``.

``StorageTx`` is the sum of the narrow protocols in ``paycore.storage.protocols`` (and the
search, subscription, payout and idempotency stores beside them). A function that is handed
a transaction names only the concerns it touches (``tx: Pruning``), or an intersection
Protocol defined next to it when it needs a few (``WebhookQueueTx``), so its signature says
what it may read and write and a reader of a storage plugin sees which service leans on
which duty. This test reads every module of ``paycore`` outside ``paycore/storage/`` (where
``StorageTx`` is defined and the stores are opened) and ``paycore/testing/`` (the contract
suite holds a store whole) and fails on any annotation or type alias that names
``StorageTx``, unless it is in :data:`ALLOWED` with its reason. A listed use that is gone
fails too, so the list only shrinks. Docstrings that mention ``StorageTx.method`` are text,
not dependencies, and are not read.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "paycore"
EXEMPT = ("storage", "testing")

#: (module under src/paycore, function or alias) -> why it still takes the whole StorageTx.
#: Remove an entry when it narrows; add none.
ALLOWED: dict[tuple[str, str], str] = {}


def _names_whole_tx(node: ast.AST | None) -> bool:
    return node is not None and any(
        (isinstance(n, ast.Name) and n.id == "StorageTx")
        or (isinstance(n, ast.Attribute) and n.attr == "StorageTx")
        or (isinstance(n, ast.Constant) and isinstance(n.value, str) and "StorageTx" in n.value)
        for n in ast.walk(node)
    )


def whole_tx_uses(source: str) -> Iterator[tuple[str, int]]:
    """(function or alias name, line) of each annotation or type alias naming StorageTx."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            args = node.args
            every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
            annotations = [a.annotation for a in every if a is not None]
            if any(_names_whole_tx(a) for a in [*annotations, node.returns]):
                yield node.name, node.lineno
        elif isinstance(node, ast.AnnAssign) and _names_whole_tx(node.annotation):
            yield ast.unparse(node.target), node.lineno
        elif (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Subscript)  # an alias: Step = Callable[[StorageTx], int]
            and _names_whole_tx(node.value)
        ):
            yield ast.unparse(node.targets[0]), node.lineno


def found() -> dict[tuple[str, str], int]:
    uses: dict[tuple[str, str], int] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        if module.split("/")[0] in EXEMPT:
            continue
        for name, line in whole_tx_uses(path.read_text(encoding="utf-8")):
            uses[(module, name)] = line
    return uses


def test_no_service_takes_the_whole_storage_transaction() -> None:
    uses = found()
    new = [f"{m}:{line} {name}" for (m, name), line in uses.items() if (m, name) not in ALLOWED]
    assert new == [], (
        "these take the whole StorageTx; name the narrow protocols they use "
        "(paycore.storage.protocols) instead:\n" + "\n".join(new)
    )
    gone = sorted(key for key in ALLOWED if key not in uses)
    assert gone == [], f"narrowed since: remove from ALLOWED: {gone}"


def test_the_check_sees_each_way_of_naming_the_whole_transaction() -> None:
    source = '''
from collections.abc import Callable
from paycore import storage
from paycore.storage import StorageTx
from paycore.storage.protocols.pruning import Pruning

def narrow(tx: Pruning, n: int) -> int:
    """Uses ``StorageTx.prune_events``: a docstring is not a dependency."""
    return n

def whole(tx: StorageTx) -> None: ...
def by_module(tx: storage.StorageTx) -> None: ...
def quoted(tx: "StorageTx") -> None: ...
def keyword(*, tx: StorageTx | None = None) -> None: ...
def handed(step: Callable[[StorageTx], int]) -> None: ...
Step = Callable[[StorageTx, int], int]
step: Callable[[StorageTx], int]
'''
    names = [name for name, _line in whole_tx_uses(source)]
    assert names == ["whole", "by_module", "quoted", "keyword", "handed", "Step", "step"]
