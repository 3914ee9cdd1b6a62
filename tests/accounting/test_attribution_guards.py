"""Which invoice a deposit pays, and what it adds, when the easy answer is not the only one.

One deposit address can carry several invoices (a merchant's static address, a reused wallet
index), so attribution has to choose: the oldest still open invoice created no later than the
deposit; failing that, the newest created before it (a late or extra payment); and an
invoice created after every deposit it sees only when nothing older exists. Each scenario
below fails for a different wrong rule (docs/mutation.md lists the rules it was checked
against). They run on memory and SQLite storage, since the choice relies on the storage
contract's oldest-first order.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from paycore import NATIVE, Deposit, Gateway, Settings, Status
from paycore.accounting.attribution import attribute_deposit
from paycore.domain.machine import expire
from paycore.errors import IllegalTransition
from paycore.prices.pricing import PriceTable
from paycore.storage.memory import MemoryStorage
from paycore_storage import SqlStorage

CHAIN = 31337
USDC_ADDRESS = "0x5FbDB2315678afecb367f032d93F642f64180aa3"
USDC = f"{CHAIN}:{USDC_ADDRESS}"
OWNER = "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359"
ADDRESS = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"
T0 = 1_700_000_000


class Clock:
    def __init__(self) -> None:
        self.t = T0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture(params=["memory", "sqlite"])
def gw(request: pytest.FixtureRequest, clock: Clock, tmp_path: Path) -> Iterator[Gateway]:
    settings = Settings(database_url="memory://", prices={USDC: "1"})
    storage = None
    if request.param == "sqlite":
        storage = SqlStorage(f"sqlite:///{tmp_path / 'attribution.sqlite3'}", clock=clock)
    gateway = Gateway(settings, storage=storage, entry_points=False, clock=clock)
    yield gateway
    gateway.close()


def invoice_at(gw: Gateway, clock: Clock, t: int, **extra: object) -> str:
    clock.t = t
    fields = {"value": "100", "chainId": CHAIN, "description": "d", "acceptedTokens": [USDC]}
    return gw.create_invoice(OWNER, {"address": ADDRESS, **fields, **extra}).guid


_n = iter(range(1, 10**6))


def deposit(amount: str, ts: int, token: str = USDC_ADDRESS, to: str = ADDRESS) -> Deposit:
    n = next(_n)
    return Deposit(CHAIN, f"0x{n:064x}", 0, token, "0x" + "22" * 20, to, Decimal(amount), ts)


def paid_by(gw: Gateway, guid: str) -> list[Decimal]:
    return [p.amount for p in gw.get_invoice(guid).payments]


def test_the_oldest_open_invoice_created_before_the_deposit_is_paid(
    gw: Gateway, clock: Clock
) -> None:
    settled = invoice_at(gw, clock, T0)
    gw.record_deposit(deposit("100", T0 + 1))
    older = invoice_at(gw, clock, T0 + 10)
    newer = invoice_at(gw, clock, T0 + 20)
    # Not the paid one before them, not the one created after the deposit.
    changes = gw.record_deposit(deposit("7", T0 + 15))
    assert [c.guid for c in changes] == [older]
    assert (paid_by(gw, settled), paid_by(gw, older), paid_by(gw, newer)) == (
        [Decimal(100)],
        [Decimal(7)],
        [],
    )


def test_a_partly_paid_invoice_is_completed_before_a_newer_one_is_started(
    gw: Gateway, clock: Clock
) -> None:
    # Both init and partialPaid are open: the oldest open one takes every deposit until paid.
    first = invoice_at(gw, clock, T0)
    second = invoice_at(gw, clock, T0 + 10)
    payers = [gw.record_deposit(deposit(a, T0 + 20 + i))[-1].guid for i, a in enumerate("46")]
    assert payers == [first, first]
    assert gw.get_invoice(first).status is Status.PARTIAL_PAID
    gw.record_deposit(deposit("90", T0 + 30))
    assert [c.guid for c in gw.record_deposit(deposit("5", T0 + 31))] == [second]
    assert (paid_by(gw, first), paid_by(gw, second)) == (
        [Decimal(4), Decimal(6), Decimal(90)],
        [Decimal(5)],
    )


def test_an_invoice_created_in_the_deposits_own_second_counts_as_before(
    gw: Gateway, clock: Clock
) -> None:
    settled = invoice_at(gw, clock, T0)
    gw.record_deposit(deposit("100", T0 + 1))
    fresh = invoice_at(gw, clock, T0 + 10)
    gw.record_deposit(deposit("7", T0 + 10))
    assert (paid_by(gw, settled), paid_by(gw, fresh)) == ([Decimal(100)], [Decimal(7)])
    assert gw.get_invoice(fresh).status is Status.PARTIAL_PAID


def test_with_nothing_open_before_it_a_deposit_is_an_extra_payment_not_the_next_invoice(
    gw: Gateway, clock: Clock
) -> None:
    settled = invoice_at(gw, clock, T0)
    gw.record_deposit(deposit("100", T0 + 1))
    later = invoice_at(gw, clock, T0 + 20)
    gw.record_deposit(deposit("5", T0 + 10))  # sent before ``later`` existed
    assert (paid_by(gw, settled), paid_by(gw, later)) == ([Decimal(100), Decimal(5)], [])
    assert gw.get_invoice(settled).paid_amount == Decimal(105)
    assert gw.get_invoice(later).status is Status.INIT


def test_a_deposit_older_than_every_invoice_still_pays_the_first(gw: Gateway, clock: Clock) -> None:
    # Block time may trail the server clock by a few seconds.
    guid = invoice_at(gw, clock, T0)
    changes = gw.record_deposit(deposit("100", T0 - 5))
    assert [c.status for c in changes] == [Status.PAID]
    assert paid_by(gw, guid) == [Decimal(100)]


def test_a_late_deposit_goes_to_the_newest_settled_invoice(gw: Gateway, clock: Clock) -> None:
    first = invoice_at(gw, clock, T0, deadlineSecs=60)
    second = invoice_at(gw, clock, T0 + 10, deadlineSecs=60)
    clock.t = T0 + 1_000
    assert gw.expire_due() == 2
    gw.record_deposit(deposit("100", T0 + 1_000))
    assert (paid_by(gw, first), paid_by(gw, second)) == ([], [Decimal(100)])
    assert gw.get_invoice(second).status is Status.EXPIRED


def test_a_deposit_to_an_address_without_invoices_is_ignored(gw: Gateway, clock: Clock) -> None:
    invoice_at(gw, clock, T0)
    elsewhere = "0x" + "ab" * 20
    assert gw.record_deposit(deposit("100", T0, to=elsewhere)) == []
    assert gw.list_transactions(OWNER, offset=None, limit=None)[1] == 0


def test_an_unpriced_token_outside_accepted_is_recorded_at_no_value(
    gw: Gateway, clock: Clock
) -> None:
    guid = invoice_at(gw, clock, T0)
    # Neither accepted nor priced: recorded for the merchant, valued 0, the invoice untouched.
    assert gw.record_deposit(deposit("3", T0 + 1, token=NATIVE)) == []
    items, total, _, _ = gw.list_transactions(OWNER, offset=None, limit=None)
    assert total == 1
    assert (items[0].guid, items[0].counted, items[0].amount) == (guid, False, Decimal(3))
    assert items[0].vs_value == 0 and isinstance(items[0].vs_value, Decimal)
    invoice = gw.get_invoice(guid)
    assert (invoice.status, invoice.paid_amount, invoice.payments) == (Status.INIT, Decimal(0), ())


def test_the_underpayment_tolerance_applies_to_deposits(clock: Clock) -> None:
    settings = Settings(
        database_url="memory://", prices={USDC: "1"}, underpayment_tolerance=Decimal("0.01")
    )
    gw = Gateway(settings, entry_points=False, clock=clock)
    short_by_one = invoice_at(gw, clock, T0)
    gw.record_deposit(deposit("99", T0 + 1))
    assert gw.get_invoice(short_by_one).status is Status.PAID
    short_by_more = invoice_at(gw, clock, T0 + 2, address=OWNER)
    gw.record_deposit(deposit("98.99", T0 + 3, to=OWNER))
    assert gw.get_invoice(short_by_more).status is Status.PARTIAL_PAID


def test_amounts_beyond_28_digits_are_added_and_compared_exactly(gw: Gateway, clock: Clock) -> None:
    # 29 integer digits and 8 places: Python's default context would round the value to
    # 1E+29 and leave an exact payment short of it.
    value = "9" * 29 + ".99999999"
    exact = invoice_at(gw, clock, T0, value=value)
    assert [c.status for c in gw.record_deposit(deposit(value, T0 + 1))] == [Status.PAID]
    assert str(gw.get_invoice(exact).paid_amount) == value

    split = invoice_at(gw, clock, T0 + 2, value="1" + "0" * 25 + ".00000001", address=OWNER)
    gw.record_deposit(deposit("1" + "0" * 25, T0 + 3, to=OWNER))
    gw.record_deposit(deposit("0.00000001", T0 + 4, to=OWNER))
    invoice = gw.get_invoice(split)
    assert (invoice.status, str(invoice.paid_amount)) == (Status.PAID, "1" + "0" * 25 + ".00000001")


def test_values_reach_storage_in_plain_notation(gw: Gateway, clock: Clock) -> None:
    guid = invoice_at(gw, clock, T0, value=Decimal("1E+2"))
    gw.record_deposit(deposit("0.000000001", T0 + 1))  # worth less than the last place
    gw.record_deposit(deposit("1E+1", T0 + 2))
    invoice = gw.get_invoice(guid)
    assert (str(invoice.value), str(invoice.paid_amount)) == ("100", "10")
    assert [str(p.vs_value) for p in invoice.payments] == ["0", "10"]
    assert invoice.status is Status.PARTIAL_PAID


class LockWatch:
    """A storage transaction that notes whether each address read asked for row locks."""

    def __init__(self, tx: Any) -> None:
        self.tx = tx
        self.locked: list[bool] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.tx, name)

    def invoices_at_address(self, chain_id: int, address: str, **kwargs: Any) -> Any:
        self.locked.append(kwargs.get("for_update", False))
        return self.tx.invoices_at_address(chain_id, address, **kwargs)


@contextmanager
def watched(storage: MemoryStorage) -> Iterator[LockWatch]:
    with storage.transaction() as tx:
        yield LockWatch(tx)


def test_attribution_locks_the_invoices_it_chooses_from_and_values_from_a_table(
    clock: Clock,
) -> None:
    # Two watchers attributing at once must not both see the invoice unpaid: the storage
    # contract's for_update is the row lock that serialises them on PostgreSQL.
    storage = MemoryStorage(clock=clock)
    gw = Gateway(Settings(database_url="memory://"), storage=storage, entry_points=False)
    guid = invoice_at(gw, clock, T0)
    table = PriceTable("usd", T0, {USDC: Decimal("0.5")})
    with watched(storage) as tx:
        changes = attribute_deposit(tx, deposit("150", T0 + 1), table, Decimal(0))
    assert tx.locked == [True]
    assert [(c.guid, c.status, c.paid_amount) for c in changes] == [
        (guid, Status.PARTIAL_PAID, Decimal(75))
    ]


def test_an_illegal_move_names_the_move_and_the_status(gw: Gateway, clock: Clock) -> None:
    guid = invoice_at(gw, clock, T0)
    gw.record_deposit(deposit("100", T0 + 1))
    with pytest.raises(IllegalTransition) as err:
        expire(gw.get_invoice(guid))
    assert str(err.value) == "deadline passed unpaid is not allowed in status paid"


def test_a_reorg_of_a_deposit_never_recorded_changes_nothing(gw: Gateway) -> None:
    """The watcher may report a replaced block's transfer that was never attributed (it
    reached no watched invoice, or another process already took it back): nothing is
    changed, no event is written, nothing raises."""
    from paycore.domain.records import Transaction, TxType

    stranger = Transaction(
        TxType.DEPOSIT, "0x" + "ef" * 32, 0, CHAIN, USDC_ADDRESS, "0x" + "22" * 20,
        Decimal(5), Decimal(5), 1_700_000_000, OWNER, to=ADDRESS,
    )  # fmt: skip
    assert gw.reorg_deposit(stranger) == []
    assert gw.reorg_deposits([stranger, stranger]) == []


def test_a_reorg_of_a_counted_deposit_whose_invoice_is_gone_changes_nothing(
    clock: Clock,
) -> None:
    """A counted row naming an invoice the store no longer has (a store restored from an
    older backup, say): the reorg flags the row and reports no change instead of raising."""
    from paycore.accounting.attribution import reorg_deposit
    from paycore.domain.records import Transaction, TxType

    storage = MemoryStorage(clock=clock)
    orphan = Transaction(
        TxType.DEPOSIT, "0x" + "ed" * 32, 0, CHAIN, USDC_ADDRESS, "0x" + "22" * 20,
        Decimal(5), Decimal(5), T0, OWNER, to=ADDRESS,
        guid="00000000-0000-4000-8000-00000000dead", counted=True,
    )  # fmt: skip
    with storage.transaction() as tx:
        assert tx.insert_transactions([orphan]) == [True]
    with storage.transaction() as tx:
        assert reorg_deposit(tx, orphan, T0 + 10, Decimal(0)) == []
    with storage.transaction() as tx:
        assert reorg_deposit(tx, orphan, T0 + 10, Decimal(0)) == []  # flagged once already


def test_a_reorg_takes_a_counted_deposit_back_out_of_the_stored_invoice(
    gw: Gateway, clock: Clock
) -> None:
    """The reorg's new invoice record is what the store keeps, not only what the events
    say: read back, the invoice has lost the payment, its paidAmount and its status."""
    from paycore.domain.records import Transaction, TxType

    guid = invoice_at(gw, clock, T0)
    paid = deposit("100", T0 + 1)
    gw.record_deposit(paid)
    assert gw.get_invoice(guid).status is Status.PAID
    record = Transaction(
        TxType.DEPOSIT, paid.tx_hash, paid.log_index, CHAIN, USDC_ADDRESS, paid.from_,
        paid.amount, Decimal(100), paid.timestamp, OWNER, to=ADDRESS,
    )  # fmt: skip
    changes = gw.reorg_deposit(record)
    stored = gw.get_invoice(guid)
    assert changes and stored == changes[-1]
    assert (stored.status, stored.paid_amount, stored.payments) == (Status.INIT, Decimal(0), ())


def test_single_attribution_records_once_stores_the_last_record_and_skips_strangers(
    clock: Clock,
) -> None:
    """``attribute_deposit``, one deposit at a time: a deposit to an address without
    invoices changes nothing; a late one is stored as its last record (expired, then the
    late payment counted, not the expiry alone); the same transfer a second time is a no-op
    (its row exists)."""
    storage = MemoryStorage(clock=clock)
    gw = Gateway(Settings(database_url="memory://"), storage=storage, entry_points=False)
    guid = invoice_at(gw, clock, T0)
    table = PriceTable("usd", T0, {USDC: Decimal(1)})
    elsewhere = deposit("5", T0 + 1, to="0x" + "33" * 20)
    late = deposit("100", gw.get_invoice(guid).deadline + 1)
    with storage.transaction() as tx:
        assert attribute_deposit(tx, elsewhere, table, Decimal(0)) == []
        changes = attribute_deposit(tx, late, table, Decimal(0))
    assert [(c.status, c.paid_amount) for c in changes] == [
        (Status.EXPIRED, Decimal(0)),
        (Status.EXPIRED, Decimal(100)),
    ]
    assert gw.get_invoice(guid) == changes[-1]
    with storage.transaction() as tx:
        assert attribute_deposit(tx, late, table, Decimal(0)) == []
    assert gw.get_invoice(guid) == changes[-1]
