"""The watcher against what hosted JSON-RPC providers do, imitated by a proxy in front of anvil.

Each test puts :class:`rpc_proxy.FaultProxy` between the watcher and anvil and has it refuse
``eth_getLogs`` over too many blocks or results (in the words of several providers, or with
HTTP 413), answer 429 with ``Retry-After``, fail with 5xx, stall past the client's timeout,
be down while a second URL is up, or answer from a node that lags behind a load balancer.
The promise is the same in each: every deposit counts exactly once, and the cursor never
moves back nor past a block the watcher has not read from a node that has it.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from evm_chain import Deployment
from evm_gateway import CHAIN_ID, ETH_ID, USD, drain, make_gateway, pay_native, pay_token, watcher
from rpc_proxy import FaultProxy, Faults

from paycore import Gateway
from paycore.chains.evm.rpc import Rpc, RpcError
from paycore.chains.watching import FIRST_PASS_MARGIN

pytestmark = pytest.mark.node  # anvil comes from npm


@pytest.fixture
def proxy(evm: Deployment) -> Iterator[FaultProxy]:
    faulty = FaultProxy(evm.chain.rpc_url)
    with faulty.running() as url:
        faulty.url = url  # type: ignore[attr-defined]
        yield faulty


def url_of(proxy: FaultProxy) -> str:
    return str(proxy.url)  # type: ignore[attr-defined]


def invoices(gateway: Gateway, evm: Deployment, count: int) -> list[Any]:
    """``count`` invoices of 100 USD of the merchant, accepting the test token and ETH."""
    accepted = [ETH_ID, f"{CHAIN_ID}:{evm.token.address}"]
    body = {"value": "100", "chainId": CHAIN_ID, "acceptedTokens": accepted}
    return [
        gateway.create_invoice(evm.owner.address, {**body, "description": f"order {n}"})
        for n in range(count)
    ]


def payments(gateway: Gateway, guids: list[str]) -> list[tuple[Decimal, int]]:
    with gateway.storage.transaction() as tx:
        found = [tx.get_invoice(g) for g in guids]
    return [(i.paid_amount, len(i.payments)) for i in found if i is not None]


def cursor_of(gateway: Gateway) -> int | None:
    with gateway.storage.transaction() as tx:
        cursor = tx.get_chain_cursor(CHAIN_ID)
    return None if cursor is None else cursor.block_number


def pay_all(evm: Deployment, bills: list[Any]) -> None:
    """Half the invoices in the test token (two blocks each: mint, transfer), half in ETH."""
    for n, bill in enumerate(bills):
        if n % 2:
            pay_native(evm, bill.address, 10**16)  # 0.01 ETH = 20 USD
        else:
            pay_token(evm, evm.token, bill.address, 20 * USD)


def counted_once(gateway: Gateway, bills: list[Any]) -> bool:
    return payments(gateway, [b.guid for b in bills]) == [(Decimal(20), 1)] * len(bills)


# -- eth_getLogs limits -------------------------------------------------------------------------

LIMITS = {
    "range, -32602 naming the limit": Faults(
        max_blocks=3, range_error=(-32602, "query exceeds max block range {limit}")
    ),
    "range, -32000 block range is too wide": Faults(
        max_blocks=3, range_error=(-32000, "block range is too wide")
    ),
    "range, -32600 exceed maximum block range": Faults(
        max_blocks=3, range_error=(-32600, "exceed maximum block range: {limit}")
    ),
    "range, HTTP 413": Faults(max_blocks=3, range_error=(413, "")),
    "results, -32005": Faults(max_results=2),
    "results, with a suggested range": Faults(max_results=2, suggest_range=True),
}


@pytest.mark.parametrize("faults", LIMITS.values(), ids=LIMITS.keys())
def test_refused_log_ranges_are_split_and_nothing_is_missed(
    evm: Deployment, proxy: FaultProxy, faults: Faults
) -> None:
    proxy.faults = faults
    gateway = make_gateway(evm, rpc_url=url_of(proxy), block_batch=50)
    bills = invoices(gateway, evm, 6)
    pay_all(evm, bills)  # 9 blocks, 6 token Transfer logs (3 mints, 3 payments)
    w = watcher(gateway)
    reports = drain(w)
    assert counted_once(gateway, bills)
    assert sum(r.deposits for r in reports) == 6
    assert proxy.refused, "the provider's limit was never reached: the test proves nothing"
    if faults.max_blocks is not None:
        assert all(b - a + 1 <= faults.max_blocks for a, b in proxy.log_ranges)
    # The span learned stays: later ranges are asked in pieces the provider accepts.
    refused_before = len(proxy.refused)
    more = invoices(gateway, evm, 4)
    pay_all(evm, more)
    assert sum(r.deposits for r in drain(w)) == 4
    assert counted_once(gateway, more)
    assert len(proxy.refused) - refused_before <= 2


def test_a_block_with_more_logs_than_the_cap_stops_the_watcher_and_skips_nothing(
    evm: Deployment, proxy: FaultProxy
) -> None:
    """Two token payments in one block, a provider that returns one log at most: the block
    cannot be split, so the watcher says so at every pass and its cursor stays before the
    block; with a provider that returns them, both count."""
    proxy.faults = Faults(max_results=1)
    gateway = make_gateway(evm, rpc_url=url_of(proxy), block_batch=10)
    bills = invoices(gateway, evm, 2)
    evm.mint(evm.token, evm.payer.address, 40 * USD)
    w = watcher(gateway)
    drain(w)
    block = mine_together(
        evm,
        [evm.token.functions.transfer(b.address, 20 * USD) for b in bills],
    )
    for _ in range(2):
        with pytest.raises(RpcError, match=f"block {block} alone has more logs"):
            w.step()
        cursor = cursor_of(gateway)
        assert cursor is not None and cursor == block - 1
    assert payments(gateway, [b.guid for b in bills]) == [(Decimal(0), 0)] * 2
    proxy.faults = Faults()
    assert sum(r.deposits for r in drain(w)) == 2
    assert counted_once(gateway, bills)


def mine_together(evm: Deployment, calls: list[Any]) -> int:
    """Sends ``calls`` from the payer and mines them in one block; returns its number."""
    w3 = evm.chain.w3
    nonce = w3.eth.get_transaction_count(evm.payer.address, "pending")
    base = w3.eth.get_block("latest")["baseFeePerGas"]
    w3.provider.make_request("evm_setAutomine", [False])  # type: ignore[arg-type]
    try:
        hashes = []
        for n, call in enumerate(calls):
            tx = call.build_transaction(
                {
                    "from": evm.payer.address,
                    "nonce": nonce + n,
                    "gas": 200_000,
                    "maxFeePerGas": 2 * base + 10**9,
                    "maxPriorityFeePerGas": 10**9,
                    "chainId": CHAIN_ID,
                }
            )
            signed = evm.payer.sign_transaction(tx)
            hashes.append(w3.eth.send_raw_transaction(signed.raw_transaction))
        w3.provider.make_request("evm_mine", [])  # type: ignore[arg-type]
    finally:
        w3.provider.make_request("evm_setAutomine", [True])  # type: ignore[arg-type]
    receipts = [w3.eth.wait_for_transaction_receipt(h, timeout=10) for h in hashes]
    assert len({r["blockNumber"] for r in receipts}) == 1 and all(r["status"] for r in receipts)
    return int(receipts[0]["blockNumber"])


@pytest.mark.parametrize("refusal", [413, -32600], ids=["HTTP 413", "batch error"])
def test_a_refused_batch_is_halved_until_the_provider_takes_it(
    evm: Deployment, proxy: FaultProxy, refusal: int
) -> None:
    proxy.faults = Faults(max_batch=7, batch_error=refusal)
    rpc = Rpc(url_of(proxy), batch_size=40)
    head = evm.chain.w3.eth.block_number
    numbers = [n % (head + 1) for n in range(30)]
    headers = rpc.batch([("eth_getBlockByNumber", [hex(n), False]) for n in numbers])
    assert [int(h["number"], 16) for h in headers] == numbers
    assert rpc.batch_size <= 7
    refused = sum(1 for r in proxy.requests if r.answer in ("413", "batch"))
    assert refused >= 1
    rpc.batch([("eth_getBlockByNumber", [hex(n), False]) for n in numbers])
    assert sum(1 for r in proxy.requests if r.answer in ("413", "batch")) == refused


# -- rate limits, errors, timeouts, failover ---------------------------------------------------


def test_429_is_waited_out_for_its_retry_after(evm: Deployment, proxy: FaultProxy) -> None:
    proxy.faults = Faults(rate_limit_every=4, retry_after="1")
    gateway = make_gateway(evm, rpc_url=url_of(proxy), block_batch=3)
    bills = invoices(gateway, evm, 4)
    pay_all(evm, bills)
    drain(watcher(gateway))
    assert counted_once(gateway, bills)
    limited = [n for n, r in enumerate(proxy.requests) if r.answer == "429"]
    assert limited, "never rate limited: the test proves nothing"
    for n in limited:  # the next request came no sooner than Retry-After said
        if n + 1 < len(proxy.requests):
            assert proxy.requests[n + 1].at - proxy.requests[n].at >= 0.95


def test_5xx_and_stalled_requests_are_retried(evm: Deployment, proxy: FaultProxy) -> None:
    proxy.faults = Faults(fail_every=5, stall_every=7, stall_seconds=2.0)
    gateway = make_gateway(evm, rpc_url=url_of(proxy), block_batch=3, rpc_timeout=0.5)
    bills = invoices(gateway, evm, 4)
    pay_all(evm, bills)
    w = watcher(gateway)
    for _ in range(40):  # a pass may fail while every try of a call failed: the next goes on
        try:
            if w.step().caught_up:
                break
        except RpcError:
            continue
    assert counted_once(gateway, bills)
    answers = {r.answer for r in proxy.requests}
    assert {"503", "stall"} <= answers


@pytest.mark.parametrize("dead", ["503", "closed port"])
def test_a_failing_first_url_fails_over_to_the_next(
    evm: Deployment, proxy: FaultProxy, dead: str
) -> None:
    down = FaultProxy(evm.chain.rpc_url, Faults(down=True))
    with down.running() as down_url:
        first = down_url if dead == "503" else closed_port_url()
        gateway = make_gateway(evm, rpc_url=None, rpc_urls=(first, url_of(proxy)))
        assert gateway.settings.chains[CHAIN_ID].rpc_url == first
        bills = invoices(gateway, evm, 4)
        pay_all(evm, bills)
        w = watcher(gateway)
        drain(w)
        assert counted_once(gateway, bills)
        served = len(proxy.requests)
        assert served >= 4
        if dead == "503":  # tried again only once it rested, not on every call
            assert 1 <= len(down.requests) <= served // 2
        # The first URL back up is preferred again once its rest is over.
        down.faults = Faults()
        w.chain.rpc._endpoints[0].rests_until = 0.0  # noqa: SLF001 - skip the wait
        if dead == "503":
            w.step()
            assert w.chain.rpc.answered_by == 1


def closed_port_url() -> str:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def test_rpc_url_alone_still_works(evm: Deployment) -> None:
    gateway = make_gateway(evm)
    config = gateway.settings.chains[CHAIN_ID]
    assert config.endpoints == (evm.chain.rpc_url,) and config.rpc_urls == ()
    bills = invoices(gateway, evm, 2)
    pay_all(evm, bills)
    drain(watcher(gateway))
    assert counted_once(gateway, bills)


# -- a node that lags behind a load balancer -----------------------------------------------------


@pytest.mark.parametrize(("confirmations", "rpc_batch"), [(0, 100), (2, 100), (0, 2)])
def test_a_lagging_node_behind_a_load_balancer_moves_nothing_back_and_skips_nothing(
    evm: Deployment, proxy: FaultProxy, confirmations: int, rpc_batch: int
) -> None:
    """Every other request reaches a node four blocks behind, which answers an older head,
    no block or receipt above its own head, and eth_getLogs for the blocks it has only.
    With batches of two, each log request still travels with the header that proves it."""
    proxy.faults = Faults(lag=4, lag_every=2)
    gateway = make_gateway(
        evm,
        rpc_url=url_of(proxy),
        block_batch=2,
        confirmations=confirmations,
        rpc_batch=rpc_batch,
    )
    bills = invoices(gateway, evm, 8)
    w = watcher(gateway)
    cursors: list[int] = []
    for bill_pair in (bills[0:2], bills[2:4], bills[4:6], bills[6:8]):
        pay_all(evm, bill_pair)
        for _ in range(6):
            report = w.step()
            assert report.rewound_to is None and report.reorged == 0
            cursor = cursor_of(gateway)
            if cursor is not None:
                assert not cursors or cursor >= cursors[-1], "the cursor moved back"
                head = evm.chain.w3.eth.block_number
                assert cursor <= head - confirmations
                cursors.append(cursor)
    assert any(r.answer == "lagging" for r in proxy.requests)
    evm.chain.w3.provider.make_request("anvil_mine", [hex(confirmations + 1)])  # type: ignore[arg-type]
    for _ in range(30):
        if counted_once(gateway, bills):
            break
        w.step()
    assert counted_once(gateway, bills)
    proxy.faults = Faults()
    drain(w)
    assert counted_once(gateway, bills)


# -- where a new watcher starts --------------------------------------------------------------


def test_a_deposit_made_before_the_first_pass_counts(evm: Deployment) -> None:
    """No ``start_block``: the first pass starts before the oldest watched invoice was
    created (found by block timestamp), not at the head, so a payment made a second after
    the invoice, before the watcher ever ran, is counted."""
    gateway = make_gateway(evm, start_block=None)
    [bill] = invoices(gateway, evm, 1)
    tx_hash = pay_token(evm, evm.token, bill.address, 20 * USD)
    receipt = evm.chain.w3.eth.get_transaction_receipt(tx_hash)  # type: ignore[arg-type]
    reports = drain(watcher(gateway))
    assert sum(r.deposits for r in reports) == 1
    assert counted_once(gateway, [bill])
    # It began after the last block more than the margin older than the invoice.
    moment = bill.created_at - FIRST_PASS_MARGIN
    head = int(receipt["blockNumber"])
    times = [int(evm.chain.w3.eth.get_block(n)["timestamp"]) for n in range(head + 1)]
    expected = max((n for n, t in enumerate(times) if t < moment), default=-1)
    assert reports[0].scanned_from == expected + 1


def test_with_no_watched_invoice_a_new_watcher_starts_at_the_head(evm: Deployment) -> None:
    gateway = make_gateway(evm, start_block=None)
    w = watcher(gateway)
    head = evm.chain.w3.eth.block_number
    first = w.step()
    assert first.scanned_from == head + 1 and first.deposits == 0
    assert cursor_of(gateway) == head
    [bill] = invoices(gateway, evm, 1)
    pay_token(evm, evm.token, bill.address, 20 * USD)
    assert sum(r.deposits for r in drain(w)) == 1
