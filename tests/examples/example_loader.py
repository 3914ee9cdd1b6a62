"""Import an example by its file path: examples/ is not a package, as a user's app is not."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load(relative: str) -> ModuleType:
    path = EXAMPLES / relative
    name = "example_" + path.parent.name
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and Litestar resolve annotations through it
    spec.loader.exec_module(module)
    return module
