"""The batch part of ``paycore.storage`` -- what a chain watcher's batch reads and writes at
once -- on memory, SQLite and PostgreSQL alike: each method answers as its one-at-a-time
counterpart would, in the order given, and rolls back with its transaction."""

from __future__ import annotations

from decimal import Decimal

import attrs
import pytest

from paycore.domain.records import NewEvent, Status, WebhookConfig
from paycore.prices.records import LockedQuote
from paycore.storage import Storage, StorageTx
from paycore.testing.storage_records import BIG, NATIVE, OTHER_OWNER, OWNER, USDT, invoice, payment
from paycore.testing.storage_records import transaction as row
from paycore.webhooks.records import NewDelivery


def guid(n: int) -> str:
    return f"00000000-0000-4000-8000-{n:012d}"


def address(n: int) -> str:
    return f"0x{n:040x}"


# -- invoices ---------------------------------------------------------------------------------


def test_invoices_at_addresses_groups_oldest_first_per_address_of_one_chain(
    storage: Storage,
) -> None:
    """Oldest first is creation order, as in ``invoices_at_address``: not ``created_at``
    (a clock that stepped back between two inserts) and not the guid."""
    with storage.transaction() as tx:
        tx.insert_invoice(invoice(guid(2), created_at=300, address=address(7)))
        tx.insert_invoice(invoice(guid(1), created_at=100, address=address(7)))
        tx.insert_invoice(invoice(guid(3), created_at=200, address=address(5)))
        tx.insert_invoice(invoice(guid(4), created_at=50, address=address(5), chain_id=137))
    with storage.transaction() as tx:
        found = tx.invoices_at_addresses(1, [address(7), address(9), address(5)], for_update=True)
        assert {a: [i.guid for i in items] for a, items in found.items()} == {
            address(5): [guid(3)],
            address(7): [guid(2), guid(1)],
        }
        assert found[address(7)][0] == invoice(guid(2), created_at=300, address=address(7))
        assert tx.invoices_at_addresses(1, []) == {}
        assert list(tx.invoices_at_addresses(137, [address(5)])) == [address(5)]


def test_invoices_at_addresses_reads_past_one_statements_worth(storage: Storage) -> None:
    """More addresses than one ``IN`` list holds: every one is found, each list in order."""
    with storage.transaction() as tx:
        for n in range(1, 1201):
            tx.insert_invoice(invoice(guid(n), created_at=n, address=address(n % 600)))
    with storage.transaction() as tx:
        found = tx.invoices_at_addresses(1, [address(n) for n in range(600)], for_update=True)
    assert len(found) == 600
    assert all(len(items) == 2 for items in found.values())
    assert [i.created_at for i in found[address(0)]] == [600, 1200]


def test_update_invoice_states_writes_status_paid_and_payments_only(storage: Storage) -> None:
    with storage.transaction() as tx:
        tx.insert_invoice(invoice(guid(1)))
        tx.insert_invoice(invoice(guid(2)))
        tx.insert_invoice(invoice(guid(3)))
    first = attrs.evolve(
        invoice(guid(1)),
        status=Status.PAID,
        paid_amount=BIG,
        payments=(payment("0x01"), payment("0x02", 7)),
    )
    second = attrs.evolve(invoice(guid(2)), status=Status.EXPIRED, description="not written")
    with storage.transaction() as tx:
        tx.update_invoice_states([first, second])
    with storage.transaction() as tx:
        assert tx.get_invoice(guid(1)) == first
        assert tx.get_invoice(guid(2)) == attrs.evolve(invoice(guid(2)), status=Status.EXPIRED)
        assert tx.get_invoice(guid(3)) == invoice(guid(3))


def test_update_invoice_states_of_an_unknown_invoice_raises_and_writes_nothing(
    storage: Storage,
) -> None:
    with storage.transaction() as tx:
        tx.insert_invoice(invoice(guid(1)))
    paid = attrs.evolve(invoice(guid(1)), status=Status.PAID)
    with pytest.raises(KeyError), storage.transaction() as tx:
        tx.update_invoice_states([paid, invoice(guid(9)), attrs.evolve(paid, guid=guid(8))])
    with storage.transaction() as tx:
        assert tx.get_invoice(guid(1)) == invoice(guid(1))


