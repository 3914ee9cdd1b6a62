"""A paycore gateway on the anvil test chain, reached through the Flask or Litestar adapter.

The HTTP client, session signing and schema checker are the conformance suite's own
(``tests/conformance``), imported rather than copied so both suites speak to paycore alike.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import attrs
from eth_account import Account
from eth_account.signers.local import LocalAccount
from evm_chain import Deployment
from web3 import Web3

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "conformance"))

from conf_api import Answer, Api  # noqa: E402
from conf_keys import SessionKey  # noqa: E402
from conf_schema import problems  # noqa: E402
from conf_transport import open_transport  # noqa: E402

from paycore import NATIVE, ChainConfig, Gateway, Settings  # noqa: E402
from paycore.chains.evm import plugin as evm_plugin  # noqa: E402
from paycore.chains.evm.backend import EvmBackend  # noqa: E402
from paycore.chains.evm.watcher import EvmWatcher, StepReport  # noqa: E402
from paycore.storage import Storage  # noqa: E402

CHAIN_ID = 31337
ETH_ID = f"{CHAIN_ID}:{NATIVE}"
ETH_PRICE = "2000"
USD = 10**6  # both test tokens have 6 decimals
ADAPTERS = ("flask", "litestar")

__all__ = ["Answer", "SessionKey"]


class Clock:
    """Wall time plus an offset a test can move (expiry without sleeping)."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset

    def advance(self, seconds: float) -> None:
        self.offset += seconds


def chain_config(evm: Deployment, **overrides: Any) -> ChainConfig:
    """The anvil chain with paycore's factory; the watcher starts at the next block."""
    values: dict[str, Any] = {
        "chain_id": CHAIN_ID,
        "name": "anvil",
        "confirmations": 0,
        "rpc_url": evm.chain.rpc_url,
        "factory": evm.factory.address,
        "tokens": (evm.token.address, evm.token_no_return.address),
        "faucet_key": "0x" + bytes(evm.chain.accounts[9].key).hex(),
        "start_block": evm.chain.w3.eth.block_number + 1,
        "poll_interval": 0.05,
    }
    values.update(overrides)
    return ChainConfig(**values)


def make_gateway(
    evm: Deployment,
    *,
    storage: Storage | None = None,
    clock: Clock | None = None,
    ingest_batch: int = 500,
    allow_private: bool = False,
    **chain: Any,
) -> Gateway:
    """TUSDC (``evm.token``) is priced at 1 USD and ETH at 2000; TUSDT is watched, unpriced."""
    settings = Settings(
        database_url="memory://",
        prices={ETH_ID: ETH_PRICE, f"{CHAIN_ID}:{evm.token.address}": "1"},
        chains={CHAIN_ID: chain_config(evm, **chain)},
        checkout_url="https://pay.example.test/checkout",
        ingest_batch=ingest_batch,
        webhook_allow_private=allow_private,
    )
    return Gateway(
        settings, storage=storage, entry_points=False, plugins=[evm_plugin], clock=clock or Clock()
    )


def backend(gateway: Gateway) -> EvmBackend:
    found = gateway.chains[CHAIN_ID]
    assert isinstance(found, EvmBackend)
    return found


def watcher(gateway: Gateway, **kw: Any) -> EvmWatcher:
    return EvmWatcher(gateway, backend(gateway).chain(CHAIN_ID), **kw)


def drain(w: EvmWatcher) -> list[StepReport]:
    """Passes until the watcher has caught up with the confirmed head."""
    reports = [w.step()]
    while not reports[-1].caught_up:
        assert len(reports) < 100, reports[-3:]
        reports.append(w.step())
    return reports


def pay_token(evm: Deployment, token: Any, to: str, units: int) -> str:
    """The payer mints ``units`` and sends them to ``to`` (two blocks); returns the tx hash."""
    evm.mint(token, evm.payer.address, units)
    receipt = evm.chain.transact(evm.payer, token.functions.transfer(to, units))
    return "0x" + bytes(receipt["transactionHash"]).hex()


def pay_native(evm: Deployment, to: str, wei: int) -> str:
    receipt = evm.chain.send_value(evm.payer, to, wei)
    return "0x" + bytes(receipt["transactionHash"]).hex()


@attrs.define
class Env:
    """One gateway, its chain, and one adapter in front of it."""

    api: Api
    gateway: Gateway
    evm: Deployment
    clock: Clock
    paths: dict[str, Any] = attrs.field(factory=dict)

    @property
    def w3(self) -> Web3:
        return self.evm.chain.w3

    def merchant(self) -> tuple[LocalAccount, SessionKey]:
        """A fresh owner with a registered session key (the owner holds no coin yet)."""
        owner: LocalAccount = Account.create()
        key = SessionKey(Account.create())
        self.api.registered(owner, key)
        return owner, key

    def checked(self, method: str, template: str, answer: Answer, status: int = 200) -> Any:
        """The JSON body of a success answer, checked against the served OpenAPI document."""
        body = answer.ok(status)
        if not self.paths:
            self.paths = self.api.get("/openapi.json").ok()["paths"]
        responses = self.paths[template][method.lower()]["responses"]
        schema = responses[str(status)]["content"]["application/json"]["schema"]
        assert problems(body, schema) == [], (template, problems(body, schema))
        return body

    def pay_token(self, token: Any, to: str, units: int) -> str:
        return pay_token(self.evm, token, to, units)

    def pay_native(self, to: str, wei: int) -> str:
        return pay_native(self.evm, to, wei)

    def sign_and_send(self, signer: LocalAccount, unsigned: dict[str, Any]) -> Any:
        """What a merchant's wallet does with /initWallet or /initWithdraw: sign, send, wait."""
        fields = ("to", "data", "gas", "gasPrice", "nonce", "value", "chainId")
        signed = signer.sign_transaction({k: unsigned[k] for k in fields})
        tx_hash = self.w3.eth.send_raw_transaction(signed.raw_transaction)
        return self.w3.eth.wait_for_transaction_receipt(tx_hash, timeout=30)


@contextmanager
def open_env(adapter: str, evm: Deployment, **chain: Any) -> Iterator[Env]:
    clock = Clock()
    gateway = make_gateway(evm, clock=clock, **chain)
    with ExitStack() as stack:
        stack.callback(gateway.close)
        transport = stack.enter_context(open_transport(adapter, gateway))
        yield Env(Api(transport), gateway, evm, clock)
