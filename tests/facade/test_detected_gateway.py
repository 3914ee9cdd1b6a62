"""``Gateway.record_detected``: which invoice a transfer not yet confirmed shows on, and what
it leaves alone. On the in-memory store and SQLite (the rows are storage's, the rules the
gateway's)."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import attrs
import pytest

from paycore import NATIVE, Deposit, Gateway, Settings, Status
from paycore.domain.detected import STALE_AFTER

CHAIN = 31337
USDC_ADDRESS = "0x5FbDB2315678afecb367f032d93F642f64180aa3"
USDC = f"{CHAIN}:{USDC_ADDRESS}"
ETH = f"{CHAIN}:{NATIVE}"
OWNER = "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359"
ADDRESS = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"
NOW = 1_700_000_000


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["memory", "sqlite"])
def gw(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Gateway]:
    settings = Settings(database_url="memory://", prices={ETH: "2000", USDC: "1"})
    storage = None
    if request.param == "sqlite":
        from paycore_storage import SqlStorage

        storage = SqlStorage(f"sqlite:///{tmp_path / 'p.sqlite3'}")
    gateway = Gateway(settings, storage=storage, entry_points=False, clock=Clock())
    yield gateway
    gateway.close()


def invoice(gw: Gateway, **extra: object) -> str:
    fields = {"value": "10", "chainId": CHAIN, "description": "d", "acceptedTokens": [USDC]}
    return gw.create_invoice(OWNER, {"address": ADDRESS, **fields, **extra}).guid


def transfer(n: int, amount: str = "10", token: str = USDC_ADDRESS, block: int = 50) -> Deposit:
    return Deposit(
        CHAIN,
        f"0x{n:064x}",
        0,
        token,
        "0x" + "22" * 20,
        ADDRESS,
        Decimal(amount),
        NOW,
        block,
        f"0x{block:064x}",
    )


def detected_of(gw: Gateway, guid: str) -> list[tuple[str, int, int]]:
    record = gw.invoice_wire(gw.get_invoice(guid))
    return [(d["txHash"], d["confirmations"], d["required"]) for d in record["detected"]]


def test_a_transfer_shows_on_the_invoice_attribution_would_pick(gw: Gateway) -> None:
    older = invoice(gw)
    newer = invoice(gw)
    gw.record_detected(CHAIN, [transfer(1)], {50: 2}, 3)
    assert detected_of(gw, older) == [(f"0x{1:064x}", 2, 3)]
    assert detected_of(gw, newer) == []


def test_a_token_the_invoice_does_not_accept_is_not_confirming(gw: Gateway) -> None:
    guid = invoice(gw)
    stored = gw.record_detected(CHAIN, [transfer(1, "1", NATIVE)], {50: 1}, 3)
    assert stored == [] and detected_of(gw, guid) == []


def test_an_address_without_an_invoice_stores_nothing(gw: Gateway) -> None:
    stray = attrs.evolve(transfer(1), to="0x" + "77" * 20)
    assert gw.record_detected(CHAIN, [stray], {50: 1}, 3) == []


def test_detected_never_moves_the_invoice_and_a_later_pass_replaces_it(gw: Gateway) -> None:
    guid = invoice(gw)
    gw.open_queue("test", OWNER)
    gw.record_detected(CHAIN, [transfer(1), transfer(2, block=51)], {50: 2, 51: 1}, 3)
    got = gw.get_invoice(guid)
    assert (got.status, got.paid_amount, got.payments) == (Status.INIT, Decimal(0), ())
    assert [d.confirmations for d in got.detected] == [2, 1]
    assert gw.drain_events("test") == []
    gw.record_detected(CHAIN, [transfer(2, block=51)], {51: 2}, 3)  # 1 dropped by a reorg
    assert detected_of(gw, guid) == [(f"0x{2:064x}", 2, 3)]


def test_a_transfer_already_paid_is_not_shown_twice(gw: Gateway) -> None:
    guid = invoice(gw)
    gw.record_detected(CHAIN, [transfer(1)], {50: 3}, 3)
    gw.record_deposit(transfer(1))  # attributed before the next pass replaced the list
    record = gw.invoice_wire(gw.get_invoice(guid))
    assert (record["status"], record["detected"]) == ("paid", [])
    assert [p["txHash"] for p in record["payments"]] == [f"0x{1:064x}"]


def test_a_list_no_watcher_keeps_current_is_no_longer_shown(gw: Gateway) -> None:
    guid = invoice(gw)
    gw.record_detected(CHAIN, [transfer(1)], {50: 1}, 3)
    clock = gw.clock
    assert isinstance(clock, Clock)
    clock.now += STALE_AFTER
    assert len(detected_of(gw, guid)) == 1
    clock.now += 1
    assert detected_of(gw, guid) == []
