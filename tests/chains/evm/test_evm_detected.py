""" "Payment detected, confirming (n of m)" on anvil: a transfer mined but not yet
``confirmations`` deep shows in the invoice's provisional ``detected`` list, never in
``payments`` or ``paidAmount``, and leaves the list once it is attributed; a reorg that drops
its block drops it. Each case runs on the in-memory storage, SQLite and PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
from evm_chain import Deployment
from evm_gateway import USD, Clock, drain, make_gateway, pay_native, watcher

from paycore import Gateway
from paycore.chains.evm.watcher import EvmWatcher
from paycore.domain.records import Deposit, Invoice, Status
from paycore.storage import Storage

pytestmark = pytest.mark.node  # anvil comes from npm

CONSUMER = "test:detected"
REQUIRED = 3


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def storage(request: pytest.FixtureRequest, make_storage: Callable[..., Storage]) -> Storage:
    return make_storage(request.param)


def rpc(evm: Deployment, method: str, *params: Any) -> Any:
    answer = evm.chain.w3.provider.make_request(method, list(params))  # type: ignore[arg-type]
    assert "error" not in answer, answer
    return answer["result"]


def mine(evm: Deployment, blocks: int) -> None:
    rpc(evm, "anvil_mine", hex(blocks))


def setup(
    evm: Deployment, storage: Storage, **chain: Any
) -> tuple[Gateway, Invoice, EvmWatcher, str]:
    gateway = make_gateway(
        evm, storage=storage, clock=Clock(), confirmations=REQUIRED, reorg_rewind=1, **chain
    )
    owner = evm.owner.address
    token = gateway.settings.chains[31337].tokens[0]
    invoice = gateway.create_invoice(
        owner,
        {
            "value": "10",
            "chainId": 31337,
            "description": "detected",
            "acceptedTokens": [
                f"31337:{token}",
                "31337:0x0000000000000000000000000000000000000000",
            ],
        },
    )
    gateway.open_queue(CONSUMER, owner)
    w = watcher(gateway)
    drain(w)
    return gateway, invoice, w, token


def public(gateway: Gateway, guid: str) -> dict[str, Any]:
    """The record GET /invoice/{guid} answers."""
    return gateway.invoice_wire(gateway.get_invoice(guid))


def pay(evm: Deployment, to: str, units: int) -> str:
    """Mint, then pay ``to`` in a block of its own: the head once it returns."""
    evm.mint(evm.token, evm.payer.address, units)
    receipt = evm.chain.transact(evm.payer, evm.token.functions.transfer(to, units))
    return "0x" + bytes(receipt["transactionHash"]).hex()


def test_a_transfer_is_detected_at_once_then_confirms_into_a_payment(
    evm: Deployment, storage: Storage
) -> None:
    gateway, invoice, w, token = setup(evm, storage)
    tx_hash = pay(evm, invoice.address, 10 * USD)
    block = evm.chain.w3.eth.block_number
    reports = drain(w)
    assert sum(r.deposits for r in reports) == 0 and reports[-1].detected == 1
    record = public(gateway, invoice.guid)
    assert record["detected"] == [
        {
            "txHash": tx_hash,
            "logIndex": 0,
            "chainId": "31337",
            "token": token,
            "from": evm.payer.address,
            "amount": "10",
            "blockNumber": block,
            "confirmations": 1,
            "required": REQUIRED,
        }
    ]
    assert (record["status"], record["paidAmount"], record["payments"]) == ("init", "0", [])
    # The owner's reads show it too; no event announced it (no status changed).
    [listed] = gateway.list_invoices(owner=evm.owner.address)
    assert [d.tx_hash for d in listed.detected] == [tx_hash]
    assert gateway.drain_events(CONSUMER) == []

    for depth in range(2, REQUIRED + 1):
        mine(evm, 1)
        drain(w)
        record = public(gateway, invoice.guid)
        assert [d["confirmations"] for d in record["detected"]] == [depth]
        assert (record["status"], record["paidAmount"]) == ("init", "0")

    mine(evm, 1)  # REQUIRED blocks on top of it: attributed, no longer provisional
    assert sum(r.deposits for r in drain(w)) == 1
    record = public(gateway, invoice.guid)
    assert record["detected"] == []
    assert (record["status"], record["paidAmount"]) == ("paid", "10")
    assert [p["txHash"] for p in record["payments"]] == [tx_hash]
    # The event of the status change carries the record as it is: nothing provisional left.
    assert [
        (e.payload["status"], e.payload["detected"]) for e in gateway.drain_events(CONSUMER)
    ] == [("paid", [])]


def test_a_reorg_removes_a_detected_transfer(evm: Deployment, storage: Storage) -> None:
    gateway, invoice, w, _token = setup(evm, storage)
    snapshot = rpc(evm, "evm_snapshot")
    tx_hash = pay_native(evm, invoice.address, 10**15)
    mine(evm, 1)
    drain(w)
    [shown] = public(gateway, invoice.guid)["detected"]
    assert (shown["txHash"], shown["logIndex"], shown["confirmations"]) == (tx_hash, -1, 2)
    assert shown["amount"] == "0.001"

    # The chain without it wins, longer than the one dropped, still above the safe head.
    head = evm.chain.w3.eth.block_number
    assert rpc(evm, "evm_revert", snapshot) is True
    mine(evm, head - evm.chain.w3.eth.block_number + 1)
    assert drain(w)[-1].detected == 0
    record = public(gateway, invoice.guid)
    assert record["detected"] == []
    assert (record["status"], record["paidAmount"], record["payments"]) == ("init", "0", [])
    mine(evm, REQUIRED + 1)
    assert sum(r.deposits for r in drain(w)) == 0
    assert gateway.get_invoice(invoice.guid).status is Status.INIT
    assert gateway.drain_events(CONSUMER) == []


def test_a_partial_payment_stays_partial_while_the_rest_is_detected(
    evm: Deployment, storage: Storage
) -> None:
    gateway, invoice, w, _token = setup(evm, storage)
    pay(evm, invoice.address, 4 * USD)
    mine(evm, REQUIRED)
    assert sum(r.deposits for r in drain(w)) == 1
    second = pay(evm, invoice.address, 6 * USD)
    drain(w)
    record = public(gateway, invoice.guid)
    assert (record["status"], record["paidAmount"]) == ("partialPaid", "4")
    assert [(d["txHash"], d["amount"]) for d in record["detected"]] == [(second, "6")]
    assert [e.payload["status"] for e in gateway.drain_events(CONSUMER)] == ["partialPaid"]


def test_detection_off_reads_nothing_above_the_safe_head(evm: Deployment, storage: Storage) -> None:
    gateway, invoice, first, _token = setup(evm, storage, detect_unconfirmed=False)
    first.release()  # a new watcher process takes over
    tx_hash = pay(evm, invoice.address, 10 * USD)
    block = evm.chain.w3.eth.block_number
    # A list kept from when detection was on: the first pass with it off empties it.
    kept = Deposit(
        31337,
        tx_hash,
        0,
        _token,
        evm.payer.address,
        invoice.address,
        Decimal(10),
        int(gateway.now()),
        block,
        "0x" + "ab" * 32,
    )
    gateway.record_detected(31337, [kept], {block: 1}, REQUIRED)
    assert len(public(gateway, invoice.guid)["detected"]) == 1
    w = watcher(gateway)
    assert drain(w)[-1].detected is None
    assert public(gateway, invoice.guid)["detected"] == []


def test_each_unconfirmed_block_is_read_once_per_hash(evm: Deployment, storage: Storage) -> None:
    """Through the fault proxy (nothing faulty), counting what the watcher asks: a pass
    with no new block asks for the unconfirmed headers only; a new block costs its own
    read, not the whole range's again."""
    from rpc_proxy import FaultProxy

    proxy = FaultProxy(evm.chain.rpc_url)
    with proxy.running() as url:
        gateway, invoice, w, _token = setup(evm, storage, rpc_url=url)
        pay(evm, invoice.address, 10 * USD)
        drain(w)
        mark = len(proxy.requests)
        for _ in range(3):
            assert w.step().detected == 1
        asked = [m for seen in proxy.requests[mark:] for m in seen.methods]
        assert "eth_getLogs" not in asked
        assert [d["confirmations"] for d in public(gateway, invoice.guid)["detected"]] == [1]

        mine(evm, 1)
        mark = len(proxy.requests)
        assert w.step().detected == 1
        asked = [m for seen in proxy.requests[mark:] for m in seen.methods]
        assert asked.count("eth_getLogs") == 2  # the new block's two filters, once
        assert [d["confirmations"] for d in public(gateway, invoice.guid)["detected"]] == [2]
