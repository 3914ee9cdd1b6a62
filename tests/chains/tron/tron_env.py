"""A paycore gateway on the local TronGrid stand-in, reached through one transport.

The chain is ``fake_trongrid.FakeTron`` served over real HTTP; the gateway's Tron backend
talks to it through tronpy, exactly as it would to TronGrid. The HTTP client and session
signing are the conformance suite's own (``tests/conformance``), as in ``tests/chains/evm``.
"""

from __future__ import annotations

import hashlib
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import attrs
from eth_account import Account
from fake_trongrid import FakeTron, Token, b58, h20, keccak256, serve
from tronpy.keys import PrivateKey

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "conformance"))

from conf_api import Answer, Api  # noqa: E402
from conf_keys import SessionKey, public_key_of  # noqa: E402
from conf_transport import open_transport  # noqa: E402

from paycore import NATIVE, ChainConfig, Gateway, Settings  # noqa: E402
from paycore.chains.tron import plugin as tron_plugin  # noqa: E402
from paycore.chains.tron.backend import TronBackend  # noqa: E402
from paycore.chains.tron.watcher import StepReport, TronWatcher  # noqa: E402
from paycore.contracts import bytecode  # noqa: E402
from paycore.storage import Storage  # noqa: E402

CHAIN_ID = 3448148188  # Nile
TRX_ID = f"{CHAIN_ID}:{NATIVE}"
TRX_PRICE = "0.25"
USD = 10**6  # the USDT-like token has 6 decimals, and TRX has 6 too (SUN)
TRX = 10**6
API_KEY = "test-api-key"

__all__ = ["Answer", "SessionKey"]


def key(label: str) -> PrivateKey:
    return PrivateKey(hashlib.sha256(f"tron-e2e:{label}".encode()).digest())


def address_of(k: PrivateKey) -> str:
    return str(k.public_key.to_base58check_address())


USDT = b58(hashlib.sha256(b"usdt").hexdigest()[:40])
FACTORY = b58(hashlib.sha256(b"factory").hexdigest()[:40])
PAYER = key("payer")


def tronlink_sign(k: PrivateKey, message: str) -> str:
    """TIP-191 as TronLink returns it (v 27/28), signed by tronpy, not by paycore."""
    raw = k.sign_msg(message.encode("utf-8")).to_bytes()
    return "0x" + (raw[:64] + bytes([raw[64] + 27])).hex()


class Clock:
    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset


def make_chain(**shape: int) -> FakeTron:
    """The stand-in chain with USDT, the factory and a funded payer; ``shape`` is
    ``FakeTron``'s (``first_block``, ``blocks``)."""
    chain = FakeTron(**shape)
    chain.tokens[h20(USDT)] = Token("USDT", 6)
    chain.factory = FACTORY
    chain.wallet_code = bytecode("PaycoreWallet")

    chain.forwarder_code_hash = keccak256(bytecode("PaycoreForwarder"))
    chain.genesis_balances[("trx", h20(address_of(PAYER)))] = 10_000 * TRX
    chain.genesis_balances[(h20(USDT), h20(address_of(PAYER)))] = 10_000 * USD
    return chain


def chain_config(url: str, chain: FakeTron, **overrides: Any) -> ChainConfig:
    values: dict[str, Any] = {
        "chain_id": CHAIN_ID,
        "name": "tron-nile",
        "confirmations": 2,
        "rpc_url": url,
        "native_symbol": "TRX",
        "native_decimals": 6,
        "factory": FACTORY,
        "tokens": (USDT,),
        "start_block": chain.head.number + 1,
        "poll_interval": 0.05,
        "api_key": API_KEY,
        "fee_limit": 150_000_000,
    }
    values.update(overrides)
    return ChainConfig(**values)


def make_gateway(
    url: str,
    chain: FakeTron,
    *,
    storage: Storage | None = None,
    ingest_batch: int = 500,
    **overrides: Any,
) -> Gateway:
    """USDT priced at 1 USD, TRX at 0.25."""
    settings = Settings(
        database_url="memory://",
        prices={TRX_ID: TRX_PRICE, f"{CHAIN_ID}:{USDT}": "1"},
        chains={CHAIN_ID: chain_config(url, chain, **overrides)},
        checkout_url="https://pay.example.test/checkout",
        ingest_batch=ingest_batch,
    )
    return Gateway(
        settings, storage=storage, entry_points=False, plugins=[tron_plugin], clock=Clock()
    )


def backend(gateway: Gateway) -> TronBackend:
    found = gateway.chains[CHAIN_ID]
    assert isinstance(found, TronBackend)
    return found


def watcher(gateway: Gateway, **kw: Any) -> TronWatcher:
    return TronWatcher(gateway, backend(gateway).chain(CHAIN_ID), **kw)


def drain(w: TronWatcher) -> list[StepReport]:
    reports = [w.step()]
    while not reports[-1].caught_up:
        assert len(reports) < 100, reports[-3:]
        reports.append(w.step())
    return reports


@attrs.define
class Env:
    api: Api
    gateway: Gateway
    chain: FakeTron
    url: str

    def merchant(self, label: str = "merchant") -> tuple[PrivateKey, str, SessionKey]:
        """A Tron owner (TronLink key) with a session key registered by a TIP-191 signature."""
        owner = key(label)
        session = SessionKey(Account.create())
        public_key = public_key_of(session.key)
        body = {
            "ownerAddress": address_of(owner),
            "publicKey": public_key,
            "signature": tronlink_sign(owner, public_key),
        }
        registered = self.api.post("/auth/register-pubkey", body).ok()
        assert registered["ownerAddress"] == address_of(owner)
        return owner, address_of(owner), session

    def pay_usdt(self, to: str, units: int) -> str:
        return self.chain.send_trc20(USDT, address_of(PAYER), to, units)

    def pay_trx(self, to: str, sun: int, **kw: Any) -> str:
        return self.chain.send_trx(address_of(PAYER), to, sun, **kw)


@contextmanager
def open_env(transport: str = "core", **overrides: Any) -> Iterator[Env]:
    chain = make_chain()
    with ExitStack() as stack:
        url = stack.enter_context(serve(chain))
        gateway = make_gateway(url, chain, **overrides)
        stack.callback(gateway.close)
        api = Api(stack.enter_context(open_transport(transport, gateway)))
        yield Env(api, gateway, chain, url)
