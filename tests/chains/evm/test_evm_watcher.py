"""The watcher's promises on a real chain: confirmations and reorgs, exactly-once counting
across crashes and restarts, one scanner per chain, and resuming at the cursor."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from evm_chain import Deployment
from evm_gateway import (
    ADAPTERS,
    CHAIN_ID,
    USD,
    Clock,
    Env,
    backend,
    chain_config,
    drain,
    make_gateway,
    open_env,
    pay_token,
    watcher,
)
from web3.exceptions import TransactionNotFound

from paycore import Gateway
from paycore.chains.evm.watcher import EvmWatcher
from paycore.domain.records import Status
from paycore.storage import Storage
from paycore.storage.memory import MemoryStorage
from paycore_storage import SqlStorage

pytestmark = pytest.mark.node  # anvil comes from npm

REPO = Path(__file__).resolve().parents[3]


def rpc(evm: Deployment, method: str, *params: Any) -> Any:
    return evm.chain.w3.provider.make_request(method, list(params))["result"]  # type: ignore[arg-type]


def usdc_invoice(gateway: Gateway, owner: str, value: str = "10") -> Any:
    token = gateway.settings.chains[CHAIN_ID].tokens[0]
    return gateway.create_invoice(
        owner,
        {
            "value": value,
            "chainId": CHAIN_ID,
            "description": "order",
            "acceptedTokens": [f"{CHAIN_ID}:{token}"],
        },
    )


def paid_amounts(gateway: Gateway, guids: list[str]) -> list[tuple[Decimal, int]]:
    with gateway.storage.transaction() as tx:
        found = [tx.get_invoice(g) for g in guids]
    return [(i.paid_amount, len(i.payments)) for i in found if i is not None]


# -- confirmations and reorgs -----------------------------------------------------------------


@pytest.fixture(params=ADAPTERS)
def env2(request: pytest.FixtureRequest, evm: Deployment) -> Iterator[Env]:
    """Two confirmations: a transfer is attributed once two blocks are on top of it."""
    with open_env(request.param, evm, confirmations=2) as opened:
        yield opened


def test_a_reorg_before_confirmation_attributes_only_the_replacement(env2: Env) -> None:
    env, evm = env2, env2.evm
    owner, key = env.merchant()
    body = {
        "value": "10",
        "chainId": CHAIN_ID,
        "description": "reorg",
        "acceptedTokens": [f"{CHAIN_ID}:{evm.token.address}"],
    }
    invoice = env.api.post("/invoice", body, session=key).ok(201)
    w = watcher(env.gateway)
    drain(w)
    snapshot = rpc(evm, "evm_snapshot")
    vanished = pay_token(evm, evm.token, invoice["address"], 10 * USD)
    assert drain(w)[-1].deposits == 0  # on the chain, but not two blocks deep
    assert env.api.get(f"/invoice/{invoice['guid']}").ok()["status"] == "init"

    assert rpc(evm, "evm_revert", snapshot) is True
    with pytest.raises(TransactionNotFound):
        evm.chain.w3.eth.get_transaction_receipt(vanished)  # type: ignore[arg-type]
    replacement = pay_token(evm, evm.token, invoice["address"], 7 * USD)
    assert drain(w)[-1].deposits == 0
    rpc(evm, "anvil_mine", "0x2")
    assert sum(r.deposits for r in drain(w)) == 1
    assert sum(r.deposits for r in drain(w)) == 0
    got = env.api.get(f"/invoice/{invoice['guid']}").ok()
    assert (got["status"], got["paidAmount"]) == ("partialPaid", "7")
    assert [p["txHash"] for p in got["payments"]] == [replacement]
    events = env.api.post("/poll/events", session=key).ok()["events"]
    assert [(e["status"], e["paidAmount"]) for e in events] == [("partialPaid", "7")]


def test_a_replaced_cursor_block_rewinds_the_scan(evm: Deployment) -> None:
    """A reorg deeper than ``confirmations`` (here 0): the cursor's block hash no longer
    matches, the watcher rewinds and picks up the replacement chain's transfer, once."""
    gateway = make_gateway(evm, reorg_rewind=8)
    owner = evm.owner.address
    invoice = usdc_invoice(gateway, owner, "100")
    w = watcher(gateway)
    drain(w)
    snapshot = rpc(evm, "evm_snapshot")
    pay_token(evm, evm.token, invoice.address, 3 * USD)
    drain(w)  # attributed at depth 0: the operator chose no confirmations
    assert rpc(evm, "evm_revert", snapshot) is True
    replacement = pay_token(evm, evm.token, invoice.address, 4 * USD)
    reports = drain(w)
    assert reports[0].rewound_to is not None
    assert sum(r.deposits for r in reports) == 1
    drain(w)
    with gateway.storage.transaction() as tx:
        stored = tx.get_invoice(invoice.guid)
    assert stored is not None
    assert [p.tx_hash for p in stored.payments].count(replacement) == 1

    # The chain may also come back shorter than the cursor. A node whose head is below the
    # cursor cannot be told from a node that lags behind a load balancer, so the watcher
    # waits (moving nothing) until the new chain passes the cursor; then the same rewind.
    snapshot = rpc(evm, "evm_snapshot")
    pay_token(evm, evm.token, invoice.address, 1)
    drain(w)
    with gateway.storage.transaction() as tx:
        before = tx.get_chain_cursor(CHAIN_ID)
    rpc(evm, "evm_revert", snapshot)
    waiting = w.step()
    assert waiting.error is not None and "behind the cursor" in waiting.error
    with gateway.storage.transaction() as tx:
        after = tx.get_chain_cursor(CHAIN_ID)
    assert before is not None and after is not None
    assert (after.block_number, after.block_hash) == (before.block_number, before.block_hash)
    rpc(evm, "anvil_mine", "0x3")
    assert drain(w)[0].rewound_to is not None


