"""The Tron watcher against a node with mainnet's sizes and a provider's limits.

The stand-in fills blocks of 300 transactions (TRC20 transfers between strangers with their
logs, and TRX sends: some 375 KB of JSON a block, as on mainnet) and can play TronGrid's
limits: a per-second rate answered with 429 and a penalty, a response size cap, slow big
answers, and a node that keeps no transaction history. Each test counts what the watcher
asked for, over real HTTP, and checks the deposit hidden among the strangers' transfers is
counted once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

import pytest
from tron_env import API_KEY, CHAIN_ID, USD, USDT, Env, drain, open_env, watcher

from paycore.chains.tron import health
from paycore.chains.tron.reader import NO_HISTORY, OK
from paycore.chains.tron.watcher import TronWatcher

pytestmark = pytest.mark.slow  # mainnet-sized blocks over HTTP, and real rate limits

INFOS = "/wallet/gettransactioninfobyblocknum"
BLOCKS = "/wallet/getblockbylimitnext"


@pytest.fixture
def env() -> Iterator[Env]:
    # The scan's own requests are counted here: detection, which also reads the blocks
    # above the safe head, is off (tests/chains/tron/test_tron_detected.py counts its reads).
    with open_env("core", detect_unconfirmed=False) as opened:
        yield opened


def invoice_for(env: Env) -> dict[str, Any]:
    _owner, _owner_t, session = env.merchant()
    body = {
        "value": "10",
        "chainId": CHAIN_ID,
        "description": "order",
        "acceptedTokens": [f"{CHAIN_ID}:{USDT}"],
    }
    created: dict[str, Any] = env.api.post("/invoice", body, session=session).ok(201)
    return created


def status_of(env: Env, invoice: dict[str, Any]) -> tuple[str, str]:
    found = env.api.get(f"/invoice/{invoice['guid']}").ok()
    return found["status"], found["paidAmount"]


def paid_among_strangers(env: Env, blocks: int, txs: int) -> tuple[dict[str, Any], list[int]]:
    """An invoice paid in full in the first of ``blocks`` blocks of ``txs`` transactions,
    buried under the chain's 2 confirmations."""
    invoice = invoice_for(env)
    env.pay_usdt(invoice["address"], 10 * USD)
    numbers = env.chain.fill(blocks, txs)
    env.chain.mine(2)
    return invoice, numbers


def answers_since(env: Env, mark: int) -> list[tuple[str, Any, int, int]]:
    return list(env.chain.answered[mark:])


def block_ranges(answers: list[tuple[str, Any, int, int]], status: int = 200) -> list[range]:
    return [
        range(body["startNum"], body["endNum"])
        for path, body, code, _size in answers
        if path == BLOCKS and code == status
    ]


def assert_read_once(
    answers: list[tuple[str, Any, int, int]], numbers: list[int], busy: list[int] | None = None
) -> None:
    """Every block was fetched by exactly one successful request, and the infos of each
    block with contract calls (``busy``, default all) by exactly one: nothing that
    succeeded was asked for again."""
    fetched = sorted(n for r in block_ranges(answers) for n in r)
    assert fetched == numbers
    infos = sorted(b["num"] for p, b, code, _ in answers if p == INFOS and code == 200)
    assert infos == (numbers if busy is None else busy)


def test_requests_per_block_are_bounded_on_mainnet_sized_blocks(env: Env) -> None:
    w = watcher(env.gateway)
    drain(w)
    invoice, numbers = paid_among_strangers(env, 30, 300)
    mark = len(env.chain.answered)
    reports = drain(w)
    answers = answers_since(env, mark)
    assert status_of(env, invoice) == ("paid", "10")
    assert sum(r.deposits for r in reports) == 1
    assert_read_once(answers, numbers)
    # One infos request a block, a block request per ~10 blocks (375 KB each against a
    # 4 MB target), a head per pass and the token's decimals and symbol once.
    assert len(answers) <= len(numbers) * 1.15 + 4 * len(reports)
    assert (
        max(size for *_rest, size in answers)
        < 2 * env.gateway.settings.chains[CHAIN_ID].response_bytes
    )
    assert max(len(r) for r in block_ranges(answers)) <= 11
    assert w.status.state == OK


