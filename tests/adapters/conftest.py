"""Fixtures for the adapter tests: a memory-backed gateway on a fixed clock."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from adapter_helpers import make_gateway

from paycore import Gateway


@pytest.fixture
def gateway() -> Iterator[Gateway]:
    gw = make_gateway()
    yield gw
    gw.close()
