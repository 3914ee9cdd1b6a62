""" "Payment detected, confirming (n of m)" on Tron (the local TronGrid stand-in): a TRC20 or
TRX transfer in a block not yet ``confirmations`` (2) deep shows in the public record's
``detected`` list, never in ``paidAmount``; it leaves the list for ``payments`` once deep
enough, and a fork that drops its block drops it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from tron_env import CHAIN_ID, USD, USDT, Env, drain, open_env, watcher

from paycore.domain.tokens import NATIVE

BLOCKS = "/wallet/getblockbylimitnext"
INFOS = "/wallet/gettransactioninfobyblocknum"


@pytest.fixture
def env() -> Iterator[Env]:
    with open_env("core", reorg_rewind=1) as opened:
        yield opened


def create(env: Env, session: Any) -> dict[str, Any]:
    body = {
        "value": "10",
        "chainId": CHAIN_ID,
        "description": "order",
        "acceptedTokens": [f"{CHAIN_ID}:{USDT}", f"{CHAIN_ID}:{NATIVE}"],
    }
    created: dict[str, Any] = env.api.post("/invoice", body, session=session).ok(201)
    return created


def public(env: Env, guid: str) -> dict[str, Any]:
    got: dict[str, Any] = env.api.get(f"/invoice/{guid}").ok()
    return got


def poll(env: Env, session: Any) -> list[str]:
    return [e["status"] for e in env.api.post("/poll/events", session=session).ok()["events"]]


def test_a_trc20_transfer_is_detected_then_confirms(env: Env) -> None:
    _key, _owner, session = env.merchant()
    invoice = create(env, session)
    w = watcher(env.gateway)
    drain(w)
    paid = env.pay_usdt(invoice["address"], 10 * USD)
    [block] = env.chain.mine(1)
    assert drain(w)[-1].detected == 1
    record = public(env, invoice["guid"])
    [shown] = record["detected"]
    assert shown == {
        "txHash": paid,
        "logIndex": shown["logIndex"],
        "chainId": str(CHAIN_ID),
        "token": USDT,
        "from": shown["from"],
        "amount": "10",
        "blockNumber": block,
        "confirmations": 1,
        "required": 2,
    }
    assert isinstance(shown["logIndex"], int) and shown["from"].startswith("T")
    assert (record["status"], record["paidAmount"], record["payments"]) == ("init", "0", [])
    assert poll(env, session) == []

    env.chain.mine(1)
    drain(w)
    record = public(env, invoice["guid"])
    assert [d["confirmations"] for d in record["detected"]] == [2]
    assert record["paidAmount"] == "0"

    env.chain.mine(1)
    assert sum(r.deposits for r in drain(w)) == 1
    record = public(env, invoice["guid"])
    assert (record["status"], record["paidAmount"], record["detected"]) == ("paid", "10", [])
    assert [p["txHash"] for p in record["payments"]] == [paid]
    assert poll(env, session) == ["paid"]


def test_a_fork_drops_a_detected_trx_transfer(env: Env) -> None:
    _key, _owner, session = env.merchant()
    invoice = create(env, session)
    w = watcher(env.gateway)
    drain(w)
    sent = env.pay_trx(invoice["address"], 4_000_000)
    env.chain.mine(1)
    drain(w)
    assert [
        (d["txHash"], d["token"], d["amount"], d["logIndex"])
        for d in public(env, invoice["guid"])["detected"]
    ] == [(sent, NATIVE, "4", -1)]

    assert [tx.tx_id for tx in env.chain.fork(1)] == [sent]
    # The kept block no longer ends in the node's head: the pass drops what it kept, the
    # next reads the unconfirmed blocks afresh.
    assert drain(w)[-1].detected is None
    assert public(env, invoice["guid"])["detected"] != []
    assert drain(w)[-1].detected == 0
    record = public(env, invoice["guid"])
    assert (record["status"], record["paidAmount"], record["detected"]) == ("init", "0", [])
    env.chain.mine(3)
    assert sum(r.deposits for r in drain(w)) == 0
    assert public(env, invoice["guid"])["status"] == "init"
    assert poll(env, session) == []


def test_each_unconfirmed_block_is_read_once_while_it_stays(env: Env) -> None:
    """Passes with no new block ask for no block; a new block costs its own read only."""
    _key, _owner, session = env.merchant()
    invoice = create(env, session)
    w = watcher(env.gateway)
    drain(w)
    env.pay_usdt(invoice["address"], 10 * USD)
    env.chain.mine(1)
    drain(w)
    mark = len(env.chain.answered)
    for _ in range(3):
        assert w.step().detected == 1
    paths = [path for path, *_rest in env.chain.answered[mark:]]
    assert BLOCKS not in paths and INFOS not in paths

    [new] = env.chain.mine(1)
    mark = len(env.chain.answered)
    assert w.step().detected == 1
    asked = [body for path, body, code, _size in env.chain.answered[mark:] if path == BLOCKS]
    assert [(b["startNum"], b["endNum"]) for b in asked] == [(new, new + 1)]
    assert [d["confirmations"] for d in public(env, invoice["guid"])["detected"]] == [2]
