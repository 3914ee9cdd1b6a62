"""Deep forks on Tron (the local TronGrid stand-in): a counted deposit whose block is
replaced is taken back, through the watcher code the EVM chains share (``watching``).

The chain needs 2 confirmations; a fork of 4 blocks replaces a block that was already
counted. The stand-in's ``fork`` replaces the last blocks with new ones (new blockIDs) and
can put the dropped transactions back, as a chain that mined them again would.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from tron_env import CHAIN_ID, USD, USDT, Env, drain, make_gateway, open_env, watcher

from paycore.storage import Storage


@pytest.fixture
def env() -> Iterator[Env]:
    with open_env("core", reorg_rewind=1) as opened:
        yield opened


def create(env: Env, session: Any, value: str = "10") -> dict[str, Any]:
    body = {
        "value": value,
        "chainId": CHAIN_ID,
        "description": "order",
        "acceptedTokens": [f"{CHAIN_ID}:{USDT}"],
    }
    created: dict[str, Any] = env.api.post("/invoice", body, session=session).ok(201)
    return created


def state(env: Env, guid: str) -> tuple[str, str, list[str]]:
    got = env.api.get(f"/invoice/{guid}").ok()
    return got["status"], got["paidAmount"], [p["txHash"] for p in got["payments"]]


def poll(env: Env, session: Any) -> list[tuple[str, str]]:
    events = env.api.post("/poll/events", session=session).ok()["events"]
    return [(e["status"], e["paidAmount"]) for e in events]


def listed(env: Env, owner: str, session: Any) -> list[str]:
    answer = env.api.get("/transactions", f"owner={owner}", session=session).ok()
    items = answer["items"] if isinstance(answer, dict) else answer
    return [t["txHash"] for t in items]


def test_a_forked_away_deposit_is_taken_back(env: Env) -> None:
    _key, owner, session = env.merchant()
    invoice = create(env, session)
    w = watcher(env.gateway)
    drain(w)
    paid = env.pay_usdt(invoice["address"], 10 * USD)
    env.chain.mine(4)
    assert sum(r.deposits for r in drain(w)) == 1
    assert state(env, invoice["guid"]) == ("paid", "10", [paid])
    assert poll(env, session) == [("paid", "10")]
    assert listed(env, owner, session) == [paid]

    dropped = env.chain.fork(5)  # deeper than the 2 confirmations
    env.chain.mine(1)
    assert [tx.tx_id for tx in dropped] == [paid]
    reports = drain(w)
    assert sum(r.reorged for r in reports) == 1
    assert state(env, invoice["guid"]) == ("init", "0", [])
    assert poll(env, session) == []  # invoice.payment_reversed: for those who ask for it
    assert listed(env, owner, session) == []
    assert sum(r.reorged for r in drain(w)) == 0


def test_a_deposit_mined_again_in_the_new_chain_counts_once(env: Env) -> None:
    _key, owner, session = env.merchant()
    invoice = create(env, session, "4")
    w = watcher(env.gateway)
    drain(w)
    paid = env.pay_usdt(invoice["address"], 4 * USD)
    env.chain.mine(4)
    drain(w)
    assert poll(env, session) == [("paid", "4")]

    dropped = env.chain.fork(5)
    env.chain.fork(1, dropped)  # the same transaction, in a later block of the new chain
    env.chain.mine(3)
    reports = drain(w)
    assert sum(r.reorged for r in reports) == 1
    assert sum(r.deposits for r in reports) == 1
    assert state(env, invoice["guid"]) == ("paid", "4", [paid])
    # The reversal is not polled; the deposit counted again is: a second invoice.paid,
    # which only a reorg deeper than the confirmations makes (docs/decisions.md).
    assert poll(env, session) == [("paid", "4")]
    assert listed(env, owner, session) == [paid]
    assert sum(r.deposits + r.reorged for r in drain(w)) == 0


def test_deposits_above_the_cursor_are_checked_too(
    env: Env, dies_in_batch: Callable[[Storage, int], Storage]
) -> None:
    """A watcher that committed the first batch of a range and died in the second, before
    the range's last batch could move the cursor: the first batch's deposit lies above the
    cursor, where a fork that does not reach the cursor's own block would replace it
    unnoticed by the cursor check."""
    _key, _owner, session = env.merchant()
    invoice = create(env, session)
    w = watcher(env.gateway)
    drain(w)
    env.pay_usdt(invoice["address"], 10 * USD)
    env.pay_usdt(invoice["address"], 1 * USD)
    env.chain.mine(4)
    one_per_batch = make_gateway(
        env.url,
        env.chain,
        storage=dies_in_batch(env.gateway.storage, 2),
        ingest_batch=1,
        start_block=env.gateway.settings.chains[CHAIN_ID].start_block,
    )
    dying = watcher(one_per_batch, holder=w.holder)
    with pytest.raises(RuntimeError, match="killed in batch 2"):
        dying.step()
    assert state(env, invoice["guid"])[:2] == ("paid", "10")
    env.chain.fork(5)  # the successor: the same holder, with its cursor where it was
    env.chain.mine(1)
    reports = drain(w)
    assert sum(r.reorged for r in reports) == 1
    assert all(r.rewound_to is None for r in reports)  # no cursor block was found replaced
    assert state(env, invoice["guid"]) == ("init", "0", [])
