"""A gateway per test with a clock the test moves, reached through one transport."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

import attrs
from conf_api import Answer, Api
from conf_keys import SessionKey, account
from eth_account.signers.local import LocalAccount

from paycore import Deposit
from paycore.gateway import Gateway

NOW = 1_700_000_000
CHECKOUT = "https://pay.example.test/checkout"
NATIVE = "0x0000000000000000000000000000000000000000"
USDC = "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48"
ETH_1 = f"1:{NATIVE}"
USDC_1 = f"1:{USDC}"
POL_137 = f"137:{NATIVE}"
PRICES = {ETH_1: "2000", USDC_1: "1", POL_137: "0.5"}
INVOICE_FIELDS = {
    "guid",
    "createdAt",
    "deadline",
    "status",
    "value",
    "token",
    "chainId",
    "data",
    "description",
    "address",
    "owner",
    "paidAmount",
    "payments",
    "refundedAmount",
    "refunds",
    "acceptedTokens",
    "detected",
    "paymentUrl",
    "tokenInfo",
    "vsCurrency",
}


@attrs.define
class FakeClock:
    now: float = NOW

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def deposit_address(label: str) -> str:
    return account(f"deposit:{label}").address


def invoice_body(address: str | None = None, **fields: Any) -> dict[str, Any]:
    """A valid POST /invoice body; keyword fields replace or add to it."""
    body: dict[str, Any] = {
        "value": "10",
        "chainId": 1,
        "description": "order 1",
        "acceptedTokens": [ETH_1],
        "address": address or deposit_address("default"),
    }
    body.update(fields)
    return body


@attrs.define
class Env:
    api: Api
    gateway: Gateway
    clock: FakeClock
    _tx: int = 0

    @property
    def settings(self) -> Any:
        return self.gateway.settings

    def create(self, session: SessionKey | None, **fields: Any) -> dict[str, Any]:
        """Create an invoice and return its wire record (201 checked)."""
        body = invoice_body(**fields)
        created: dict[str, Any] = self.api.post("/invoice", body, session=session).ok(201)
        return created

    def deposit(
        self,
        to: str,
        amount: str,
        *,
        chain_id: int = 1,
        token: str = NATIVE,
        payer: str | None = None,
        again: bool = False,
    ) -> list[Any]:
        """Feed one confirmed deposit to the gateway, as a chain watcher would; ``again``
        reports the previous transfer (same txHash and logIndex) a second time."""
        if not again:
            self._tx += 1
        return self.gateway.record_deposit(
            Deposit(
                chain_id=chain_id,
                tx_hash="0x" + f"{self._tx:064x}",
                log_index=self._tx,
                token=token,
                from_=payer or account("payer").address,
                to=to,
                amount=Decimal(amount),
                timestamp=int(self.clock.now),
            )
        )

    def merchant(self, label: str, *keys: str) -> tuple[LocalAccount, list[SessionKey]]:
        """An owner wallet and session keys registered for it over HTTP."""
        from conf_keys import session

        owner = account(f"owner:{label}")
        return owner, [self.api.registered(owner, session(f"{label}:{k}")) for k in keys]

    def poll(self, key: SessionKey) -> list[Any]:
        answer: Answer = self.api.post("/poll/events", session=key)
        data = answer.ok()
        events: list[Any] = data["events"]
        return events


MakeEnv = Callable[..., Env]
#: ``xfail_for({"litestar": "reason"})``: a strict xfail on those transports only.
XfailFor = Callable[[Mapping[str, str]], None]
