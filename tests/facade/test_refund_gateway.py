"""Refunds through the Gateway on in-memory storage, with no node: what the watcher's
withdrawals confirm (``Gateway.ingest``), cancelling, and that a refund whose transaction
cannot be built records nothing. Building on a real chain is tests/chains/evm/test_evm_refunds.py.

The pending refunds here are put in storage directly (``Gateway.storage`` is there for
tests), as ``Gateway.refund_invoice`` would after building their transaction.
"""

from __future__ import annotations

from decimal import Decimal

import attrs
import pytest

from paycore import NATIVE, ChainConfig, Deposit, Gateway, Settings
from paycore.chains.evm import plugin as evm_plugin
from paycore.chains.evm.rpc import RpcError
from paycore.chains.records import DepositBatch
from paycore.domain.records import (
    Json,
    RateSource,
    Refund,
    RefundStatus,
    Transaction,
    TxType,
)
from paycore.errors import Conflict, Forbidden, InvoiceNotFound, NotFound
from paycore.notify import BaseNotifier

CHAIN = 1
ETH = f"{CHAIN}:{NATIVE}"
OWNER = "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359"
OTHER = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"
PAYER = "0x2222222222222222222222222222222222222222"
WALLET = "0x4444444444444444444444444444444444444444"
NOW = 1_700_000_000


class Heard(BaseNotifier):
    name = "heard"

    def __init__(self) -> None:
        self.changes: list[Json] = []
        self.transactions: list[Json] = []

    def invoice_changed(self, owner: str, payload: Json) -> None:
        self.changes.append(payload)

    def transaction_recorded(self, owner: str, item: Json) -> None:
        self.transactions.append(item)


@pytest.fixture
def gw() -> Gateway:
    """Chain 1 with an EVM backend whose node is not there: anything needing it fails."""
    chains = {
        CHAIN: ChainConfig(
            chain_id=CHAIN,
            name="eth",
            rpc_url="http://127.0.0.1:9",
            factory="0x5FbDB2315678afecb367f032d93F642f64180aa3",
        )
    }
    settings = Settings(database_url="memory://", prices={ETH: "2000"}, chains=chains)
    return Gateway(settings, entry_points=False, plugins=[evm_plugin], clock=lambda: NOW)


def paid_invoice(gw: Gateway, eth: str = "0.005") -> str:
    body = {"value": "10", "chainId": CHAIN, "description": "d", "acceptedTokens": [ETH]}
    invoice = gw.create_invoice(OWNER, body)
    gw.record_deposit(
        Deposit(CHAIN, "0x" + "ab" * 32, -1, NATIVE, PAYER, invoice.address, Decimal(eth), NOW)
    )
    return invoice.guid


def pending(gw: Gateway, guid: str, n: int, amount: str = "0.0025") -> Refund:
    refund = Refund(
        id=f"00000000-0000-4000-9000-{n:012d}",
        guid=guid,
        owner=OWNER,
        chain_id=CHAIN,
        token=NATIVE,
        to=PAYER,
        amount=Decimal(amount),
        vs_value=Decimal(amount) * 2000,
        rate=Decimal(2000),
        rate_source=RateSource.PAYMENT,
        status=RefundStatus.PENDING,
        created_at=NOW + n,
    )
    with gw.storage.transaction() as tx:
        tx.insert_refund(refund)
    return refund


def withdrawal(n: int, amount: str = "0.0025", to: str = PAYER) -> Transaction:
    return Transaction(
        type=TxType.WITHDRAW,
        tx_hash=f"0x{n:064x}",
        log_index=n,
        chain_id=CHAIN,
        token=NATIVE,
        from_=WALLET,
        amount=Decimal(amount),
        vs_value=Decimal(1),
        timestamp=NOW + 100 + n,
        owner=OWNER,
        to=to,
    )


def seen_on_chain(gw: Gateway, *records: Transaction) -> None:
    gw.ingest(DepositBatch(CHAIN, [], withdrawals=records))


def refund_events(gw: Gateway, type: str) -> list[Json]:
    """The outbox's events of ``type`` (it keeps every change; the SPEC's poll queues carry
    only status changes, so a refund reaches those who ask for its type)."""
    read = gw.events.outbox_since(0, 1000, OWNER)
    return [e.payload for e in read.events if e.type == type]


def statuses(payload: Json) -> list[str]:
    return [r["status"] for r in payload["refunds"]]


