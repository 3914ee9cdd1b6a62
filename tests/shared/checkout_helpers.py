"""Shared pieces of the checkout tests: a memory gateway with prices, and invoices on it."""

from __future__ import annotations

import time
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from paycore import NATIVE, Gateway, Settings
from paycore.domain.records import Deposit, Invoice

PREFIX = "/paycore"
CHAIN = 31337
ETH = f"{CHAIN}:{NATIVE}"
#: An ERC20 on the same chain (any address: the memory gateway never calls a node).
USDT_ADDRESS = "0x5FbDB2315678afecb367f032d93F642f64180aa3"
USDT = f"{CHAIN}:{USDT_ADDRESS}"
#: A token that is accepted but has no price, to show the page's "no price" branch.
UNPRICED = f"{CHAIN}:0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512"
OWNER = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
DEPOSIT = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC"
PAYER = "0x90F79bf6EB2c4f870365E96051604E789dF1c7f6"
PRICES = {ETH: "2000", USDT: "1"}


def make_gateway(clock: Callable[[], float] = time.time, **overrides: Any) -> Gateway:
    values: dict[str, Any] = {"database_url": "memory://", "prices": PRICES}
    values.update(overrides)
    return Gateway(Settings(**values), entry_points=False, clock=clock)


def new_invoice(gateway: Gateway, **fields: Any) -> Invoice:
    body: dict[str, Any] = {
        "value": "25",
        "chainId": CHAIN,
        "description": "Order #1042: two mugs",
        "acceptedTokens": [ETH, USDT, UNPRICED],
        "address": DEPOSIT,
        "data": {"decimals": {USDT: 6}, "symbol": {USDT: "USDT"}},
    }
    body.update(fields)
    return gateway.create_invoice(OWNER, body)


def pay(gateway: Gateway, amount: str, token: str = NATIVE, tx: int = 1, to: str = DEPOSIT) -> None:
    """A deposit as a chain watcher would report it, straight into the gateway."""
    gateway.record_deposit(
        Deposit(
            chain_id=CHAIN,
            tx_hash="0x" + f"{tx:064x}",
            log_index=-1 if token == NATIVE else 0,
            token=token,
            from_=PAYER,
            to=to,
            amount=Decimal(amount),
            timestamp=gateway.now(),
        )
    )
