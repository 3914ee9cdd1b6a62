"""Alembic environment. ``migrate()`` hands in an open connection; the ``alembic`` command
line (with ``alembic.ini`` beside this package) gets its URL from ``sqlalchemy.url`` or
``PAYCORE_DATABASE_URL``.

Only ``paycore_*`` tables are ours: autogenerate must never propose dropping the merchant's.
Logging is left alone on purpose (no ``fileConfig``): this runs inside the host app.
"""

from __future__ import annotations

import os
from typing import Any

from alembic import context
from sqlalchemy import Connection

from paycore_storage.engine import database_url, make_engine
from paycore_storage.migrations import VERSION_TABLE
from paycore_storage.tables import metadata


def include_name(name: str | None, type_: str, _parent: Any) -> bool:
    return type_ != "table" or bool(name and name.startswith("paycore_"))


OPTIONS: dict[str, Any] = {
    "target_metadata": metadata,
    "version_table": VERSION_TABLE,
    "include_name": include_name,
    "render_as_batch": True,  # SQLite can only ALTER through table copies
}


def _url() -> str:
    url = context.config.get_main_option("sqlalchemy.url") or os.environ.get("PAYCORE_DATABASE_URL")
    if not url:
        raise RuntimeError("set sqlalchemy.url or PAYCORE_DATABASE_URL")
    return url


def _run(connection: Connection) -> None:
    context.configure(connection=connection, **OPTIONS)
    with context.begin_transaction():
        context.run_migrations()


def run() -> None:
    if context.is_offline_mode():
        context.configure(url=database_url(_url()), literal_binds=True, **OPTIONS)
        with context.begin_transaction():
            context.run_migrations()
        return
    connection = context.config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = make_engine(_url())
    try:
        with engine.begin() as connection:
            _run(connection)
    finally:
        engine.dispose()


run()
