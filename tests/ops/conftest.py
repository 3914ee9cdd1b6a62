"""Fixtures for the operations tests: one private PostgreSQL server for the session.

Tests may stop and start it (they leave it running); it is deleted at the end. Without the
PostgreSQL server binaries the tests skip, unless ``PAYCORE_REQUIRE_POSTGRES=1``, where a
skip would hide a missing database, so they fail.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator

import pytest
from ops_helpers import PrivatePostgres, postgres_bindir


@pytest.fixture(scope="session")
def private_postgres() -> Iterator[PrivatePostgres]:
    bindir = postgres_bindir()
    if bindir is None:
        reason = "PostgreSQL server binaries (initdb, pg_ctl) not found"
        if os.environ.get("PAYCORE_REQUIRE_POSTGRES", "").lower() in ("1", "true", "yes"):
            pytest.fail(reason + " (PAYCORE_REQUIRE_POSTGRES is set)", pytrace=False)
        pytest.skip(reason)
    # A password nothing else could print by accident, so finding it in a log means a leak.
    server = PrivatePostgres(bindir, password="Pg-S3cret-" + secrets.token_hex(6))
    try:
        server.start()
        yield server
    finally:
        server.close()