def test_a_response_size_cap_shrinks_the_window_and_it_grows_back(env: Env) -> None:
    w = watcher(env.gateway)
    drain(w)
    env.chain.max_response_bytes = 1_000_000  # two mainnet blocks an answer, no more
    invoice = invoice_for(env)
    env.pay_usdt(invoice["address"], 10 * USD)
    busy = env.chain.fill(12, 300)
    quiet = env.chain.mine(40)  # then quiet blocks: empty ones are a few hundred bytes
    env.chain.mine(2)
    mark = len(env.chain.answered)
    drain(w)
    answers = answers_since(env, mark)
    assert status_of(env, invoice) == ("paid", "10")
    refused = block_ranges(answers, 413)
    assert 1 <= len(refused) <= 6  # the first requests were over the cap, and a few more
    assert_read_once(answers, busy + quiet, busy)  # what came was never asked for again
    quiet_ranges = [r for r in block_ranges(answers) if r.start > busy[-1]]
    assert max(len(r) for r in quiet_ranges) >= 16  # quiet blocks: back to many at once


def test_timeouts_shrink_the_window(env: Env) -> None:
    w = watcher(env.gateway)
    w.chain.node.timeout = 1.0
    drain(w)
    env.chain.seconds_per_block = 0.15  # ten blocks take 1.5 s: over the timeout
    invoice, numbers = paid_among_strangers(env, 12, 30)
    mark = len(env.chain.answered)
    drain(w)
    answers = answers_since(env, mark)
    asked = [range(b["startNum"], b["endNum"]) for p, b, *_ in answers if p == BLOCKS]
    assert len(asked[0]) == 10  # timed out, and halved
    assert len(asked[1]) == 5
    timed_out = [r for r in asked if len(r) * env.chain.seconds_per_block > 1.0]
    assert len(timed_out) <= 2  # it does not climb straight back to what timed out
    assert status_of(env, invoice) == ("paid", "10")
    infos = sorted(b["num"] for p, b, code, _ in answers if p == INFOS and code == 200)
    assert infos == numbers


def test_a_client_side_rate_limit_keeps_under_the_providers() -> None:
    with open_env("core", rate_limit=8, detect_unconfirmed=False) as limited:
        w = watcher(limited.gateway)
        drain(w)
        limited.chain.rate_limit = 10
        invoice, numbers = paid_among_strangers(limited, 20, 20)
        mark = len(limited.chain.answered)
        started = time.monotonic()
        drain(w)
        took = time.monotonic() - started
        answers = answers_since(limited, mark)
        assert status_of(limited, invoice) == ("paid", "10")
        assert not [a for a in answers if a[2] == 429]
        assert took >= (len(answers) - 1) / 8 * 0.9
        assert_read_once(answers, numbers)
        assert all(h.get("TRON-PRO-API-KEY") == API_KEY for _p, h, _b in limited.chain.requests)


def test_without_a_client_limit_the_providers_429_is_waited_out(env: Env) -> None:
    w = watcher(env.gateway)
    drain(w)
    env.chain.rate_limit = 10
    env.chain.penalty = 1.0
    invoice, numbers = paid_among_strangers(env, 25, 20)
    mark = len(env.chain.answered)
    reports = drain(w)
    answers = answers_since(env, mark)
    assert [a for a in answers if a[2] == 429]  # it ran into the limit ...
    assert status_of(env, invoice) == ("paid", "10")  # ... and still counted it, once
    assert sum(r.deposits for r in reports) == 1
    assert_read_once(answers, numbers)
    limiter = w.chain.node.limiter
    assert limiter.refusals >= 1 and limiter.rate is not None and limiter.rate <= 10


def test_a_node_without_history_is_said_once_and_shown(
    env: Env, caplog: pytest.LogCaptureFixture
) -> None:
    w = watcher(env.gateway)
    drain(w)
    w.reader.backoff = 0.01
    w.reader.no_history_retry = 0.0  # ask again at every pass, to see it said only once
    env.chain.history = False
    invoice, _numbers = paid_among_strangers(env, 3, 10)
    chain = w.chain
    with caplog.at_level(logging.INFO, logger="paycore.watcher"):
        reports = [w.step() for _ in range(4)]
    assert all("no transaction history" in (r.error or "") for r in reports)
    assert not any(r.caught_up for r in reports)
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1
    assert "transHistory" in errors[0].getMessage()
    assert w.status.state == NO_HISTORY
    assert health.watch_status(chain) == w.status
    checked = health.check_history(chain)
    assert not checked.ok and "no transaction history" in checked.detail
    # Between tries the watcher leaves the node alone.
    w.reader.no_history_retry = 60.0
    mark = len(env.chain.answered)
    w.step()
    assert not [a for a in answers_since(env, mark) if a[0] == INFOS]
    # A node with history again: the deposit is counted, and that is said too.
    env.chain.history = True
    w.reader.no_history_retry = 0.0
    with caplog.at_level(logging.INFO, logger="paycore.watcher"):
        drain(w)
    assert status_of(env, invoice) == ("paid", "10")
    assert w.status.state == OK
    assert health.check_history(chain).ok
    assert any("history again" in r.getMessage() for r in caplog.records)


