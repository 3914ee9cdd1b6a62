"""paycore's pytest plugin (entry point ``pytest11``): fixtures for merchants' tests.

Loaded in every pytest session of a project where paycore is installed, so it imports
nothing but pytest at load time and defines only fixtures named ``paycore_*``: a test gets
one by asking for it. docs/testing.md shows them at work.

- ``paycore_backend``: ``"memory"`` (default) or ``"sqlite"``; parametrize or override it.
- ``paycore_settings``, ``paycore_storage``, ``paycore_gateway``: a gateway on that storage,
  with the fake chain's token priced 1 and no entry-point plugins (no chain node is asked).
- ``paycore_chain``: a ``FakeChain`` paying invoices through ``Gateway.ingest``.
- ``paycore_signals``: the gateway's signal consumer: ``run_once()`` calls every handler
  registered so far, whenever it was registered, for each event since the fixture started.
- ``paycore_client``: a factory wrapping a Flask or Litestar test client in a
  session-signing ``PaycoreClient``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ..config import Settings
    from ..events.signals import SignalConsumer
    from ..gateway import Gateway
    from ..storage import Storage
    from .chain import FakeChain
    from .client import PaycoreClient


@pytest.fixture
def paycore_backend() -> str:
    """Which storage ``paycore_storage`` makes: ``"memory"`` or ``"sqlite"``."""
    return "memory"


@pytest.fixture
def paycore_settings(paycore_backend: str, tmp_path: Path) -> Settings:
    import attrs

    from ..config import ChainConfig, Settings
    from .chain import CHAIN_ID, TOKEN

    url = "memory://"
    if paycore_backend == "sqlite":
        url = f"sqlite:///{tmp_path / 'paycore.sqlite3'}"
    elif paycore_backend != "memory":
        raise pytest.UsageError(f"paycore_backend: {paycore_backend!r} is not memory or sqlite")
    settings = Settings(
        database_url=url,
        prices={f"{CHAIN_ID}:{TOKEN}": "1"},
        checkout_url="https://pay.example.test/checkout",
    )
    fake = ChainConfig(CHAIN_ID, "paycore fake chain")
    return attrs.evolve(settings, chains={**settings.chains, CHAIN_ID: fake})


@pytest.fixture
def paycore_storage(paycore_settings: Settings) -> Iterator[Storage]:
    storage: Storage
    if paycore_settings.database_url.startswith("memory"):
        from ..storage.memory import MemoryStorage

        storage = MemoryStorage()
    else:
        from paycore_storage import SqlStorage

        storage = SqlStorage(paycore_settings.database_url)
    yield storage
    storage.close()


@pytest.fixture
def paycore_gateway(paycore_settings: Settings, paycore_storage: Storage) -> Iterator[Gateway]:
    from ..gateway import Gateway

    gateway = Gateway(paycore_settings, storage=paycore_storage, entry_points=False)
    yield gateway
    gateway.close()


@pytest.fixture
def paycore_chain(paycore_gateway: Gateway) -> FakeChain:
    from .chain import FakeChain

    return FakeChain(paycore_gateway)


@pytest.fixture
def paycore_signals(paycore_gateway: Gateway) -> SignalConsumer:
    """A consumer whose handler queues open where the outbox stood when the fixture started,
    not at the newest event: a handler registered mid-test still gets what came before."""
    start = paycore_gateway.events.outbox_since(None, 1).position
    return paycore_gateway.signal_consumer(open_at=start)


@pytest.fixture
def paycore_client() -> Callable[..., PaycoreClient]:
    """``paycore_client(test_client, prefix="/paycore", owner=None)``."""
    from .client import PaycoreClient

    def make(client: Any, prefix: str = "/paycore", owner: Any = None) -> PaycoreClient:
        return PaycoreClient(client, prefix, owner)

    return make
