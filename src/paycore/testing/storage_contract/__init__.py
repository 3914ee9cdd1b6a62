"""The ``paycore.storage`` contract, method by method, as tests a storage plugin runs.

One module per concern (the basics, batches, deliveries, chains, prices, refunds, links,
management, retention, nonces, concurrency with real threads), all brought in here, so a
plugin's one ``from paycore.testing.storage_contract import *`` runs every test.

A plugin author runs the whole suite against their backend with one fixture, ``storage``,
that returns a fresh, empty store reading time from the ``clock`` it is given (a
``FakeClock``; this module defines that fixture)::

    # tests/test_my_storage_contract.py
    import pytest
    from paycore.testing.storage_contract import *  # noqa: F403 - the contract's tests

    @pytest.fixture
    def storage(clock):
        store = MyStorage("...", clock=clock)
        yield store
        store.close()

Parametrise that fixture to run the suite on several configurations; paycore's own
tests/storage runs it on the in-memory store, SQLite and PostgreSQL. docs/testing.md says
more. tests/storage/test_storage_broken_stores.py in paycore's repository holds the suite to
its word: it runs it against deliberately broken stores, each breaking one duty, and every
one of them must fail it.
"""

from paycore.testing.storage_contract.basics import *  # noqa: F403
from paycore.testing.storage_contract.batches import *  # noqa: F403
from paycore.testing.storage_contract.chains import *  # noqa: F403
from paycore.testing.storage_contract.concurrency import *  # noqa: F403
from paycore.testing.storage_contract.deliveries import *  # noqa: F403
from paycore.testing.storage_contract.delivery_skips import *  # noqa: F403
from paycore.testing.storage_contract.management import *  # noqa: F403
from paycore.testing.storage_contract.merchant_tools import *  # noqa: F403
from paycore.testing.storage_contract.nonces import *  # noqa: F403
from paycore.testing.storage_contract.outbox import *  # noqa: F403
from paycore.testing.storage_contract.payout_watch import *  # noqa: F403
from paycore.testing.storage_contract.payouts import *  # noqa: F403
from paycore.testing.storage_contract.prices import *  # noqa: F403
from paycore.testing.storage_contract.races import *  # noqa: F403
from paycore.testing.storage_contract.receipts import *  # noqa: F403
from paycore.testing.storage_contract.refunds import *  # noqa: F403
from paycore.testing.storage_contract.retention import *  # noqa: F403
from paycore.testing.storage_contract.search import *  # noqa: F403
from paycore.testing.storage_contract.sharing import *  # noqa: F403
from paycore.testing.storage_contract.subscriptions import *  # noqa: F403
from paycore.testing.storage_contract_endpoints import *  # noqa: F403
from paycore.testing.storage_contract_reads import *  # noqa: F403
from paycore.testing.storage_contract_signals import *  # noqa: F403
from paycore.testing.storage_detected import *  # noqa: F403
