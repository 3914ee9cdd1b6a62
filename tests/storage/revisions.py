"""Taking a test database back to an earlier revision, as an operator's ``alembic downgrade``
would (paycore's own ``migrate`` only goes forward)."""

from __future__ import annotations

from alembic import command
from sqlalchemy.engine import URL

from paycore_storage.engine import make_engine
from paycore_storage.migrations import alembic_config


def downgrade(url: str | URL, revision: str) -> None:
    """Run paycore's revisions down to ``revision`` in one transaction."""
    engine = make_engine(url)
    try:
        with engine.begin() as connection:
            config = alembic_config()
            config.attributes["connection"] = connection
            command.downgrade(config, revision)
    finally:
        engine.dispose()
