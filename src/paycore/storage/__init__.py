"""Storage: the contract the core needs (``contract``: ``Storage`` and ``StorageTx``) and the
in-memory reference implementation that unit tests and the quickstart use (``memory``). The
SQL implementation is the ``paycore_storage`` plugin.

The contract's names are re-exported here so that ``from paycore.storage import Storage``,
the path plugin authors know, keeps working.
"""

from __future__ import annotations

from .contract import (
    OutboxSignal,
    PruneBatch,
    SignalledStorage,
    SpendThenRead,
    Storage,
    StorageTx,
    signal_source,
    spend_then_read_of,
)
from .protocols.async_read import (
    AsyncInvoiceRead,
    AsyncSignedCreate,
    AsyncSignedRead,
    SignedCreate,
    async_create_of,
    async_read_of,
    async_spend_of,
    create_of,
)

__all__ = [
    "AsyncInvoiceRead",
    "AsyncSignedCreate",
    "AsyncSignedRead",
    "OutboxSignal",
    "PruneBatch",
    "SignalledStorage",
    "SignedCreate",
    "SpendThenRead",
    "Storage",
    "StorageTx",
    "async_create_of",
    "async_read_of",
    "async_spend_of",
    "create_of",
    "signal_source",
    "spend_then_read_of",
]
