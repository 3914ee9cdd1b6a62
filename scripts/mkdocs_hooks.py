"""MkDocs hooks: the site's home page is README.md, so the two can never disagree.

README.md lives at the repository root, where GitHub and PyPI show it, and links to the
pages under ``docs/`` as ``docs/<page>.md``. The site is built from ``docs/``, so the hook
adds the README as a generated ``index.md`` with those links made relative to ``docs/``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

README = Path(__file__).resolve().parents[1] / "README.md"

_DOCS_LINK = re.compile(r"\]\(docs/")


def home_page(text: str) -> str:
    """README text with its ``](docs/...)`` links pointing within the docs directory."""
    return _DOCS_LINK.sub("](", text)


def on_files(files: Files, config: MkDocsConfig, **_: Any) -> Files:
    if files.get_file_from_path("index.md") is None:
        home = home_page(README.read_text("utf-8"))
        files.append(File.generated(config, "index.md", content=home))
    return files
