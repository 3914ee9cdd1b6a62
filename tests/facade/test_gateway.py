"""The Gateway end to end on in-memory storage: creation, attribution, expiry, events, plugins."""

from __future__ import annotations

from decimal import Decimal

import pytest

from paycore import NATIVE, Deposit, Gateway, Settings, Status
from paycore.errors import InvalidInput, InvoiceNotFound, PaycoreError
from paycore.notify import BaseNotifier
from paycore.plugins.hookspecs import hookimpl

CHAIN = 31337
ETH = f"{CHAIN}:{NATIVE}"
USDC = f"{CHAIN}:0x5FbDB2315678afecb367f032d93F642f64180aa3"
OWNER = "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359"
ADDRESS = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"


class Clock:
    def __init__(self) -> None:
        self.t = 1_700_000_000

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def gw(clock: Clock) -> Gateway:
    settings = Settings(database_url="memory://", prices={ETH: "2000", USDC: "1"})
    return Gateway(settings, entry_points=False, clock=clock)


def new_invoice(gw: Gateway, **extra: object) -> str:
    fields = {"value": "100", "chainId": CHAIN, "description": "d", "acceptedTokens": [USDC]}
    fields.update({"address": ADDRESS, **extra})
    return gw.create_invoice(OWNER, fields).guid


def deposit(n: int, amount: str, ts: int, token: str = USDC.split(":")[1]) -> Deposit:
    return Deposit(CHAIN, f"0x{n:064x}", 0, token, "0x" + "22" * 20, ADDRESS, Decimal(amount), ts)


def drain(gw: Gateway) -> list[dict[str, object]]:
    return [e.payload for e in gw.drain_events("test")]


def test_two_part_payment_emits_one_event_per_change(gw: Gateway, clock: Clock) -> None:
    gw.open_queue("test", OWNER)
    guid = new_invoice(gw)
    gw.record_deposit(deposit(1, "40", clock.t))
    gw.record_deposit(deposit(2, "60", clock.t))
    invoice = gw.get_invoice(guid)
    assert (invoice.status, invoice.paid_amount) == (Status.PAID, Decimal("100"))
    events = drain(gw)
    assert [e["status"] for e in events] == ["partialPaid", "paid"]
    assert events[-1]["paidAmount"] == "100" and len(events[-1]["payments"]) == 2
    assert drain(gw) == []


def test_same_deposit_twice_counts_once(gw: Gateway, clock: Clock) -> None:
    guid = new_invoice(gw)
    first = gw.record_deposit(deposit(1, "40", clock.t))
    again = gw.record_deposit(deposit(1, "40", clock.t))
    assert len(first) == 1 and again == []
    assert gw.get_invoice(guid).paid_amount == Decimal("40")


def test_token_outside_accepted_is_recorded_not_counted(gw: Gateway, clock: Clock) -> None:
    guid = new_invoice(gw)
    assert gw.record_deposit(deposit(1, "1", clock.t, token=NATIVE)) == []
    assert gw.get_invoice(guid).status is Status.INIT
    items, total, _, _ = gw.list_transactions(OWNER, offset=None, limit=None)
    assert total == 1 and items[0].guid == guid and items[0].vs_value == Decimal("2000")


def test_counted_deposit_without_price_is_parked_and_counts_nothing(clock: Clock) -> None:
    gw = Gateway(Settings(database_url="memory://"), entry_points=False, clock=clock)
    guid = new_invoice(gw)
    assert gw.record_deposit(deposit(1, "5", clock.t)) == []
    assert gw.list_transactions(OWNER, offset=None, limit=None)[1] == 0
    assert gw.get_invoice(guid).payments == ()
    [parked] = gw.parking.of_chain(CHAIN, 10)
    assert parked.deposit == deposit(1, "5", clock.t) and parked.reason