# -- transactions -----------------------------------------------------------------------------


def test_insert_transactions_answers_as_one_insert_each(storage: Storage) -> None:
    known, flagged = row("0x01"), row("0x02")
    with storage.transaction() as tx:
        tx.insert_transaction(known)
        tx.insert_transaction(flagged)
        tx.mark_reorged(*flagged.key)
    fresh = [row("0x03"), row("0x03", token=NATIVE), row("0x04", chain_id=137)]
    batch = [fresh[0], known, flagged, fresh[0], fresh[1], fresh[2]]
    with storage.transaction() as tx:
        assert tx.insert_transactions(batch) == [True, False, True, False, True, True]
        assert tx.insert_transactions([]) == []
    with storage.transaction() as tx:
        items, total = tx.list_transactions(OWNER)
    assert total == 5 and {i.key for i in items} == {r.key for r in [known, flagged, *fresh]}


def test_insert_transactions_of_only_new_rows_stores_them_all(storage: Storage) -> None:
    batch = [row(f"0x{n:02x}", amount=Decimal(n) / 7) for n in range(1, 40)]
    with storage.transaction() as tx:
        assert tx.insert_transactions(batch) == [True] * len(batch)
        assert tx.insert_transactions(batch[:2]) == [False, False]
    with storage.transaction() as tx:
        items, total = tx.list_transactions(OWNER, limit=100)
    assert total == len(batch) and set(items) == set(batch)


def test_rows_inserted_in_bulk_roll_back_with_their_transaction(storage: Storage) -> None:
    with pytest.raises(RuntimeError), storage.transaction() as tx:
        assert tx.insert_transactions([row("0x01"), row("0x02")]) == [True, True]
        raise RuntimeError("the watcher died")
    with storage.transaction() as tx:
        assert tx.list_transactions(OWNER) == ([], 0)
        assert tx.insert_transactions([row("0x01"), row("0x02")]) == [True, True]


def _counts(tx: StorageTx, owner: str) -> tuple[int, int, int]:
    """(all chains, chain 1, chain 137) as ``count_transactions`` keeps them."""
    return (
        tx.count_transactions(owner),
        tx.count_transactions(owner, chain_id=1),
        tx.count_transactions(owner, chain_id=137),
    )


def _listed(tx: StorageTx, owner: str) -> tuple[int, int, int]:
    """The same three figures by reading the rows GET /transactions shows."""
    rows = tx.transactions_after(owner, limit=10_000)
    return (
        len(rows),
        sum(1 for r in rows if r.chain_id == 1),
        sum(1 for r in rows if r.chain_id == 137),
    )


def test_bulk_inserts_keep_the_row_counts_as_single_inserts_do(storage: Storage) -> None:
    """Every path of ``insert_transactions`` -- all new in one statement, the fallback
    row by row when one is known, a flagged row revived, a row stored already flagged,
    a rollback -- leaves ``count_transactions`` equal to counting the rows, per owner and
    chain, and a transaction sees its own uncommitted additions."""
    first = [row(f"0x{n:02x}", chain_id=1 if n % 3 else 137) for n in range(1, 13)]
    theirs = [row(f"0x{n:02x}", owner=OTHER_OWNER) for n in range(20, 24)]
    with storage.transaction() as tx:
        assert tx.insert_transactions([*first, *theirs]) == [True] * 16
        assert _counts(tx, OWNER) == (12, 8, 4) == _listed(tx, OWNER)  # pending, in-tx
    with storage.transaction() as tx:
        assert _counts(tx, OWNER) == (12, 8, 4) == _listed(tx, OWNER)
        assert _counts(tx, OTHER_OWNER) == (4, 4, 0) == _listed(tx, OTHER_OWNER)
        tx.mark_reorged(*first[0].key)
        tx.mark_reorged(*first[2].key)  # on chain 137
    stored_flagged = attrs.evolve(row("0x30", chain_id=137), reorged=True)
    mixed = [first[0], first[1], row("0x31"), stored_flagged, row("0x32", chain_id=137)]
    with storage.transaction() as tx:
        # first[0] revived, first[1] known: the row-by-row fallback.
        assert tx.insert_transactions(mixed) == [True, False, True, True, True]
        assert _counts(tx, OWNER) == (13, 9, 4) == _listed(tx, OWNER)
    with pytest.raises(RuntimeError), storage.transaction() as tx:
        fresh = [row("0x40"), row("0x41", chain_id=137), row("0x42", owner=OTHER_OWNER)]
        assert tx.insert_transactions(fresh) == [True, True, True]
        assert _counts(tx, OWNER) == (15, 10, 5)
        raise RuntimeError("the watcher died")
    with storage.transaction() as tx:
        assert _counts(tx, OWNER) == (13, 9, 4) == _listed(tx, OWNER)
        assert _counts(tx, OTHER_OWNER) == (4, 4, 0)
        assert tx.list_transactions(OWNER, limit=1)[1] == 13