# -- crashes, restarts and the lease ---------------------------------------------------------


@pytest.fixture(params=["memory", "sqlite"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Storage]:
    store: Storage = (
        MemoryStorage() if request.param == "memory" else SqlStorage(f"sqlite:///{tmp_path}/p.db")
    )
    yield store
    store.close()


def test_a_watcher_killed_mid_range_loses_and_doubles_nothing(
    evm: Deployment, storage: Storage, dies_in_batch: Callable[[Storage, int], Storage]
) -> None:
    """Three deposits per batch: the first batch commits, the process dies inside the
    second, whose rows are rolled back with it; the range's cursor never moved."""
    clock = Clock()
    dying = dies_in_batch(storage, 2)
    gateway = make_gateway(evm, storage=dying, clock=clock, watcher_lease=30, ingest_batch=3)
    start_block = gateway.settings.chains[CHAIN_ID].start_block
    assert start_block is not None
    invoices = [usdc_invoice(gateway, evm.owner.address, str(n)) for n in range(1, 7)]
    for n, invoice in enumerate(invoices, start=1):
        pay_token(evm, evm.token, invoice.address, n * USD)

    first = watcher(gateway, holder="first")
    with pytest.raises(RuntimeError, match="killed in batch 2"):
        first.step()
    assert [amount for amount, _ in paid_amounts(gateway, [i.guid for i in invoices])] == [
        Decimal(n) if n <= 3 else Decimal(0) for n in range(1, 7)
    ]
    with gateway.storage.transaction() as tx:
        cursor = tx.get_chain_cursor(CHAIN_ID)
        recorded = tx.recorded_deposits(CHAIN_ID, 0)
    assert len(recorded) == 3  # the dead batch's rows went with it
    assert cursor is not None and cursor.block_number == start_block - 1  # range not done

    second = watcher(gateway, holder="second")
    assert second.step().held is False  # the dead watcher's lease has not lapsed yet
    clock.advance(31)
    assert sum(r.deposits for r in drain(second)) == 6  # the whole range again
    assert paid_amounts(gateway, [i.guid for i in invoices]) == [
        (Decimal(n), 1) for n in range(1, 7)
    ]
    items, total, *_ = gateway.list_transactions(evm.owner.address, offset=0, limit=50)
    assert total == 6 and len({t.tx_hash for t in items}) == 6
    # The first watcher, were it to wake up, finds its lease taken and moves nothing.
    assert first.step().held is False


def test_a_batch_commits_whole_or_not_at_all(
    evm: Deployment, storage: Storage, dies_in_batch: Callable[[Storage, int], Storage]
) -> None:
    """One batch for the range: killed before its commit, it leaves no row, no payment, no
    event and no cursor move; the next watcher counts every deposit once."""
    clock = Clock()
    gateway = make_gateway(evm, storage=dies_in_batch(storage, 1), clock=clock, watcher_lease=30)
    invoices = [usdc_invoice(gateway, evm.owner.address, "2") for _ in range(4)]
    gateway.open_queue("test:batch", evm.owner.address)
    for invoice in invoices:
        pay_token(evm, evm.token, invoice.address, 2 * USD)
    with pytest.raises(RuntimeError, match="killed in batch 1"):
        watcher(gateway, holder="first").step()
    assert paid_amounts(gateway, [i.guid for i in invoices]) == [(Decimal(0), 0)] * 4
    assert gateway.drain_events("test:batch") == []
    with gateway.storage.transaction() as tx:
        assert tx.recorded_deposits(CHAIN_ID, 0) == []
        cursor = tx.get_chain_cursor(CHAIN_ID)
    assert cursor is not None and cursor.block_number is None

    clock.advance(31)
    assert sum(r.deposits for r in drain(watcher(gateway, holder="second"))) == 4
    assert paid_amounts(gateway, [i.guid for i in invoices]) == [(Decimal(2), 1)] * 4
    events = gateway.drain_events("test:batch")
    assert sorted(e.guid for e in events) == sorted(i.guid for i in invoices)
    assert {e.payload["status"] for e in events} == {"paid"}


def test_a_watcher_that_lost_its_lease_mid_range_writes_nothing(
    evm: Deployment, storage: Storage
) -> None:
    """The range was fetched, then another watcher took the chain over before the batch
    committed: the batch's own cursor move finds the lease gone and rolls the whole batch
    back, so only the new holder counts the deposits."""
    clock = Clock()
    gateway = make_gateway(evm, storage=storage, clock=clock, watcher_lease=30)
    invoices = [usdc_invoice(gateway, evm.owner.address, "3") for _ in range(3)]
    for invoice in invoices:
        pay_token(evm, evm.token, invoice.address, 3 * USD)

    class Overtaken(EvmWatcher):
        def _withdrawal_records(self, fetched: Any) -> Any:  # just before the batch opens
            clock.advance(31)
            now_ms = int(clock() * 1000)
            assert gateway.chain_ledger.claim(CHAIN_ID, "successor", now_ms, 30_000)
            return super()._withdrawal_records(fetched)

    stale = Overtaken(gateway, backend(gateway).chain(CHAIN_ID), holder="stale")
    report = stale.step()
    assert (report.held, report.deposits, report.caught_up) == (False, 0, False)
    assert paid_amounts(gateway, [i.guid for i in invoices]) == [(Decimal(0), 0)] * 3
    with gateway.storage.transaction() as tx:
        cursor = tx.get_chain_cursor(CHAIN_ID)
    assert cursor is not None and (cursor.holder, cursor.block_number) == ("successor", None)

    assert sum(r.deposits for r in drain(watcher(gateway, holder="successor"))) == 3
    assert paid_amounts(gateway, [i.guid for i in invoices]) == [(Decimal(3), 1)] * 3
    _items, total, *_ = gateway.list_transactions(evm.owner.address, offset=0, limit=50)
    assert total == 3


def test_a_restarted_watcher_resumes_at_its_cursor(evm: Deployment, storage: Storage) -> None:
    gateway = make_gateway(evm, storage=storage)
    invoice = usdc_invoice(gateway, evm.owner.address)
    pay_token(evm, evm.token, invoice.address, 1 * USD)
    old = watcher(gateway)
    reports = drain(old)
    assert reports[-1].deposits == 1 and reports[-1].scanned_to is not None
    old.release()
    pay_token(evm, evm.token, invoice.address, 2 * USD)
    new = watcher(gateway)  # another holder: a new process
    report = new.step()
    assert report.scanned_from == reports[-1].scanned_to + 1
    assert report.deposits == 1
    assert paid_amounts(gateway, [invoice.guid]) == [(Decimal(3), 2)]


def test_watchers_in_threads_share_one_chain(evm: Deployment, tmp_path: Path) -> None:
    """Three watcher loops on one database: one scans, and every deposit counts once."""
    import threading

    storage = SqlStorage(f"sqlite:///{tmp_path}/p.db")
    gateway = make_gateway(evm, storage=storage, block_batch=2)
    invoices = [usdc_invoice(gateway, evm.owner.address, "5") for _ in range(4)]
    stop = threading.Event()
    loops = [watcher(gateway, holder=f"t{i}") for i in range(3)]
    threads = [threading.Thread(target=w.run, args=(stop,)) for w in loops]
    for thread in threads:
        thread.start()
    try:
        for invoice in invoices:
            pay_token(evm, evm.token, invoice.address, 5 * USD)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if all(n == 1 for _, n in paid_amounts(gateway, [i.guid for i in invoices])):
                break
            time.sleep(0.05)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=20)
    assert paid_amounts(gateway, [i.guid for i in invoices]) == [(Decimal(5), 1)] * 4
    with gateway.storage.transaction() as tx:
        for invoice in invoices:
            stored = tx.get_invoice(invoice.guid)
            assert stored is not None and stored.status is Status.PAID
        cursor = tx.get_chain_cursor(CHAIN_ID)
    assert cursor is not None and cursor.holder is None  # released on the way out
    storage.close()


