"""Deep reorgs on anvil: a counted deposit whose block is replaced is taken back.

A reorg deeper than ``confirmations`` after a deposit was attributed used to leave it
counted. Here the deposit is attributed (one confirmation), then anvil goes back to before
it (``evm_snapshot``/``evm_revert``) and grows a longer chain without it: the watcher finds
its cursor block replaced, re-checks the recorded deposits, marks the transfer reorged,
recomputes the invoice through the state machine and emits the change. When the same signed
transactions are mined again in the new chain, the transfer counts again -- once. Each case
runs on the in-memory storage, SQLite and PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
from evm_chain import Deployment
from evm_gateway import USD, Clock, drain, make_gateway, watcher
from sqlalchemy import select
from web3.types import TxParams

from paycore import Gateway
from paycore.domain.records import Invoice, Status, Transaction
from paycore.storage import Storage
from paycore.storage.memory import MemoryStorage
from paycore_storage import SqlStorage
from paycore_storage.tables import transactions

pytestmark = pytest.mark.node  # anvil comes from npm

CONSUMER = "test:reorg"


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def storage(request: pytest.FixtureRequest, make_storage: Callable[..., Storage]) -> Storage:
    return make_storage(request.param)


def rpc(evm: Deployment, method: str, *params: Any) -> Any:
    answer = evm.chain.w3.provider.make_request(method, list(params))  # type: ignore[arg-type]
    assert "error" not in answer, answer
    return answer["result"]


def send_kept(evm: Deployment, sender: Any, call: Any) -> bytes:
    """Send a contract call signed here and return its raw bytes, to send them again once
    a reorg has dropped them (same nonce, same signature: the same transaction hash)."""
    w3 = evm.chain.w3
    tx: TxParams = call.build_transaction(
        {
            "from": sender.address,
            "nonce": w3.eth.get_transaction_count(sender.address, "pending"),
            "maxFeePerGas": w3.to_wei(100, "gwei"),  # still enough after the chain moves
            "maxPriorityFeePerGas": w3.to_wei(1, "gwei"),
            "chainId": evm.chain.chain_id,
        }
    )
    raw = bytes(sender.sign_transaction(tx).raw_transaction)
    receipt = w3.eth.wait_for_transaction_receipt(w3.eth.send_raw_transaction(raw), timeout=30)
    assert receipt["status"] == 1
    return raw


def pay_kept(evm: Deployment, to: str, units: int) -> tuple[list[bytes], str]:
    """Mint to the payer and pay ``to`` (two blocks); the raw transactions and the
    transfer's hash."""
    mint = send_kept(evm, evm.admin, evm.token.functions.mint(evm.payer.address, units))
    transfer = send_kept(evm, evm.payer, evm.token.functions.transfer(to, units))
    return [mint, transfer], "0x" + evm.chain.w3.keccak(transfer).hex().removeprefix("0x")


def resend(evm: Deployment, raws: list[bytes]) -> None:
    w3 = evm.chain.w3
    for raw in raws:
        receipt = w3.eth.wait_for_transaction_receipt(w3.eth.send_raw_transaction(raw), 30)
        assert receipt["status"] == 1


def replace_since(evm: Deployment, snapshot: str) -> None:
    """Go back to ``snapshot`` and grow a chain two blocks longer than the one dropped."""
    head = evm.chain.w3.eth.block_number
    assert rpc(evm, "evm_revert", snapshot) is True
    rpc(evm, "anvil_mine", hex(head - evm.chain.w3.eth.block_number + 2))


def invoice_of(gateway: Gateway, guid: str) -> Invoice:
    with gateway.storage.transaction() as tx:
        found = tx.get_invoice(guid)
    assert found is not None
    return found


def events(gateway: Gateway) -> list[tuple[str, str]]:
    """Every change queued since the last look, of every type (a poll hands out the status
    changes only; a reversal is announced as ``invoice.payment_reversed``)."""
    with gateway.storage.transaction() as tx:
        queued = tx.drain_queue(CONSUMER, 1000)
    return [(e.payload["status"], e.payload["paidAmount"]) for e in queued]


def stored_rows(storage: Storage, tx_hash: str) -> list[Transaction]:
    """The transaction rows of ``tx_hash`` as stored, reorged ones included."""
    if isinstance(storage, MemoryStorage):
        with storage.transaction():
            return [t for t in storage._tables.transactions.values() if t.tx_hash == tx_hash]
    assert isinstance(storage, SqlStorage)
    from paycore_storage.rows import transaction_from_row

    with storage.engine.connect() as connection:
        rows = connection.execute(select(transactions).where(transactions.c.tx_hash == tx_hash))
        return [transaction_from_row(r._mapping) for r in rows]


