"""The Gateway stays the one facade (issue 13): a guard over the source, not over behaviour.

Outside code once reached ``gateway.storage`` in 13 modules and edited ``gateway.notifiers``
in two; each such reach is a second way into storage that the services cannot vouch for.
These tests read the source with ``ast`` (so imports, docstrings and comments never count)
and fail naming the file and line of any reach that comes back.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from paycore import NATIVE, Gateway, Settings
from paycore.domain.machine import OPEN
from paycore.domain.records import Status
from paycore.notify import BaseNotifier

SRC = Path(__file__).resolve().parents[2] / "src"
CORE = ("paycore", "paycore_flask", "paycore_litestar")

#: Modules that may hold and use a Storage: the gateway, which owns it, and the services it
#: builds, each holding it privately as ``self._storage``. Storage plugins (``storage/``,
#: ``paycore_storage``) implement the contract and are not callers.
STORAGE_HOLDERS = {
    "paycore/gateway.py",
    "paycore/auth/service.py",
    "paycore/events/queues.py",
    "paycore/events/signals.py",
    "paycore/webhooks/service.py",
    "paycore/webhooks/dispatcher.py",
    "paycore/webhooks/endpoints.py",
    "paycore/management/service.py",
    "paycore/chains/ledger.py",
    "paycore/prices/parking.py",
    "paycore/prices/service.py",
    "paycore/ops/retention.py",
    "paycore/ops/idempotency.py",
    "paycore/accounting/service.py",
    "paycore/accounting/search.py",
    "paycore/subscriptions/service.py",
    "paycore/links/service.py",
    "paycore/merchant/service.py",
    "paycore/payouts/service.py",
    "paycore/notify/receipts.py",
    # The Gateway's own operations, written in files of their own (paycore.facade).
    "paycore/facade/lists.py",
    "paycore/facade/loop.py",
    "paycore/facade/refunds.py",
}


def _modules() -> Iterator[tuple[str, ast.Module]]:
    for package in CORE:
        for path in sorted((SRC / package).rglob("*.py")):
            name = path.relative_to(SRC).as_posix()
            if name.startswith("paycore/storage/"):
                continue
            yield name, ast.parse(path.read_text(encoding="utf-8"), filename=name)


def _attributes(tree: ast.Module, attr: str) -> Iterator[ast.Attribute]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == attr:
            yield node


def test_nothing_outside_the_gateway_reaches_storage() -> None:
    reaches = [
        f"{name}:{node.lineno}"
        for name, tree in _modules()
        if name != "paycore/gateway.py"
        for node in _attributes(tree, "storage")
    ]
    assert not reaches, f"use a Gateway service instead of .storage at {reaches}"


def test_private_storage_is_only_used_by_its_holder() -> None:
    """``_storage`` is read as ``self._storage`` in the holders, and nowhere else."""
    wrong = [
        f"{name}:{node.lineno}"
        for name, tree in _modules()
        for node in _attributes(tree, "_storage")
        if name not in STORAGE_HOLDERS
        or not (isinstance(node.value, ast.Name) and node.value.id == "self")
    ]
    assert not wrong, f"another object's private storage is reached at {wrong}"


def test_notifiers_are_not_edited_or_probed() -> None:
    edits = {"append", "insert", "remove", "extend", "pop", "clear"}
    wrong = []
    for name, tree in _modules():
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and node.attr in edits
                and isinstance(node.value, ast.Attribute)
                and node.value.attr in {"notifiers", "_notifiers"}
            ):
                wrong.append(f"{name}:{node.lineno}")
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "getattr"
                and len(node.args) >= 2
                and isinstance(node.args[0], ast.Name)
                and node.args[0].id in {"notifier", "n"}
            ):
                wrong.append(f"{name}:{node.lineno} (getattr probe)")
    assert not wrong, f"use Gateway.add_notifier/remove_notifier and the contract at {wrong}"


def _open_pair(node: ast.AST) -> bool:
    """A tuple, list or set literal holding exactly init and partialPaid, in any spelling."""
    if not isinstance(node, ast.Tuple | ast.List | ast.Set):
        return False
    names = set()
    for element in node.elts:
        if isinstance(element, ast.Constant) and isinstance(element.value, str):
            names.add(element.value)
        elif isinstance(element, ast.Attribute) and element.attr in {"INIT", "PARTIAL_PAID"}:
            names.add(Status[element.attr].value)
        else:
            return False
    return names == {status.value for status in OPEN}


def test_open_statuses_are_written_out_only_in_the_machine() -> None:
    found = []
    for package in (*CORE, "paycore_storage"):
        for path in sorted((SRC / package).rglob("*.py")):
            name = path.relative_to(SRC).as_posix()
            if name == "paycore/domain/machine.py":
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            found += [f"{name}:{n.lineno}" for n in ast.walk(tree) if _open_pair(n)]
    assert not found, f"use paycore.domain.machine.OPEN at {found}"


class Recorder(BaseNotifier):
    name = "recorder"

    def __init__(self) -> None:
        self.bound: list[Gateway] = []
        self.changes: list[str] = []
        self.closed = 0

    def bind(self, gateway: Gateway) -> None:
        self.bound.append(gateway)

    def invoice_changed(self, owner: str, payload: dict[str, object]) -> None:
        self.changes.append(str(payload["status"]))

    def close(self) -> None:
        self.closed += 1


NOW = [1_700_000_000.0]  # the test's clock, unix seconds


@pytest.fixture
def gw() -> Iterator[Gateway]:
    NOW[0] = 1_700_000_000.0
    gateway = Gateway(Settings(database_url="memory://"), entry_points=False, clock=lambda: NOW[0])
    yield gateway
    gateway.close()


def _due_invoice(gw: Gateway, n: int) -> None:
    fields = {
        "description": "facade test",
        "value": "1",
        "chainId": 1,
        "acceptedTokens": [f"1:{NATIVE}"],
        "address": f"0x{n:040x}",
        "deadlineSecs": 60,
    }
    gw.create_invoice("0x" + "ab" * 20, fields)


def test_added_notifier_is_bound_once_told_and_removed(gw: Gateway) -> None:
    recorder = Recorder()
    gw.add_notifier(recorder)
    gw.add_notifier(recorder)  # again: still one entry, bound once
    assert recorder.bound == [gw] and gw.notifiers.count(recorder) == 1
    _due_invoice(gw, 1)
    NOW[0] += 61
    assert gw.expire_due() == 1
    assert recorder.changes == ["expired"]
    gw.remove_notifier(recorder)
    gw.remove_notifier(recorder)  # absent: nothing happens
    assert recorder not in gw.notifiers
    _due_invoice(gw, 2)
    NOW[0] += 61
    assert gw.expire_due() == 1
    assert recorder.changes == ["expired"]  # removed: not told


def test_close_reaches_a_notifier_without_a_close_of_its_own(gw: Gateway) -> None:
    """A BaseNotifier subclass overriding only invoice_changed needs nothing else."""

    class Minimal(BaseNotifier):
        name = "minimal"

    gw.add_notifier(Minimal(), first=True)
    recorder = Recorder()
    gw.add_notifier(recorder)
    assert gw.notifiers[0].name == "minimal"
    gw.close()
    assert recorder.closed == 1
