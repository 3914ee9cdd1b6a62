"""SQLAlchemy 2 storage for paycore: SQLite by default, PostgreSQL in production.

``SqlStorage(url)`` implements ``paycore.storage.Storage``; ``migrate(url)`` brings a
database's ``paycore_*`` tables to the newest Alembic revision.
"""

from __future__ import annotations

from .migrations import migrate
from .sql import SqlStorage

__all__ = ["SqlStorage", "migrate"]
