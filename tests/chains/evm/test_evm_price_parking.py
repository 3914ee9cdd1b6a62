"""A deposit with no fresh price waits -- parked -- without holding up its chain, and is
valued once a fresh price arrives; deposits behind it at the same address keep their
order; a parked deposit that a reorg removed is dropped, never valued."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import pytest
from evm_chain import Deployment
from evm_gateway import CHAIN_ID, ETH_ID, USD, Clock, chain_config, drain, pay_token, watcher

from paycore import Gateway, Settings
from paycore.chains.evm import plugin as evm_plugin
from paycore.domain.records import Status
from paycore.plugins.hookspecs import hookimpl
from paycore.prices import parking

pytestmark = pytest.mark.node  # anvil comes from npm


class Board:
    """A price source a test writes on: it answers what is on the board, nothing else."""

    name = "board"

    def __init__(self) -> None:
        self.prices: dict[str, Decimal] = {}

    def fetch(self, vs_currency: str, tokens: Sequence[str]) -> dict[str, Decimal]:
        return {t: self.prices[t] for t in tokens if t in self.prices}

    @hookimpl
    def paycore_price_sources(self, settings: Settings, register: Any) -> None:
        register(self)


def gateway_with(evm: Deployment, board: Board, clock: Clock | None = None) -> Gateway:
    settings = Settings(
        database_url="memory://",
        prices={ETH_ID: "2000"},
        chains={CHAIN_ID: chain_config(evm)},
    )
    return Gateway(
        settings, entry_points=False, plugins=[evm_plugin, board], clock=clock or Clock()
    )


def invoice(gateway: Gateway, evm: Deployment, token: str, value: str = "5") -> Any:
    return gateway.create_invoice(
        evm.owner.address,
        {"value": value, "chainId": CHAIN_ID, "description": "x", "acceptedTokens": [token]},
    )


def parked(gateway: Gateway) -> list[str]:
    with gateway.storage.transaction() as tx:
        return [p.deposit.tx_hash for p in tx.parked_deposits(CHAIN_ID, 100)]


def test_an_unpriced_deposit_waits_while_the_chain_moves_on(evm: Deployment) -> None:
    board = Board()
    gateway = gateway_with(evm, board)
    tusdt = f"{CHAIN_ID}:{evm.token_no_return.address}"
    tusdc = f"{CHAIN_ID}:{evm.token.address}"
    board.prices[tusdc] = Decimal(1)
    gateway.refresh_prices()
    waits = invoice(gateway, evm, tusdt)
    other = invoice(gateway, evm, tusdc)
    unpriced = pay_token(evm, evm.token_no_return, waits.address, 5 * USD)
    pay_token(evm, evm.token, other.address, 5 * USD)
    behind = pay_token(evm, evm.token, waits.address, 2 * USD)  # foreign token, same address
    w = watcher(gateway)
    reports = drain(w)
    assert sum(r.deposits for r in reports) == 1 and sum(r.parked for r in reports) == 2
    assert gateway.get_invoice(other.guid).status is Status.PAID  # not held up
    assert parked(gateway) == [unpriced, behind]  # in chain order
    with gateway.storage.transaction() as tx:
        cursor = tx.get_chain_cursor(CHAIN_ID)
    assert cursor is not None and cursor.block_number == evm.chain.w3.eth.block_number
    assert gateway.get_invoice(waits.guid).payments == ()

    assert drain(w)[0].deposits == 0  # still no price: still waiting, nothing lost
    board.prices[tusdt] = Decimal("0.998")
    gateway.refresh_prices()
    assert drain(w)[0].deposits == 2
    assert parked(gateway) == []
    paid = gateway.get_invoice(waits.guid)
    assert [p.tx_hash for p in paid.payments] == [unpriced]
    assert paid.paid_amount == Decimal("4.99") and paid.status is Status.PARTIAL_PAID
    items, _total, _, _ = gateway.list_transactions(evm.owner.address, offset=None, limit=None)
    foreign = next(t for t in items if t.tx_hash == behind)
    assert foreign.guid == waits.guid and not foreign.counted and foreign.vs_value == 2


def test_a_stale_price_parks_the_deposit_until_a_fresh_one_values_it(evm: Deployment) -> None:
    board = Board()
    clock = Clock()
    gateway = gateway_with(evm, board, clock)
    tusdc = f"{CHAIN_ID}:{evm.token.address}"
    board.prices[tusdc] = Decimal("0.5")  # the old rate
    gateway.refresh_prices()
    board.prices.clear()  # the source goes quiet
    clock.advance(gateway.settings.max_price_age + 1)
    assert tusdc not in gateway.price_snapshot().prices
    bill = invoice(gateway, evm, tusdc)
    tx_hash = pay_token(evm, evm.token, bill.address, 5 * USD)
    w = watcher(gateway)
    assert sum(r.parked for r in drain(w)) == 1
    assert parked(gateway) == [tx_hash]
    board.prices[tusdc] = Decimal(1)
    gateway.refresh_prices()
    drain(w)
    paid = gateway.get_invoice(bill.guid)
    assert paid.paid_amount == Decimal(5) and paid.status is Status.PAID  # never at 0.5


def test_a_parked_deposit_a_reorg_removed_is_dropped(evm: Deployment) -> None:
    board = Board()
    gateway = gateway_with(evm, board)
    tusdt = f"{CHAIN_ID}:{evm.token_no_return.address}"
    bill = invoice(gateway, evm, tusdt)
    w = watcher(gateway)
    drain(w)
    snapshot = evm.chain.w3.provider.make_request("evm_snapshot", [])["result"]  # type: ignore[arg-type]
    gone = pay_token(evm, evm.token_no_return, bill.address, 5 * USD)
    drain(w)
    assert parked(gateway) == [gone]
    evm.chain.w3.provider.make_request("evm_revert", [snapshot])  # type: ignore[arg-type]
    for _ in range(3):  # the same heights, other blocks
        evm.chain.w3.provider.make_request("evm_mine", [])  # type: ignore[arg-type]
    board.prices[tusdt] = Decimal(1)
    gateway.refresh_prices()
    report = parking.retry_parked(gateway, CHAIN_ID, w._still_there)
    assert (report.valued, report.dropped) == (0, 1)
    drain(w)
    assert parked(gateway) == [] and gateway.get_invoice(bill.guid).payments == ()
