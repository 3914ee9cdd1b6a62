"""The documentation site's home page is README.md, its links rewritten for docs/.

``make docs`` (mkdocs build --strict, run by CI) fails on any broken link; this checks the one
piece of our own code in the build, the hook that turns README.md into the home page.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _hooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "mkdocs_hooks", ROOT / "scripts" / "mkdocs_hooks.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_docs_links_are_made_relative_to_the_docs_folder() -> None:
    text = "See [the interface](docs/interface.md#errors) and [x](https://example.org/docs/x)."
    assert _hooks().home_page(text) == (
        "See [the interface](interface.md#errors) and [x](https://example.org/docs/x)."
    )


def test_every_page_readme_links_to_exists_in_docs() -> None:
    home = _hooks().home_page((ROOT / "README.md").read_text("utf-8"))
    pages = re.findall(r"\]\(([^)#:]+\.md)(?:#[^)]*)?\)", home)
    assert pages, "README.md links to no page of docs/"
    assert [p for p in pages if not (ROOT / "docs" / p).is_file()] == []
