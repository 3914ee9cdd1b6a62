"""The storage contract of the merchant tools, on every backend: the accounting export's
keyset reads, the rate kept with each transfer, and payment links -- their use counted once
under concurrent opens."""

from __future__ import annotations

import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from typing import Any

import attrs
import pytest

from paycore.domain.records import TxType, Valuation
from paycore.links.records import LinkUse, PaymentLink
from paycore.storage import Storage
from paycore.testing.storage_records import (
    BIG,
    OTHER_OWNER,
    OWNER,
    TINY,
    USDT,
    invoice,
    transaction,
)


def guid(n: int) -> str:
    return f"00000000-0000-4000-8000-{n:012d}"


# -- the rate kept with each transfer ---------------------------------------------------------


def test_a_transfer_keeps_its_valuation_exactly(storage: Storage) -> None:
    rate = Decimal("2000.123456789012345678")
    valued = attrs.evolve(
        transaction("0x01"), valuation=Valuation(rate, "locked:coingecko", 1_699_999_990, "eur")
    )
    bare = transaction("0x02")
    with storage.transaction() as tx:
        assert tx.insert_transactions([valued, bare]) == [True, True]
    with storage.transaction() as tx:
        items, _ = tx.list_transactions(OWNER)
    by_hash = {t.tx_hash: t for t in items}
    assert by_hash["0x01"] == valued and by_hash["0x01"].valuation is not None
    assert by_hash["0x01"].valuation.rate == rate
    assert by_hash["0x02"].valuation is None


# -- the accounting export's keyset reads -------------------------------------------------------


def test_export_invoices_reads_a_range_in_keyset_batches(storage: Storage) -> None:
    """Creation time then guid; [start, end); one owner; batches resume strictly after."""
    times = [100, 100, 100, 200, 300, 400]
    with storage.transaction() as tx:
        for n, at in enumerate(times, 1):
            tx.insert_invoice(invoice(guid(n), created_at=at))
        tx.insert_invoice(invoice(guid(99), created_at=200, owner=OTHER_OWNER))
    with storage.transaction() as tx:
        first = tx.export_invoices(OWNER, start=100, end=400, after=None, limit=2)
        second = tx.export_invoices(
            OWNER, start=100, end=400, after=(first[-1].created_at, first[-1].guid), limit=2
        )
        third = tx.export_invoices(
            OWNER, start=100, end=400, after=(second[-1].created_at, second[-1].guid), limit=2
        )
        open_ended = tx.export_invoices(OWNER, start=250, end=None, after=None, limit=10)
        empty = tx.export_invoices(OWNER, start=500, end=None, after=None, limit=10)
    assert [i.guid for i in first] == [guid(1), guid(2)]
    assert [i.guid for i in second] == [guid(3), guid(4)]
    assert [i.guid for i in third] == [guid(5)]
    assert [i.guid for i in open_ended] == [guid(5), guid(6)]
    assert empty == []
    assert first[0] == invoice(guid(1), created_at=100)  # whole records, data included


