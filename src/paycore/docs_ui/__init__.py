"""The API reference page: Swagger UI on ``{prefix}/openapi.json``, served from the package.

Why vendored files: a reader's browser should load nothing from a CDN, and the page runs
under the same strict Content-Security-Policy as the checkout page (scripts from this origin
only, none inline), so its start-up code is a file of its own (assets/docs.js). The Swagger
UI files are kept as distributed; VENDORED.md records their version and licence.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from importlib.resources import files

from ..checkout import Asset, package_assets


@functools.cache
def assets() -> Mapping[str, Asset]:
    """Every servable file of assets/ (scripts and stylesheets), read once."""
    return package_assets(__package__)


@functools.cache
def page() -> bytes:
    return files(__package__).joinpath("index.html").read_bytes()
