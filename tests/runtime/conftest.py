"""The shared event fixtures (tests/shared/event_fixtures.py): storage on every backend,
fresh SQL databases for worker processes, a live webhook receiver."""

from event_fixtures import receiver, shared_postgres_url, sql_url, store

__all__ = ["receiver", "shared_postgres_url", "sql_url", "store"]