def setup(evm: Deployment, storage: Storage, value: str = "10") -> tuple[Gateway, Invoice, Any]:
    """One confirmation; rewinding one block only, so taking the deposit back must move
    the cursor further than ``reorg_rewind`` on its own."""
    clock = Clock()
    gateway = make_gateway(evm, storage=storage, clock=clock, confirmations=1, reorg_rewind=1)
    owner = evm.owner.address
    token = gateway.settings.chains[31337].tokens[0]
    invoice = gateway.create_invoice(
        owner,
        {
            "value": value,
            "chainId": 31337,
            "description": "reorg",
            "acceptedTokens": [f"31337:{token}"],
        },
    )
    gateway.open_queue(CONSUMER, owner)
    w = watcher(gateway)
    drain(w)
    return gateway, invoice, w


def test_a_reorged_deposit_is_taken_back_and_counts_once_when_mined_again(
    evm: Deployment, storage: Storage
) -> None:
    gateway, invoice, w = setup(evm, storage)
    snapshot = rpc(evm, "evm_snapshot")
    raws, tx_hash = pay_kept(evm, invoice.address, 10 * USD)
    rpc(evm, "anvil_mine", "0x3")
    assert sum(r.deposits for r in drain(w)) == 1
    assert invoice_of(gateway, invoice.guid).status is Status.PAID
    assert events(gateway) == [("paid", "10")]
    [row] = stored_rows(storage, tx_hash)
    assert row.block_number is not None and row.block_hash is not None and not row.reorged

    # Deeper than the one confirmation: the chain without the payment wins.
    replace_since(evm, snapshot)
    reports = drain(w)
    assert sum(r.reorged for r in reports) == 1
    assert any(r.rewound_to is not None and r.rewound_to < row.block_number for r in reports)
    taken_back = invoice_of(gateway, invoice.guid)
    assert (taken_back.status, taken_back.paid_amount, taken_back.payments) == (
        Status.INIT,
        Decimal(0),
        (),
    )
    assert events(gateway) == [("init", "0")]
    assert [r.reorged for r in stored_rows(storage, tx_hash)] == [True]
    items, total, *_ = gateway.list_transactions(evm.owner.address, offset=0, limit=50)
    assert (items, total) == ([], 0)
    assert sum(r.reorged for r in drain(w)) == 0  # nothing is taken back twice

    # The same signed transactions, mined again in the new chain: counted again, once.
    resend(evm, raws)
    rpc(evm, "anvil_mine", "0x2")
    assert sum(r.deposits for r in drain(w)) == 1
    assert sum(r.deposits for r in drain(w)) == 0
    again = invoice_of(gateway, invoice.guid)
    assert (again.status, again.paid_amount) == (Status.PAID, Decimal(10))
    assert [p.tx_hash for p in again.payments] == [tx_hash]
    assert events(gateway) == [("paid", "10")]
    [row_again] = stored_rows(storage, tx_hash)
    assert not row_again.reorged and row_again.block_hash != row.block_hash
    items, total, *_ = gateway.list_transactions(evm.owner.address, offset=0, limit=50)
    assert total == 1 and items[0].tx_hash == tx_hash


def test_only_the_replaced_part_of_a_payment_is_taken_back(
    evm: Deployment, storage: Storage
) -> None:
    gateway, invoice, w = setup(evm, storage)
    _raws, first = pay_kept(evm, invoice.address, 4 * USD)
    rpc(evm, "anvil_mine", "0x2")
    snapshot = rpc(evm, "evm_snapshot")
    _raws, second = pay_kept(evm, invoice.address, 6 * USD)
    rpc(evm, "anvil_mine", "0x2")
    assert sum(r.deposits for r in drain(w)) == 2
    assert events(gateway) == [("partialPaid", "4"), ("paid", "10")]

    replace_since(evm, snapshot)
    assert sum(r.reorged for r in drain(w)) == 1
    after = invoice_of(gateway, invoice.guid)
    assert (after.status, after.paid_amount) == (Status.PARTIAL_PAID, Decimal(4))
    assert [p.tx_hash for p in after.payments] == [first]
    assert events(gateway) == [("partialPaid", "4")]
    assert [r.reorged for r in stored_rows(storage, second)] == [True]
    assert [r.reorged for r in stored_rows(storage, first)] == [False]


def test_a_paid_invoice_past_its_deadline_expires_when_its_payment_vanishes(
    evm: Deployment, storage: Storage
) -> None:
    gateway, invoice, w = setup(evm, storage)
    snapshot = rpc(evm, "evm_snapshot")
    pay_kept(evm, invoice.address, 10 * USD)
    rpc(evm, "anvil_mine", "0x2")
    drain(w)
    assert events(gateway) == [("paid", "10")]
    assert isinstance(gateway.clock, Clock)
    gateway.clock.advance(invoice.deadline - invoice.created_at + 60)

    replace_since(evm, snapshot)
    assert sum(r.reorged for r in drain(w)) == 1
    after = invoice_of(gateway, invoice.guid)
    assert (after.status, after.paid_amount) == (Status.EXPIRED, Decimal(0))
    assert events(gateway) == [("init", "0"), ("expired", "0")]
