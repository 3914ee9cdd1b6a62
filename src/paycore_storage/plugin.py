"""The pluggy entry point (group ``paycore``, name ``sqlalchemy_storage``): answers the
``paycore_storage`` hook for SQLite and PostgreSQL URLs and stays silent for anything else,
so another storage plugin (or the built-in ``memory:``) can take the URL."""

from __future__ import annotations

from paycore.config import Settings
from paycore.plugins.hookspecs import hookimpl
from paycore.storage import Storage

from .engine import handles
from .sql import SqlStorage


@hookimpl
def paycore_storage(settings: Settings) -> Storage | None:
    if not handles(settings.database_url):
        return None
    return SqlStorage(settings.database_url)
