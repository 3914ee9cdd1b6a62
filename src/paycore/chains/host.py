"""``ChainHost``: what a chain backend and its watchers use of the gateway that runs them.

A backend's ``watch``, ``balances`` and ``init_withdraw`` are handed the gateway; they are
typed against this Protocol, which lists exactly the parts they reach, so a chain depends on
those parts and not on the facade (docs/architecture.md §Layers): the settings and the
clock; the chain ledger (leases, cursors, watched addresses, recorded deposits); the parked
deposits, the price tables and the owners' disabled indexes; and the three operations that
write what a watcher found, each one storage transaction with its events (``ingest``,
``reorg_deposits``, ``record_detected``). The ``Gateway`` satisfies it as it stands; a test
may hand a watcher anything else that does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..config import Settings
    from ..domain.detected import Detected
    from ..domain.records import Deposit, Invoice, Transaction
    from ..management.service import Management
    from ..prices.parking import ParkedDeposits
    from ..prices.pricing import PriceTable
    from ..prices.service import PriceService
    from . import ChainBackend
    from .ledger import ChainLedger
    from .records import DepositBatch, Ingested


class ChainHost(Protocol):
    """The parts of a gateway that chain backends and watchers use (module docstring)."""

    #: Unix seconds, fractional: lease times and the watch grace are reckoned on it.
    clock: Callable[[], float]

    @property
    def settings(self) -> Settings: ...

    @property
    def chains(self) -> Mapping[int, ChainBackend]:
        """The backends by chain id: a backend's watchers are those of its own chains."""
        ...

    @property
    def chain_ledger(self) -> ChainLedger: ...

    @property
    def parking(self) -> ParkedDeposits: ...

    @property
    def pricing(self) -> PriceService: ...

    @property
    def prices(self) -> PriceTable:
        """The default vsCurrency's table in force (token lists, balances' values)."""
        ...

    @property
    def management(self) -> Management:
        """The owners' records: the deposit indexes left out of withdrawals."""
        ...

    def ingest(self, batch: DepositBatch) -> Ingested:
        """Attribute a batch of one chain's deposits in one storage transaction."""
        ...

    def reorg_deposits(self, records: Sequence[Transaction]) -> list[Invoice]:
        """Take back recorded deposits whose blocks a reorg replaced."""
        ...

    def record_detected(
        self, chain_id: int, transfers: Sequence[Deposit], depth: Mapping[int, int], required: int
    ) -> list[Detected]:
        """Make ``transfers`` the chain's detected, not yet confirmed, transfers."""
        ...
