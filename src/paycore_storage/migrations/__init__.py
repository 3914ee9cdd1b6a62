"""Alembic migrations of the paycore tables, and ``migrate`` to run them from code.

The version table is ``paycore_alembic_version``, not Alembic's default: the merchant's app
often keeps its own Alembic history in the same database, and the two must not collide.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, func, select
from sqlalchemy.engine import URL

from ..engine import advisory_key, make_engine

VERSION_TABLE = "paycore_alembic_version"
MIGRATION_LOCK = advisory_key("paycore.migrate")


def alembic_config() -> Config:
    """A Config for this package's scripts, with no alembic.ini needed."""
    config = Config()
    config.set_main_option("script_location", str(Path(__file__).resolve().parent))
    return config


def migrate(target: str | URL | Engine, revision: str = "head") -> None:
    """Upgrade the database at ``target`` (a URL or an Engine) to ``revision``.

    Runs in one transaction; on PostgreSQL under an advisory lock, so several workers
    starting at once upgrade once and the rest find the schema current.
    """
    engine = target if isinstance(target, Engine) else make_engine(target)
    try:
        with engine.begin() as connection:
            if connection.dialect.name == "postgresql":
                connection.execute(select(func.pg_advisory_xact_lock(MIGRATION_LOCK)))
            config = alembic_config()
            config.attributes["connection"] = connection
            command.upgrade(config, revision)
    finally:
        if engine is not target:
            engine.dispose()
