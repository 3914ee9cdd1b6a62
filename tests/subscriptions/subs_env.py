"""A gateway with chain 1 deriving deposit addresses (its factory is set; no node is asked),
a clock the test moves, and helpers to pay a period's invoice as the watcher would."""

from __future__ import annotations

import itertools
from decimal import Decimal
from typing import Any

import attrs

from paycore import ChainConfig, Gateway, Settings
from paycore.chains.evm import plugin as evm_plugin
from paycore.domain.records import Deposit, Invoice
from paycore.storage import Storage

FACTORY = "0x5FbDB2315678afecb367f032d93F642f64180aa3"
USDC = "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48"
USDC_1 = f"1:{USDC}"
OWNER = "0x1111111111111111111111111111111111111111"
PAYER = "0x4444444444444444444444444444444444444444"
DAY = 86_400
T0 = 1_767_225_600  # 2026-01-01 00:00 UTC
CHAINS = {
    1: ChainConfig(chain_id=1, name="ethereum", rpc_url="http://127.0.0.1:9", factory=FACTORY)
}
_hashes = itertools.count(1)


@attrs.define
class Clock:
    now: float = T0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def gateway(storage: Storage, clock: Clock, **overrides: Any) -> Gateway:
    values: dict[str, Any] = {
        "database_url": "memory://",
        "prices": {USDC_1: "1"},
        "checkout_url": "https://pay.example.test/checkout",
        "chains": CHAINS,
        "max_price_age": 10**9,
    }
    values.update(overrides)
    return Gateway(
        Settings(**values), storage=storage, entry_points=False, plugins=[evm_plugin], clock=clock
    )


def pay(gw: Gateway, invoice: Invoice, amount: Decimal | None = None) -> None:
    """Pay ``invoice`` in USDC, whole by default, as the watcher records a deposit."""
    n = next(_hashes)
    gw.record_deposit(
        Deposit(
            chain_id=1,
            tx_hash="0x" + f"{n:064x}",
            log_index=0,
            token=USDC,
            from_=PAYER,
            to=invoice.address,
            amount=invoice.value if amount is None else amount,
            timestamp=gw.now(),
        )
    )


def events(gw: Gateway, prefix: str = "subscription.") -> list[tuple[str, str, str]]:
    """(type, subscription id, status) of every subscription event in the outbox."""
    with gw.storage.transaction() as tx:
        read = tx.outbox_since(0, 1000)
    return [
        (e.type, e.guid, str(e.payload["status"])) for e in read.events if e.type.startswith(prefix)
    ]
