"""What a chain backend offers the core; backends are plugins (``paycore_chain_backends``).

``ChainBackend`` is the least a backend does: derive deposit addresses without RPC (POST
/invoice without an ``address``). ``WalletBackend`` adds the interface's smart-wallet helpers
(/getAddress, /initWallet, /deployWallet, /getBalances, /initWithdraw, /getFaucet); the HTTP
handlers call them through this Protocol, so a Tron backend slots in beside the EVM one.
``RefundBackend`` adds the one fact refunds need beyond a withdrawal: a token's decimals.
"""

from __future__ import annotations

import threading
from decimal import Decimal
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import attrs

from ..domain.records import Json

if TYPE_CHECKING:
    from .host import ChainHost


class ChainBackend(Protocol):
    #: The chain ids this backend serves.
    chain_ids: frozenset[int]

    def deposit_address(self, owner: str, chain_id: int, index: int) -> str:
        """The owner's deposit address number ``index``, computed without any RPC."""


@runtime_checkable
class WatchingBackend(Protocol):
    """A backend that finds deposits itself; ``paycore worker`` runs its ``watch`` loop."""

    def watch(self, gateway: ChainHost, stop_event: threading.Event) -> None:
        """Attribute confirmed deposits through ``gateway.ingest`` (a batch at a time) or
        ``gateway.record_deposit`` (one at a time) until stopped."""


@attrs.frozen
class WithdrawRequest:
    """A parsed /initWithdraw: exactly one of ``amount`` (whole tokens, Decimal) and
    ``value`` (base units) is set; ``token`` is normalised, the native coin is NATIVE."""

    to: str
    token: str
    amount: Decimal | None = None
    value: int | None = None
    contract_type: str = "deposit"


@runtime_checkable
class WalletBackend(Protocol):
    """The smart-wallet helpers. Methods that read the owner's invoices take the gateway."""

    chain_ids: frozenset[int]

    def deposit_address(self, owner: str, chain_id: int, index: int) -> str: ...

    def get_address(self, owner: str, chain_id: int, index: int, contract_type: str) -> str:
        """/getAddress: pure computation, no RPC."""

    def init_wallet(self, owner: str, chain_id: int) -> Json:
        """/initWallet: the unsigned wallet deployment."""

    def deploy_wallet(self, chain_id: int, raw_tx: object) -> Json:
        """/deployWallet: relay a signed deployment; refuse anything else."""

    def balances(self, gateway: ChainHost, owner: str, chain_id: int) -> list[Json]:
        """/getBalances: one entry per known token."""

    def init_withdraw(
        self, gateway: ChainHost, owner: str, chain_id: int, request: WithdrawRequest
    ) -> Json:
        """/initWithdraw: the unsigned withdrawal."""

    def faucet(self, chain_id: int, to: str) -> Json:
        """/getFaucet: dev chains only."""


@runtime_checkable
class RefundBackend(WalletBackend, Protocol):
    """A wallet backend that can also say how finely a token divides, so that a refund
    stated in fiat becomes a whole number of base units before ``init_withdraw`` (POST
    /refund builds its transaction there: a refund is a withdrawal to the payer)."""

    def token_decimals(self, chain_id: int, token: str) -> int | None:
        """The decimals of ``token`` (NATIVE for the coin) on the chain; None when the
        contract has no sane ``decimals()``."""
