"""A watcher's batch (``Gateway.ingest``) does what one ``record_deposit`` per deposit does,
in one transaction: the same invoices, transaction rows, events and webhook deliveries,
whatever the mix of addresses, tokens, late, repeated and already recorded deposits. Then
what only a batch does: parking inside it, holding at an unpriced deposit, moving the
cursor with the lease proved, and refusing to count a deposit another writer recorded."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from paycore import NATIVE, Deposit, Gateway, Invoice, Settings, Status
from paycore.accounting.attribution import BEHIND, AttributionRace
from paycore.chains.records import CursorMove, DepositBatch, LeaseLost
from paycore.domain.changes import ALL_TYPES
from paycore.domain.records import WebhookConfig
from paycore.domain.tokens import to_checksum
from paycore.prices.records import StoredPrice
from paycore.storage import Storage
from paycore.webhooks.records import WebhookEndpoint
from paycore_storage import SqlStorage

CHAIN = 31337
USDC_ADDRESS = "0x5FbDB2315678afecb367f032d93F642f64180aa3"
USDC = f"{CHAIN}:{USDC_ADDRESS}"
ETH = f"{CHAIN}:{NATIVE}"
UNPRICED_ADDRESS = to_checksum("0x" + "7e" * 20)
UNPRICED = f"{CHAIN}:{UNPRICED_ADDRESS}"
FOREIGN_ADDRESS = to_checksum("0x" + "5c" * 20)  # accepted by nobody, priced by nobody
OWNER = "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359"
T0 = 1_700_000_000
ADDRESSES = [to_checksum(f"0x{n:040x}") for n in range(0xA0, 0xA5)]


class Clock:
    def __init__(self) -> None:
        self.t = T0 + 100_000

    def __call__(self) -> float:
        return self.t


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def pair(
    request: pytest.FixtureRequest, tmp_path: Path, make_storage: Callable[..., Storage]
) -> Iterator[tuple[Gateway, Gateway]]:
    """Two gateways on two stores of the same kind: one fed deposit by deposit, one batch."""
    settings = Settings(database_url="memory://", prices={USDC: "1", ETH: "2000"})
    clock = Clock()

    def store(side: str) -> Storage:
        if request.param == "sqlite":
            return SqlStorage(f"sqlite:///{tmp_path / side}.sqlite3")
        return make_storage(request.param)  # memory, or a fresh PostgreSQL schema each

    made = [
        Gateway(settings, storage=store(side), entry_points=False, clock=clock)
        for side in ("one", "batch")
    ]
    yield made[0], made[1]
    for gateway in made:
        gateway.close()


def invoices(rng: random.Random) -> list[Invoice]:
    """One to three invoices on each address but the last, created at various times; some
    tip jars, some past their deadline when paid, some taking ETH or the unpriced token."""
    made = []
    for a, address in enumerate(ADDRESSES[:-1]):
        for n in range(rng.randint(1, 3)):
            created = T0 + rng.randint(0, 500)
            accepted = rng.choice([(USDC,), (USDC, ETH), (ETH,)])
            made.append(
                Invoice(
                    guid=f"00000000-0000-4000-8000-{a:06d}{n:06d}",
                    created_at=created,
                    deadline=created + rng.choice([60, 400, 10_000]),
                    status=Status.INIT,
                    value=Decimal(rng.choice([0, 5, 30, 100])),
                    token=accepted[0],
                    chain_id=CHAIN,
                    description=f"invoice {a}.{n}",
                    address=address,
                    owner=OWNER,
                    accepted_tokens=accepted,
                    data={"n": n},
                )
            )
    return made


def deposits(rng: random.Random, count: int) -> list[Deposit]:
    made = []
    for n in range(count):
        token = rng.choice([USDC_ADDRESS, USDC_ADDRESS, NATIVE, FOREIGN_ADDRESS])
        amount = Decimal(rng.randint(1, 40_000)) / (100 if token != NATIVE else 100_000)
        made.append(
            Deposit(
                CHAIN,
                f"0x{n:064x}",
                rng.choice([0, 1]) if token != NATIVE else -1,
                token,
                "0x" + "22" * 20,
                rng.choice(ADDRESSES),
                amount,
                T0 + 10 * n,
                block_number=100 + n,
                block_hash=f"0x{n:064x}",
            )
        )
    return made


def state(gateway: Gateway, guids: list[str]) -> tuple[Any, ...]:
    with gateway.storage.transaction() as tx:
        stored = [tx.get_invoice(g) for g in guids]
        rows, total = tx.list_transactions(OWNER, limit=1000)
        hooks, _ = tx.list_deliveries(OWNER, limit=1000)
    # The whole outbox, every type (a poll queue hands out the status changes only).
    events = [(e.type, e.payload) for e in gateway.events.outbox_since(0, 10_000, OWNER).events]
    return stored, sorted(rows, key=lambda r: r.key), total, events, [d.body for d in hooks]


def setup(gateway: Gateway, made: list[Invoice], before: list[Deposit]) -> None:
    with gateway.storage.transaction() as tx:
        for invoice in made:
            tx.insert_invoice(invoice)
        tx.put_webhook(WebhookConfig(OWNER, "https://merchant.example.test/h", "whsec_A"))
        # An endpoint sent every type, beside the URL that is sent the status changes.
        every = WebhookEndpoint(
            "ep_" + "0" * 24, OWNER, "https://books.example.test/h", "whsec_B", ALL_TYPES, True, 0
        )
        tx.put_webhook_endpoint(every)
    for deposit in before:
        gateway.record_deposit(deposit)
    gateway.open_queue("test", OWNER)


@pytest.mark.parametrize("seed", range(6))
def test_a_batch_ends_where_one_deposit_at_a_time_ends(
    pair: tuple[Gateway, Gateway], seed: int
) -> None:
    one, batch = pair
    rng = random.Random(seed)
    made = invoices(rng)
    seen = deposits(rng, 60)
    before = rng.sample(seen, 8)  # recorded already: a re-scan meets them
    fed = seen + rng.sample(seen, 5)  # and some twice within the batch
    for gateway in pair:
        setup(gateway, made, before)
    for deposit in fed:
        one.record_deposit(deposit)
    done = batch.ingest(DepositBatch(CHAIN, fed))
    assert (done.attributed, done.parked, done.held) == (len(fed), 0, None)
    guids = [i.guid for i in made]
    expected, got = state(one, guids), state(batch, guids)
    assert got == expected
    stored, rows, _total, events, hooks = got
    assert len(events) > 10 and len(hooks) > len(events)  # every type, and the status changes
    assert any(i is not None and i.status is Status.PAID for i in stored)
    assert any(not r.counted for r in rows)  # a foreign token, recorded at no value


def test_an_unpriced_deposit_is_parked_in_the_batch_and_its_address_waits() -> None:
    clock = Clock()
    settings = Settings(database_url="memory://", prices={USDC: "1"})
    gateway = Gateway(settings, entry_points=False, clock=clock)
    a, b, c = ADDRESSES[:3]
    usdc, unpriced = [
        Invoice(
            guid=f"00000000-0000-4000-8000-00000000000{n}",
            created_at=T0,
            deadline=T0 + 10**6,
            status=Status.INIT,
            value=Decimal(10),
            token=token,
            chain_id=CHAIN,
            description="d",
            address=address,
            owner=OWNER,
            accepted_tokens=(token, USDC),
        )
        for n, (token, address) in enumerate([(USDC, a), (UNPRICED, b)])
    ]
    setup(gateway, [usdc, unpriced], [])
    fed = deposits(random.Random(1), 5)
    plan = [(a, USDC_ADDRESS), (b, UNPRICED_ADDRESS), (b, USDC_ADDRESS), (a, USDC_ADDRESS)]
    plan.append((c, USDC_ADDRESS))
    fed = [
        Deposit(CHAIN, d.tx_hash, 0, token, d.from_, to, Decimal(5), d.timestamp, 7, "0xh")
        for d, (to, token) in zip(fed, plan, strict=True)
    ]
    done = gateway.ingest(DepositBatch(CHAIN, fed, waiting=frozenset({c})))
    assert (done.attributed, done.parked) == (2, 3)
    assert done.parked_at == {b, c}
    with gateway.storage.transaction() as tx:
        parked = tx.parked_deposits(CHAIN, 10)
    assert [(p.deposit, p.reason == BEHIND) for p in parked] == [
        (fed[1], False),
        (fed[2], True),
        (fed[4], True),
    ]
    assert "no usd price" in parked[0].reason
    assert gateway.get_invoice(usdc.guid).status is Status.PAID
    assert gateway.get_invoice(unpriced.guid).payments == ()

    # A price arrives: the parked ones are valued in order, in one transaction.
    now = int(clock())
    gateway.pricing.put([StoredPrice(UNPRICED, "usd", Decimal(1), now, "test", now)])
    again = gateway.revalue_parked([p.deposit for p in parked], [])
    assert (again.attributed, again.parked) == (3, 0)
    paid = gateway.get_invoice(unpriced.guid)
    assert [p.tx_hash for p in paid.payments] == [fed[1].tx_hash, fed[2].tx_hash]
    assert paid.status is Status.PAID
    with gateway.storage.transaction() as tx:
        assert tx.parked_deposits(CHAIN, 10) == []


def cursor_move(holder: str, to: tuple[int, str | None] | None) -> CursorMove:
    return CursorMove(holder, (99, "0xold"), to, T0 * 1000, 30_000)


def single(n: int, token: str = USDC_ADDRESS, to: str = ADDRESSES[0]) -> Deposit:
    return Deposit(CHAIN, f"0x{n:064x}", 0, token, "0x" + "22" * 20, to, Decimal(4), T0 + n)


@pytest.fixture
def claimed() -> Gateway:
    settings = Settings(database_url="memory://", prices={USDC: "1"})
    gateway = Gateway(settings, entry_points=False, clock=Clock())
    invoice = Invoice(
        guid="00000000-0000-4000-8000-000000000001",
        created_at=T0,
        deadline=T0 + 10**6,
        status=Status.INIT,
        value=Decimal(10),
        token=USDC,
        chain_id=CHAIN,
        description="d",
        address=ADDRESSES[0],
        owner=OWNER,
        accepted_tokens=(USDC, UNPRICED),
    )
    setup(gateway, [invoice], [])
    assert gateway.chain_ledger.claim(CHAIN, "me", T0 * 1000, 30_000) is not None
    return gateway


def cursor(gateway: Gateway) -> tuple[int | None, str | None]:
    with gateway.storage.transaction() as tx:
        found = tx.get_chain_cursor(CHAIN)
    assert found is not None
    return found.block_number, found.block_hash


def paid(gateway: Gateway) -> Decimal:
    return gateway.get_invoice("00000000-0000-4000-8000-000000000001").paid_amount


def test_a_held_batch_keeps_what_came_before_and_the_cursor(claimed: Gateway) -> None:
    fed = [single(1), single(2, UNPRICED_ADDRESS), single(3)]
    done = claimed.ingest(
        DepositBatch(CHAIN, fed, hold=True, cursor=cursor_move("me", (120, "0xnew")))
    )
    assert done.attributed == 1 and done.held is not None and "no usd price" in done.held
    assert paid(claimed) == Decimal(4)  # the first one only
    assert cursor(claimed) == (99, "0xold")  # renewed where it was, not moved


def test_a_finished_batch_moves_the_cursor_with_its_deposits(claimed: Gateway) -> None:
    done = claimed.ingest(DepositBatch(CHAIN, [single(1)], cursor=cursor_move("me", (120, "0xh"))))
    assert (done.attributed, done.held) == (1, None)
    assert (paid(claimed), cursor(claimed)) == (Decimal(4), (120, "0xh"))


def test_a_batch_whose_lease_was_taken_writes_nothing(claimed: Gateway) -> None:
    claimed.chain_ledger.release(CHAIN, "me")
    assert claimed.chain_ledger.claim(CHAIN, "other", T0 * 1000, 30_000) is not None
    with pytest.raises(LeaseLost):
        claimed.ingest(DepositBatch(CHAIN, [single(1)], cursor=cursor_move("me", (120, "0xh"))))
    assert paid(claimed) == 0
    assert claimed.drain_events("test") == []
    assert cursor(claimed) == (None, None)


class Blind:
    """A storage whose transactions do not see the recorded transfers (as if another
    writer recorded them after the batch looked)."""

    def __init__(self, inner: Storage) -> None:
        self.inner = inner

    def transaction(self) -> Any:
        from contextlib import contextmanager

        @contextmanager
        def opened() -> Iterator[Any]:
            with self.inner.transaction() as tx:
                yield _BlindTx(tx)

        return opened()

    def close(self) -> None:
        self.inner.close()


class _BlindTx:
    def __init__(self, tx: Any) -> None:
        self._tx = tx

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tx, name)

    def known_transfers(self, keys: Any) -> set[Any]:
        return set()


def test_a_deposit_recorded_meanwhile_is_not_counted_again(claimed: Gateway) -> None:
    claimed.record_deposit(single(1))
    blind = Gateway(claimed.settings, storage=Blind(claimed.storage), entry_points=False)
    with pytest.raises(AttributionRace):
        blind.ingest(DepositBatch(CHAIN, [single(2), single(1)]))
    assert paid(claimed) == Decimal(4)  # not 8, and not 12: the batch rolled back whole


def test_two_late_deposits_in_one_batch_both_count_on_the_expired_invoice() -> None:
    """The first late deposit expires the invoice and is recorded on it; the second, in the
    same batch, must meet the invoice with the first one on it, not the expired snapshot."""
    clock = Clock()
    gateway = Gateway(
        Settings(database_url="memory://", prices={USDC: "1"}), entry_points=False, clock=clock
    )
    invoice = Invoice(
        guid="00000000-0000-4000-8000-000000000077", created_at=T0, deadline=T0 + 60,
        status=Status.INIT, value=Decimal(100), token=USDC, chain_id=CHAIN, description="late",
        address=ADDRESSES[0], owner=OWNER, accepted_tokens=(USDC,),
    )  # fmt: skip
    with gateway.storage.transaction() as tx:
        tx.insert_invoice(invoice)
    late = [
        Deposit(CHAIN, f"0x{n:064x}", 0, USDC_ADDRESS, "0x" + "22" * 20, ADDRESSES[0],
                Decimal(amount), T0 + 100 + n, block_number=100 + n, block_hash=f"0x{n:064x}")
        for n, amount in ((1, "30"), (2, "20"))
    ]  # fmt: skip
    gateway.ingest(DepositBatch(CHAIN, late))
    stored = gateway.get_invoice(invoice.guid)
    assert (stored.status, stored.paid_amount, len(stored.payments)) == (
        Status.EXPIRED, Decimal(50), 2
    )  # fmt: skip
    gateway.close()