def test_export_transactions_reads_one_kind_in_keyset_batches(storage: Storage) -> None:
    """Block time, then chain, hash, log index, token; reorged rows and other owners' are
    left out, and rows that tie on the block time are neither repeated nor skipped."""
    rows = [
        transaction("0xb", timestamp=10, log_index=1),
        transaction("0xb", timestamp=10, log_index=0),
        transaction("0xa", timestamp=10, log_index=5),
        transaction("0xa", timestamp=10, log_index=5, chain_id=137),
        transaction("0xc", timestamp=20),
        transaction("0xd", timestamp=30),
        transaction("0xe", timestamp=10, type=TxType.WITHDRAW),
        transaction("0xf", timestamp=10, owner=OTHER_OWNER),
        transaction("0x9", timestamp=15),
    ]
    with storage.transaction() as tx:
        tx.insert_transactions(rows)
        assert tx.mark_reorged(1, "0x9", 0, USDT) is not None
    seen: list[tuple[int, str, int]] = []
    after = None
    batches = 0
    while True:
        with storage.transaction() as tx:
            batch = tx.export_transactions(
                OWNER, TxType.DEPOSIT, start=10, end=30, after=after, limit=2
            )
        batches += 1
        seen += [(t.chain_id, t.tx_hash, t.log_index) for t in batch]
        if len(batch) < 2:
            break
        last = batch[-1]
        after = (last.timestamp, last.chain_id, last.tx_hash, last.log_index, last.token)
    assert seen == [(1, "0xa", 5), (1, "0xb", 0), (1, "0xb", 1), (137, "0xa", 5), (1, "0xc", 0)]
    assert batches == 3
    with storage.transaction() as tx:
        [withdrawal] = tx.export_transactions(
            OWNER, TxType.WITHDRAW, start=0, end=None, after=None, limit=10
        )
    assert withdrawal.tx_hash == "0xe" and withdrawal.to is not None


# -- payment links ---------------------------------------------------------------------------------


def link(
    link_id: str = "lnk1",
    *,
    owner: str = OWNER,
    created_at: int = 1_000,
    max_uses: int | None = None,
    expires_at: int | None = None,
    amount: Decimal | None = BIG,
) -> PaymentLink:
    return PaymentLink(
        id=link_id,
        owner=owner,
        created_at=created_at,
        chain_id=1,
        description="a mug, ünïcode",
        accepted_tokens=(f"1:{USDT}",),
        token=f"1:{USDT}",
        vs_currency="eur",
        amount=amount,
        min_amount=None if amount is not None else TINY,
        max_amount=None if amount is not None else BIG,
        deadline_secs=3600,
        data={"sku": "mug", "nested": [1, None]},
        expires_at=expires_at,
        max_uses=max_uses,
    )


def use(storage: Storage, link_id: str, now: int, rate_limit: int = 100, window: int = 60) -> Any:
    with storage.transaction() as tx:
        return tx.use_payment_link(link_id, now, rate_limit=rate_limit, rate_window=window)


def test_a_link_round_trips_and_its_id_is_unique(storage: Storage) -> None:
    chosen = link("lnk2", amount=None)
    with storage.transaction() as tx:
        tx.insert_payment_link(link())
        tx.insert_payment_link(chosen)
    with storage.transaction() as tx:
        assert tx.get_payment_link("lnk1") == link()
        assert tx.get_payment_link("lnk2") == chosen
        assert tx.get_payment_link("nope") is None
    with pytest.raises(ValueError), storage.transaction() as tx:
        tx.insert_payment_link(attrs.evolve(link(), owner=OTHER_OWNER))
    with storage.transaction() as tx:
        stored = tx.get_payment_link("lnk1")
        assert stored is not None and stored.owner == OWNER


def test_links_list_newest_first_per_owner_and_page(storage: Storage) -> None:
    with storage.transaction() as tx:
        for n, at in enumerate([10, 30, 20, 30], 1):
            tx.insert_payment_link(link(f"l{n}", created_at=at))
        tx.insert_payment_link(link("theirs", owner=OTHER_OWNER))
    with storage.transaction() as tx:
        everything, total = tx.list_payment_links(OWNER)
        page, _ = tx.list_payment_links(OWNER, offset=1, limit=2)
    assert total == 4 and [x.id for x in everything] == ["l4", "l2", "l3", "l1"]
    assert [x.id for x in page] == ["l2", "l3"]


def test_disabling_is_the_owners_once_and_for_good(storage: Storage) -> None:
    with storage.transaction() as tx:
        tx.insert_payment_link(link())
    with storage.transaction() as tx:
        assert tx.disable_payment_link("lnk1", OTHER_OWNER, 50) is None
        assert tx.disable_payment_link("nope", OWNER, 50) is None
        first = tx.disable_payment_link("lnk1", OWNER, 50)
        again = tx.disable_payment_link("lnk1", OWNER, 90)
    assert first is not None and again is not None
    assert first.disabled_at == again.disabled_at == 50
    outcome, found = use(storage, "lnk1", 100)
    assert outcome is LinkUse.DISABLED and found is not None and found.uses == 0


