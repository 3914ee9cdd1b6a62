"""An adapter imported without its extra names the extra to install, in one line, instead of
the bare ModuleNotFoundError of a module deep in its import chain (a newcomer's first hour)."""

from __future__ import annotations

import importlib
import sys

import pytest


@pytest.mark.parametrize(
    ("adapter", "framework", "extra"),
    [("paycore_flask", "flask", "flask"), ("paycore_litestar", "litestar", "litestar")],
)
def test_an_adapter_without_its_framework_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, adapter: str, framework: str, extra: str
) -> None:
    monkeypatch.setitem(sys.modules, framework, None)  # as if not installed
    monkeypatch.delitem(sys.modules, adapter, raising=False)
    with pytest.raises(ModuleNotFoundError) as missing:
        importlib.import_module(adapter)
    assert str(missing.value) == f"{adapter} needs {framework}: pip install 'paycore[{extra}]'"
    assert missing.value.name == framework


@pytest.mark.parametrize("adapter", ["paycore_flask", "paycore_litestar"])
def test_with_its_extra_an_adapter_imports(adapter: str) -> None:
    assert importlib.import_module(adapter).__all__