def test_known_transfers_are_the_stored_rows_not_flagged(storage: Storage) -> None:
    live, flagged, other_chain = row("0x01"), row("0x02"), row("0x01", chain_id=137)
    with storage.transaction() as tx:
        tx.insert_transactions([live, flagged, other_chain])
        tx.mark_reorged(*flagged.key)
    asked = [live.key, flagged.key, other_chain.key, row("0x01", log_index=5).key]
    with storage.transaction() as tx:
        assert tx.known_transfers(asked) == {live.key, other_chain.key}
        assert tx.known_transfers([]) == set()


# -- events and deliveries --------------------------------------------------------------------


def test_add_events_hands_out_increasing_ids_in_the_order_given(storage: Storage) -> None:
    with storage.transaction() as tx:
        tx.open_queue("c", OWNER)
        before = tx.add_event(OWNER, guid(1), {"n": 0}, 10)
        ids = tx.add_events([NewEvent(OWNER, guid(n), {"n": n}, 10) for n in range(1, 6)])
        after = tx.add_events([NewEvent(OWNER, guid(9), {"n": 9}, 11)])
    assert [before, *ids, *after] == sorted({before, *ids, *after})
    with storage.transaction() as tx:
        drained = tx.drain_queue("c", 100)
    assert [e.payload["n"] for e in drained] == [0, 1, 2, 3, 4, 5, 9]
    assert [e.id for e in drained] == [before, *ids, *after]


def test_enqueue_deliveries_queues_only_owners_with_a_url_in_order(storage: Storage) -> None:
    with storage.transaction() as tx:
        tx.put_webhook(WebhookConfig(OWNER, "https://merchant.example.test/h", "whsec_A"))
        tx.put_webhook(WebhookConfig(OTHER_OWNER, "", ""))
    wanted = [
        NewDelivery(n, OTHER_OWNER if n == 2 else OWNER, guid(1), f"msg_{n}", f'{{"n":{n}}}', 5)
        for n in (1, 2, 3, 4)
    ]
    with storage.transaction() as tx:
        assert tx.enqueue_deliveries(wanted) == 3
        assert tx.enqueue_deliveries([]) == 0
    with storage.transaction() as tx:
        items, total = tx.list_deliveries(OWNER)
        claimed = tx.claim_deliveries(5, 1000, "t", 10)
    assert total == 3 and [d.event_id for d in items] == [4, 3, 1]  # newest first
    assert [(c.webhook_id, c.body) for c in claimed] == [("msg_1", '{"n":1}')]  # one per invoice


# -- quotes -----------------------------------------------------------------------------------


def test_get_quotes_of_reads_the_quotes_of_those_invoices(storage: Storage) -> None:
    eth, usdt = f"1:{NATIVE}", f"1:{USDT}"
    quotes = [
        LockedQuote(guid(2), usdt, "usd", Decimal("0.9998"), 100, "coingecko"),
        LockedQuote(guid(1), usdt, "usd", Decimal(1), 100, "static"),
        LockedQuote(guid(1), eth, "usd", Decimal("3000.5"), 90, "chainlink"),
        LockedQuote(guid(3), eth, "usd", Decimal(2), 90, "static"),
    ]
    with storage.transaction() as tx:
        tx.put_quotes(quotes)
    with storage.transaction() as tx:
        found = tx.get_quotes_of([guid(2), guid(1), guid(7)])
        assert tx.get_quotes_of([]) == []
    assert found == [quotes[2], quotes[1], quotes[0]]  # by guid, then token
