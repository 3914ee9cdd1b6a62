"""Compare-and-set duties raced with real threads, each on one store: two transactions that
want the same delivery, the same lapsed chain lease, the same idempotency key. Every worker
waits on a barrier before it opens its transaction, so the transactions really overlap
(where the store lets them: memory and SQLite run them one at a time, which also passes)."""

from __future__ import annotations

from collections import Counter

from paycore.domain.records import WebhookConfig
from paycore.storage import Storage
from paycore.storage.idempotency import IdempotentAnswer
from paycore.testing.storage_contract.concurrency import race
from paycore.testing.storage_records import OWNER

NOW = 1_700_000_000_000  # ms
LEASE = 30_000


def test_two_claimants_of_one_delivery_one_wins(storage: Storage) -> None:
    with storage.transaction() as tx:
        tx.put_webhook(WebhookConfig(OWNER, "https://merchant.example.test/h", "whsec_AAAA"))
        delivery = tx.enqueue_delivery(1, OWNER, "g1", "msg_1", "{}", 0)
    assert delivery is not None

    def claim(i: int) -> list[int]:
        with storage.transaction() as tx:
            return [c.id for c in tx.claim_deliveries(5, LEASE, f"w{i}", 10)]

    claims = race(2, claim)
    assert sorted(len(c) for c in claims) == [0, 1]
    assert [d for c in claims for d in c] == [delivery]
    assert race(2, claim) == [[], []]  # under the winner's live lease: nobody else


def test_a_lapsed_lease_is_taken_over_by_one_and_fences_its_old_holder(
    storage: Storage,
) -> None:
    with storage.transaction() as tx:
        assert tx.claim_chain(1, "old", NOW, LEASE) is not None
        assert tx.advance_chain(1, "old", 10, "0x0a", NOW, LEASE)
    lapsed = NOW + LEASE  # lease_until <= now: lapsed

    def take(i: int) -> bool:
        with storage.transaction() as tx:
            return tx.claim_chain(1, f"new{i}", lapsed, LEASE) is not None

    won = race(8, take)
    assert won.count(True) == 1
    winner = f"new{won.index(True)}"
    with storage.transaction() as tx:
        # The old holder wakes up: neither its cursor move nor its renewal goes through.
        assert not tx.advance_chain(1, "old", 11, "0x0b", lapsed + 1, LEASE)
        assert tx.claim_chain(1, "old", lapsed + 1, LEASE) is None
        tx.release_chain(1, "old")  # not its lease any more: nothing happens
        cursor = tx.get_chain_cursor(1)
    assert cursor is not None
    assert (cursor.block_number, cursor.block_hash, cursor.holder) == (10, "0x0a", winner)
    assert cursor.lease_until == lapsed + LEASE


def test_an_idempotency_key_claimed_by_two_transactions_is_claimed_once(
    storage: Storage,
) -> None:
    """Both transactions claim, and the one that claimed stores its answer before it commits:
    the other sees that answer (it waited, or came second), never a claim of its own."""

    def claim(i: int) -> IdempotentAnswer | None:
        with storage.transaction() as tx:
            found = tx.claim_idempotency_key(
                OWNER, "create_invoice", "k", f"fp{i}", now=1000 + i, expires_before=0
            )
            if found is None:
                tx.store_idempotent_answer(
                    OWNER,
                    "create_invoice",
                    "k",
                    status=201,
                    content_type="application/json",
                    body=f'{{"by":{i}}}'.encode(),
                )
            return found

    answers = race(2, claim)
    assert answers.count(None) == 1
    winner = answers.index(None)
    stored = IdempotentAnswer(
        f"fp{winner}", 1000 + winner, 201, "application/json", f'{{"by":{winner}}}'.encode()
    )
    assert [a for a in answers if a is not None] == [stored]
    assert race(2, claim) == [stored, stored]  # stored: every later claim is answered


def test_racing_notices_and_challenges_each_have_one_taker(storage: Storage) -> None:
    """The once-only tables under threads: a notice key and a remembered signature."""

    def once(i: int) -> tuple[bool, bool]:
        with storage.transaction() as tx:
            return tx.claim_notice("deposit:1:0xaa:0", 100), tx.remember_signature(
                "digest", 2_000_000_000, now=100
            )

    outcomes = race(12, once)
    assert Counter(n for n, _ in outcomes) == {True: 1, False: 11}
    assert Counter(s for _, s in outcomes) == {True: 1, False: 11}