def test_lazy_expiry_once_then_late_payment_recorded(gw: Gateway, clock: Clock) -> None:
    gw.open_queue("test", OWNER)
    guid = new_invoice(gw, deadlineSecs=60)
    clock.t += 61
    assert gw.get_invoice(guid).status is Status.EXPIRED
    assert gw.get_invoice(guid).status is Status.EXPIRED
    assert gw.expire_due() == 0
    gw.record_deposit(deposit(1, "100", clock.t))
    late = gw.get_invoice(guid)
    assert (late.status, late.paid_amount) == (Status.EXPIRED, Decimal("100"))
    # One event per status change: the late payment is recorded, and queued no second
    # "expired" (its type, invoice.late_payment, is for those who ask for it).
    assert [e["status"] for e in drain(gw)] == ["expired"]
    typed = gw.events.outbox_since(0, 10, OWNER)
    assert [e.type for e in typed.events] == ["invoice.expired", "invoice.late_payment"]


def test_sweeper_expires_without_a_read(gw: Gateway, clock: Clock) -> None:
    guids = [new_invoice(gw, deadlineSecs=10, address=a) for a in (ADDRESS, OWNER)]
    clock.t += 11
    assert gw.expire_due() == 2
    assert {gw.get_invoice(g).status for g in guids} == {Status.EXPIRED}


def test_unknown_guid(gw: Gateway) -> None:
    with pytest.raises(InvoiceNotFound, match="invoice nope not found"):
        gw.get_invoice("nope")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("value", "NaN"),
        ("value", "1e400"),
        ("value", "-1"),
        ("value", "ten"),
        ("acceptedTokens", []),
        ("acceptedTokens", ["31337:0xnothex"]),
        ("chainId", 999),
        ("address", "0x5AAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"),
        ("token", ETH),
    ],
)
def test_bad_creation_input_is_typed(gw: Gateway, field: str, value: object) -> None:
    with pytest.raises(InvalidInput) as err:
        new_invoice(gw, **{field: value})
    assert field in err.value.text


def test_address_needs_a_chain_backend(gw: Gateway) -> None:
    fields = {"value": "1", "chainId": CHAIN, "description": "d", "acceptedTokens": [ETH]}
    with pytest.raises(InvalidInput, match="no chain backend"):
        gw.create_invoice(OWNER, fields)


class CountingBackend:
    """A chain-backend plugin that derives addresses from the index, as a real one would."""

    chain_ids = frozenset({CHAIN})

    def deposit_address(self, owner: str, chain_id: int, index: int) -> str:
        return "0x" + f"{index + 1:040x}"

    @hookimpl
    def paycore_chain_backends(self, settings: Settings, register: object) -> None:
        register(self)  # type: ignore[operator]


def test_plugin_backend_allocates_distinct_addresses(clock: Clock) -> None:
    gw = Gateway(
        Settings(database_url="memory://"),
        plugins=[CountingBackend()],
        entry_points=False,
        clock=clock,
    )
    fields = {"value": "1", "chainId": CHAIN, "description": "d", "acceptedTokens": [ETH]}
    addresses = [gw.create_invoice(OWNER, fields).address for _ in range(3)]
    assert addresses == ["0x" + f"{i:040x}" for i in (1, 2, 3)]


def test_blocked_plugin_is_not_loaded(clock: Clock) -> None:
    settings = Settings(database_url="memory://", blocked_plugins=("builtins",))
    with pytest.raises(PaycoreError, match="no storage plugin"):
        Gateway(settings, entry_points=False, clock=clock)


def test_paging_clamps_and_orders(gw: Gateway, clock: Clock) -> None:
    guids = []
    for i in range(55):
        clock.t += 1
        guids.append(new_invoice(gw, address="0x" + f"{i + 10:040x}"))
    plain = gw.list_invoices(owner=OWNER)
    assert isinstance(plain, list) and [i.guid for i in plain] == guids
    items, total, offset, limit = gw.list_invoices(owner=OWNER, limit=500)  # type: ignore[misc]
    assert (total, offset, limit, len(items)) == (55, 0, 50, 50)
    assert items[0].guid == guids[-1]


class Closable(BaseNotifier):
    name = "closable"

    def __init__(self, fail: bool = False) -> None:
        self.closed = False
        self.fail = fail

    def invoice_changed(self, owner: str, payload: dict[str, object]) -> None:
        pass

    def close(self) -> None:
        self.closed = True
        if self.fail:
            raise RuntimeError("boom")


def test_close_closes_notifiers_even_when_one_fails(gw: Gateway) -> None:
    bad, good = Closable(fail=True), Closable()
    gw.add_notifier(bad, first=True)
    gw.add_notifier(good)
    gw.close()
    assert bad.closed and good.closed
