"""The API reference page: Swagger UI on ``{prefix}/openapi.json``, served from the package.

Why vendored files: a reader's browser should load nothing from a CDN, and the page runs
under the same strict Content-Security-Policy as the checkout page (scripts from this origin
only, none inline), so its start-up code is a file of its own (assets/docs.js). The Swagger
UI files are kept as distributed; VENDORED.md records their version and licence.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping
from importlib.resources import files

from ..checkout import CONTENT_TYPES, Asset


@functools.cache
def assets() -> Mapping[str, Asset]:
    """Every servable file of assets/ (scripts and stylesheets), read once."""
    found: dict[str, Asset] = {}
    for entry in files(__package__).joinpath("assets").iterdir():
        suffix = "." + entry.name.rsplit(".", 1)[-1] if "." in entry.name else ""
        if not entry.is_file() or suffix not in CONTENT_TYPES:
            continue
        body = entry.read_bytes()
        etag = '"' + hashlib.sha256(body).hexdigest()[:20] + '"'
        found[entry.name] = Asset(entry.name, body, CONTENT_TYPES[suffix], etag)
    return found


@functools.cache
def page() -> bytes:
    return files(__package__).joinpath("index.html").read_bytes()