def test_the_withdrawal_that_pays_a_refund_confirms_it_once(gw: Gateway) -> None:
    guid = paid_invoice(gw)
    heard = Heard()
    gw.add_notifier(heard)
    gw.open_queue("q", OWNER)
    first, second = pending(gw, guid, 1), pending(gw, guid, 2)
    seen_on_chain(gw, withdrawal(7, "0.001"), withdrawal(8))  # only the second pays one

    invoice = gw.get_invoice(guid)
    assert [r.status for r in invoice.refunds] == [RefundStatus.CONFIRMED, RefundStatus.PENDING]
    assert invoice.refunds[0] == attrs.evolve(
        first,
        status=RefundStatus.CONFIRMED,
        tx_hash=f"0x{8:064x}",
        log_index=8,
        settled_at=NOW + 108,
    )
    assert gw.invoice_wire(invoice)["refundedAmount"] == "5"
    assert gw.drain_events("q") == []  # no status change: the poll queue carries none
    [event] = refund_events(gw, "invoice.refunded")
    assert statuses(event) == ["confirmed", "pending"] and event["refundedAmount"] == "5"
    assert [statuses(p) for p in heard.changes] == [["confirmed", "pending"]]
    items, total, _o, _l = gw.list_transactions(OWNER, offset=None, limit=None)
    assert total == 3
    by_hash = {t.tx_hash: t for t in items}
    assert by_hash[f"0x{8:064x}"].type is TxType.REFUND
    assert (by_hash[f"0x{8:064x}"].guid, by_hash[f"0x{8:064x}"].vs_value) == (guid, 5)
    assert by_hash[f"0x{7:064x}"].type is TxType.WITHDRAW
    assert [t["type"] for t in heard.transactions] == ["withdraw", "refund"]

    # The watcher reads the range again (a restart): nothing is confirmed twice.
    seen_on_chain(gw, withdrawal(7, "0.001"), withdrawal(8))
    assert len(refund_events(gw, "invoice.refunded")) == 1
    assert gw.get_invoice(guid).refunds[1] == second
    seen_on_chain(gw, withdrawal(9))
    assert statuses(gw.invoice_wire(gw.get_invoice(guid))) == ["confirmed", "confirmed"]
    assert gw.invoice_wire(gw.get_invoice(guid))["refundedAmount"] == "10"


def test_a_cancelled_refund_is_not_confirmed_and_frees_what_it_held(gw: Gateway) -> None:
    guid = paid_invoice(gw)
    gw.open_queue("q", OWNER)
    refund = pending(gw, guid, 1, "0.005")
    cancelled, invoice = gw.cancel_refund(OWNER, refund.id)
    assert (cancelled.status, cancelled.settled_at) == (RefundStatus.CANCELLED, NOW)
    assert [r.status for r in invoice.refunds] == [RefundStatus.CANCELLED]
    assert gw.drain_events("q") == []
    [event] = refund_events(gw, "invoice.refund_cancelled")
    assert statuses(event) == ["cancelled"]
    with pytest.raises(Conflict, match="is cancelled, not pending"):
        gw.cancel_refund(OWNER, refund.id)
    with pytest.raises(NotFound, match="not found: refund nope"):
        gw.cancel_refund(OWNER, "nope")
    with pytest.raises(NotFound, match=f"not found: refund {refund.id}"):
        gw.cancel_refund(OTHER, refund.id)  # the same answer as for none: no existence oracle
    # Sent all the same: recorded as what it is on chain, a withdrawal.
    seen_on_chain(gw, withdrawal(3, "0.005"))
    assert gw.get_invoice(guid).refunds == (cancelled,)
    items, _t, _o, _l = gw.list_transactions(OWNER, offset=None, limit=None)
    assert {t.type for t in items} == {TxType.DEPOSIT, TxType.WITHDRAW}
    assert gw.drain_events("q") == []


def test_a_refund_that_cannot_be_built_records_nothing(gw: Gateway) -> None:
    guid = paid_invoice(gw)
    gw.open_queue("q", OWNER)
    with pytest.raises(RpcError):  # the node is down: 502 over HTTP
        gw.refund_invoice(OWNER, {"guid": guid, "vsAmount": "5"})
    assert gw.get_invoice(guid).refunds == ()
    assert gw.drain_events("q") == []
    with pytest.raises(InvoiceNotFound, match=f"invoice {guid} not found"):
        gw.refund_invoice(OTHER, {"guid": guid})
    with pytest.raises(Forbidden, match="owner does not match"):
        gw.refund_invoice(OWNER, {"guid": guid, "owner": OTHER})


def test_a_confirmed_refund_shows_on_an_invoice_listing(gw: Gateway) -> None:
    guid = paid_invoice(gw)
    pending(gw, guid, 1)
    seen_on_chain(gw, withdrawal(1))
    listed = gw.list_invoices(owner=OWNER)
    assert isinstance(listed, list)
    [invoice] = listed
    assert [r.status for r in invoice.refunds] == [RefundStatus.CONFIRMED]
    page = gw.list_invoices(owner=OWNER, limit=5)
    assert isinstance(page, tuple)
    assert page[0][0].refunds == invoice.refunds