def test_a_use_is_counted_only_while_the_link_may_be_used(storage: Storage) -> None:
    with storage.transaction() as tx:
        tx.insert_payment_link(link("capped", max_uses=2))
        tx.insert_payment_link(link("dated", expires_at=200))
    outcomes = [use(storage, "capped", 100)[0] for _ in range(3)]
    assert outcomes == [LinkUse.OPENED, LinkUse.OPENED, LinkUse.USED_UP]
    with storage.transaction() as tx:
        capped = tx.get_payment_link("capped")
    assert capped is not None and capped.uses == 2
    assert use(storage, "dated", 199)[0] is LinkUse.OPENED
    outcome, dated = use(storage, "dated", 200)
    assert outcome is LinkUse.EXPIRED and dated is not None and dated.uses == 1
    assert use(storage, "nope", 100) == (LinkUse.UNKNOWN, None)


def test_the_rate_window_bounds_uses_and_then_starts_again(storage: Storage) -> None:
    """Two uses per 60 s window, which starts at the first use after the last one ended."""
    with storage.transaction() as tx:
        tx.insert_payment_link(link())
    at = [1000, 1010, 1059, 1060, 1061, 1100, 1120]
    got = [use(storage, "lnk1", now, rate_limit=2, window=60)[0] for now in at]
    opened, busy = LinkUse.OPENED, LinkUse.BUSY
    assert got == [opened, opened, busy, opened, opened, busy, opened]
    with storage.transaction() as tx:
        stored = tx.get_payment_link("lnk1")
    assert stored is not None and stored.uses == 5


def test_a_use_rolls_back_with_its_transaction(storage: Storage) -> None:
    """The invoice a use makes is written in the same transaction: if that fails, the use,
    its rate-window slot and the invoice all go."""
    with storage.transaction() as tx:
        tx.insert_payment_link(link(max_uses=1))

    class Boom(Exception):
        pass

    with pytest.raises(Boom), storage.transaction() as tx:
        assert tx.use_payment_link("lnk1", 10, rate_limit=1, rate_window=60)[0] is LinkUse.OPENED
        tx.insert_invoice(invoice(guid(1)))
        raise Boom
    with storage.transaction() as tx:
        assert tx.get_invoice(guid(1)) is None
        stored = tx.get_payment_link("lnk1")
    assert stored is not None and stored.uses == 0
    assert use(storage, "lnk1", 11, rate_limit=1)[0] is LinkUse.OPENED


def test_concurrent_uses_never_pass_the_limit(storage: Storage) -> None:
    """Twenty-four openers released together on a link that may make five invoices, each
    use and its invoice in one transaction: exactly five invoices exist afterwards."""
    with storage.transaction() as tx:
        tx.insert_payment_link(link(max_uses=5))
    barrier = threading.Barrier(24)

    def open_link(n: int) -> LinkUse:
        barrier.wait(timeout=30)
        with storage.transaction() as tx:
            outcome, _ = tx.use_payment_link("lnk1", 10, rate_limit=1000, rate_window=60)
            if outcome is LinkUse.OPENED:
                tx.insert_invoice(invoice(guid(n + 1)))
        return outcome

    with ThreadPoolExecutor(24) as pool:
        outcomes = Counter(pool.map(open_link, range(24)))
    assert outcomes == {LinkUse.OPENED: 5, LinkUse.USED_UP: 19}
    with storage.transaction() as tx:
        _, made = tx.list_invoices(owner=OWNER)
        stored = tx.get_payment_link("lnk1")
    assert made == 5 and stored is not None and stored.uses == 5


# -- the export's memory does not grow with the range -------------------------------------------
