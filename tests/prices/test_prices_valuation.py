"""Each recorded transfer keeps the rate it was valued at: the price, its source and its
time, whichever way the deposit came in (one at a time, a watcher's batch, a locked rate),
and its vsValue is exactly that rate times the amount."""

from __future__ import annotations

from decimal import Decimal

import pytest
from prices_helpers import ADDRESS, ETH, OWNER, T0, USDC, Board, Clock, gateway, new_invoice

from paycore import Deposit, Gateway
from paycore.chains.records import DepositBatch
from paycore.domain.money import value_at
from paycore.domain.records import Transaction, TxType, Valuation
from paycore.domain.tokens import to_checksum
from paycore.storage import Storage

TOKEN = USDC.split(":")[1]
PAYER = "0x" + "22" * 20
SECOND = to_checksum("0x" + "ab" * 20, "address")


def deposit(n: int, amount: str, *, to: str = ADDRESS, at: int = T0) -> Deposit:
    block = "0x" + "bb" * 32
    return Deposit(1, f"0x{n:064x}", 0, TOKEN, PAYER, to, Decimal(amount), at, 100 + n, block)


def recorded(gw: Gateway) -> dict[str, Transaction]:
    items, _, _, _ = gw.list_transactions(OWNER, offset=0, limit=200)
    return {t.tx_hash: t for t in items}


def test_a_deposit_keeps_the_stored_price_its_source_and_time(price_storage: Storage) -> None:
    board = Board("board")
    board.put("usd", USDC, "0.999712345678", as_of=T0 - 30)
    gw = gateway(board, storage=price_storage, clock=Clock())
    gw.refresh_prices()
    new_invoice(gw)
    gw.record_deposit(deposit(1, "12.345678"))
    [row] = recorded(gw).values()
    assert row.valuation == Valuation(Decimal("0.999712345678"), "board", T0 - 30, "usd")
    assert row.vs_value == value_at(Decimal("0.999712345678"), Decimal("12.345678"))


def test_a_locked_rate_is_marked_as_locked(price_storage: Storage) -> None:
    board = Board("board")
    board.put("usd", USDC, "1.01", as_of=T0 - 5)
    clock = Clock()
    gw = gateway(board, storage=price_storage, clock=clock, rate_lock=True)
    gw.refresh_prices()
    new_invoice(gw)
    board.put("usd", USDC, "0.5", as_of=T0 + 50)
    clock.t += 60
    gw.refresh_prices()  # the table moved; the invoice keeps its locked rate
    gw.record_deposit(deposit(1, "10", at=T0 + 60))
    [row] = recorded(gw).values()
    assert row.valuation == Valuation(Decimal("1.01"), "locked:board", T0 - 5, "usd")
    assert row.vs_value == Decimal("10.1")


def test_a_watchers_batch_values_each_deposit_with_its_rate(price_storage: Storage) -> None:
    gw = gateway(storage=price_storage, prices={USDC: "1.25", ETH: "2000"})
    new_invoice(gw)
    new_invoice(gw, address=SECOND)
    deposits = [deposit(1, "3"), deposit(2, "4", to=SECOND)]
    done = gw.ingest(DepositBatch(1, deposits))
    assert done.attributed == 2
    rows = recorded(gw)
    for d in deposits:
        row = rows[d.tx_hash]
        assert row.valuation == Valuation(Decimal("1.25"), "static", T0, "usd")
        assert row.vs_value == d.amount * Decimal("1.25")


def test_an_unpriced_foreign_token_has_no_rate(price_storage: Storage) -> None:
    gw = gateway(storage=price_storage, prices={ETH: "2000"})
    new_invoice(gw, tokens=(ETH,))
    gw.record_deposit(deposit(1, "7"))  # USDC: not accepted, and no price for it
    [row] = recorded(gw).values()
    assert (row.counted, row.vs_value, row.valuation) == (False, Decimal(0), None)


@pytest.mark.parametrize("stored", [True, False])
def test_a_table_rate_names_its_source(stored: bool) -> None:
    """What a withdrawal is valued with (the watcher values withdrawals from the table)."""
    board = Board("board")
    board.put("usd", USDC, "0.98", as_of=T0 - 7)
    gw = gateway(board) if stored else gateway(prices={USDC: "0.98"})
    gw.refresh_prices()
    rate = gw.prices.rate(USDC)
    assert rate.rate == Decimal("0.98") and rate.vs_currency == "usd"
    assert (rate.source, rate.as_of) == (("board", T0 - 7) if stored else ("static", T0))
    withdrawal = Transaction(
        TxType.WITHDRAW, "0xw", 0, 1, TOKEN, ADDRESS, Decimal(5), Decimal("4.9"), T0, OWNER,
        to=PAYER, valuation=rate,
    )  # fmt: skip
    gw.ingest(DepositBatch(1, [], withdrawals=[withdrawal]))
    assert recorded(gw)["0xw"].valuation == rate