def test_a_request_that_keeps_failing_keeps_what_was_read(env: Env) -> None:
    w: TronWatcher = watcher(env.gateway)
    drain(w)
    w.reader.backoff = 0.01
    invoice, numbers = paid_among_strangers(env, 8, 20)
    broken = numbers[5]
    real_answer = env.chain.answer

    def failing(path: str, body: dict[str, Any]) -> Any:
        if path == INFOS and body.get("num") == broken:
            return None  # a 404 from the node, every time
        return real_answer(path, body)

    env.chain.answer = failing  # type: ignore[method-assign]
    mark = len(env.chain.answered)
    report = w.step()
    assert report.error and f"block {broken}" in report.error and not report.caught_up
    assert report.scanned_to == broken - 1  # the blocks before it are attributed
    assert status_of(env, invoice) == ("paid", "10")
    cursor = w._claim()
    assert cursor is not None and cursor.block_number == broken - 1
    env.chain.answer = real_answer  # type: ignore[method-assign]
    drain(w)
    answers = answers_since(env, mark)
    assert_read_once(answers, numbers)  # blocks after the broken one were not fetched again
    failed = [b["num"] for p, b, code, _ in answers if p == INFOS and code != 200]
    assert failed == [broken] * w.reader.attempts


def test_the_lease_is_renewed_while_a_long_range_is_read() -> None:
    """A range that takes longer than the lease (a catch-up under a rate limit) is not
    taken over by another watcher halfway, and is attributed once."""
    import threading

    with open_env("core", watcher_lease=1.0) as env:
        w = watcher(env.gateway)
        drain(w)
        invoice, numbers = paid_among_strangers(env, 30, 10)
        env.chain.seconds_per_block = 0.05
        env.chain.rate_limit = 12  # with the client's own pace: well over a second
        w.chain.node.limiter.rate = w.chain.node.limiter.ceiling = 10.0
        rival = watcher(env.gateway, holder="rival")
        taken: list[bool] = []
        thread = threading.Thread(target=lambda: taken.append(bool(w.step().deposits)))
        started = time.monotonic()
        thread.start()
        while thread.is_alive():
            thread.join(0.2)
            if time.monotonic() - started > 1.5 and thread.is_alive():
                assert rival._claim() is None  # still ours, renewed mid-range
        assert time.monotonic() - started > 2.0  # the range did outlast the lease
        assert taken == [True]
        assert status_of(env, invoice) == ("paid", "10")
        del numbers


def test_a_spent_daily_quota_is_said_once_and_helpers_do_not_hang(
    env: Env, caplog: pytest.LogCaptureFixture
) -> None:
    w = watcher(env.gateway)
    drain(w)
    invoice, _numbers = paid_among_strangers(env, 2, 5)
    env.chain.http_status = 403
    env.chain.http_body = b'{"Error": "Exceed the user daily usage (100000), please upgrade"}'
    with caplog.at_level(logging.WARNING, logger="paycore.watcher"):
        report = w.step()
    assert report.error and not report.caught_up
    assert w.status.state == "quota-spent"
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and "daily usage" in errors[0].getMessage()
    assert w.chain.node.limiter.paused_for() > 50  # a minute between tries
    # A merchant's call does not wait out the pause: a 502 at once, nothing sent.
    sent = len(env.chain.requests)
    started = time.monotonic()
    _owner, owner_t, session = env.merchant("quota-merchant")
    answer = env.api.post(
        "/getBalances", {"ownerAddress": owner_t, "chainId": CHAIN_ID}, session=session
    )
    assert "rate limited" in answer.error(502)
    assert time.monotonic() - started < 5.0
    assert len(env.chain.requests) == sent
    # The quota back: the deposit is counted.
    env.chain.http_status = None
    limiter = w.chain.node.limiter
    limiter._paused_until = limiter._next = 0.0  # the next day, without waiting for it
    drain(w)
    assert status_of(env, invoice) == ("paid", "10")
    assert w.status.state == OK
