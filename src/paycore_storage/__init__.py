"""SQLAlchemy 2 storage for paycore: SQLite by default, PostgreSQL in production."""