def test_a_killed_watcher_process_is_taken_over_by_another(evm: Deployment, tmp_path: Path) -> None:
    """Real processes on one SQLite file: SIGKILL one mid-scan, start another; it waits for
    the lease to lapse, resumes at the cursor, and every deposit counts exactly once."""
    url = f"sqlite:///{tmp_path}/watch.db"
    storage = SqlStorage(url)
    clock = Clock()
    config = chain_config(evm, block_batch=1, watcher_lease=1.5, poll_interval=0.05)
    gateway = make_gateway(evm, storage=storage, clock=clock, block_batch=1, watcher_lease=1.5)
    count = 12
    invoices = [usdc_invoice(gateway, evm.owner.address, "1") for _ in range(count)]
    for invoice in invoices:
        pay_token(evm, evm.token, invoice.address, USD)
    chain_json = {
        str(CHAIN_ID): {
            "name": config.name,
            "confirmations": 0,
            "rpc_url": config.rpc_url,
            "factory": config.factory,
            "tokens": list(config.tokens),
            "start_block": config.start_block,
            "block_batch": 1,
            "watcher_lease": 1.5,
            "poll_interval": 0.05,
        }
    }
    environ = {
        **os.environ,
        "PAYCORE_DATABASE_URL": url,
        "PAYCORE_CHAINS": json.dumps(chain_json),
        "PAYCORE_PRICES": json.dumps({k: str(v) for k, v in gateway.settings.prices.items()}),
    }
    command = [sys.executable, "-m", "paycore.chains.evm.watcher", "--log-level", "WARNING"]

    def counted() -> int:
        return sum(n for _, n in paid_amounts(gateway, [i.guid for i in invoices]))

    first = subprocess.Popen(command, env=environ, cwd=REPO)
    try:
        deadline = time.monotonic() + 30
        while counted() == 0 and time.monotonic() < deadline and first.poll() is None:
            time.sleep(0.005)
        first.kill()  # SIGKILL: no release, no clean-up
        first.wait(timeout=10)
    finally:
        if first.poll() is None:
            first.kill()
    at_kill = counted()
    assert 0 < at_kill <= count
    second = subprocess.Popen(command, env=environ, cwd=REPO)
    try:
        deadline = time.monotonic() + 30
        while counted() < count and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        second.terminate()
        second.wait(timeout=20)
    assert paid_amounts(gateway, [i.guid for i in invoices]) == [(Decimal(1), 1)] * count
    storage.close()
