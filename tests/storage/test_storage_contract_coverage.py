"""The shipped contract suite (``paycore.testing.storage_contract``) calls every method of every
protocol ``StorageTx`` is composed of (``paycore.storage.protocols``, the idempotency keys),
and of ``Storage`` (but ``close``, which the plugin's own ``storage`` fixture calls): a method
no test calls is a duty no store is held to.

Read from the source of the modules that define the suite's tests (a call ``x.name(...)``
anywhere in them), one test per protocol, so a new protocol mixed into ``StorageTx`` without
contract tests fails here by name.
"""

from __future__ import annotations

import ast
import inspect
import sys
from functools import cache

import pytest

from paycore.storage import AsyncInvoiceRead, AsyncSignedRead, SpendThenRead, Storage, StorageTx
from paycore.testing import storage_contract


def _protocols() -> list[type]:
    """``StorageTx``'s concern protocols, in its order, ``Storage``, and the optional parts
    of ``Storage`` a store may add (``spend_then_read_of``, ``async_read_of``,
    ``async_spend_of``)."""
    bases = [
        base
        for base in StorageTx.__mro__[1:]
        if base.__module__.startswith("paycore.") and _own_methods(base)
    ]
    return [*bases, *_OF_STORAGE]


#: ``Storage`` and its optional parts: not ``StorageTx``'s.
_OF_STORAGE = (Storage, SpendThenRead, AsyncInvoiceRead, AsyncSignedRead)


def _own_methods(protocol: type) -> list[str]:
    return [
        name
        for name, value in vars(protocol).items()
        if inspect.isfunction(value) and not name.startswith("_")
    ]


@cache
def _called() -> frozenset[str]:
    """Every attribute name called in a module that defines a test of the suite."""
    modules = {
        value.__module__
        for name, value in vars(storage_contract).items()
        if name.startswith("test_") and callable(value)
    }
    names: set[str] = set()
    for module in modules:
        source = inspect.getsource(sys.modules[module])
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                names.add(node.func.attr)
    return frozenset(names)


def test_storage_tx_is_composed_of_the_protocols_and_adds_no_method_of_its_own() -> None:
    assert len(_protocols()) > 20
    assert _own_methods(StorageTx) == []
    composed = {name for base in _protocols()[: -len(_OF_STORAGE)] for name in _own_methods(base)}
    public = {name for name in dir(StorageTx) if not name.startswith("_")}
    assert composed == public


@pytest.mark.parametrize("protocol", _protocols(), ids=lambda p: p.__name__)
def test_the_suite_calls_every_method_of(protocol: type) -> None:
    methods = [name for name in _own_methods(protocol) if (protocol, name) != (Storage, "close")]
    assert methods, protocol
    uncalled = [name for name in methods if name not in _called()]
    assert uncalled == [], f"{protocol.__name__}: no contract test calls {uncalled}"
