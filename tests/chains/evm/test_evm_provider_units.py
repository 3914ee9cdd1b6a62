"""The pure parts of paycore's handling of hosted providers, without a node: how refusals are
read, where a first pass starts, what call traces count, and the chain settings.

The behaviour against a node -- anvil behind a proxy that refuses, rate-limits, stalls and
lags -- is in ``test_evm_providers.py`` and ``test_evm_internal_transfers.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from paycore import ChainConfig, Settings
from paycore.chains.evm import limits, traces
from paycore.chains.evm.rpc import retry_after
from paycore.chains.timeline import last_block_before
from paycore.chains.watching import Inconsistent
from paycore.errors import InvalidInput

# -- refusals ---------------------------------------------------------------------------------

#: (error, too large?, rate limited?, suggested end for 0x10..0x100, named span): the words
#: of several providers, and things that must not be mistaken for them.
REFUSALS: list[tuple[Any, bool, bool, int | None, int | None]] = [
    (
        {
            "code": -32005,
            "message": "query returned more than 10000 results. "
            "Try with this block range [0x10, 0x2f].",
        },
        True,
        False,
        0x2F,
        None,
    ),
    (
        {"code": -32602, "message": "query exceeds max block range 100000"},
        True,
        False,
        None,
        100000,
    ),
    ({"code": -32000, "message": "block range is too wide"}, True, False, None, None),
    ({"code": -32600, "message": "exceed maximum block range: 50000"}, True, False, None, 50000),
    (
        {
            "code": -32602,
            "message": "Log response size exceeded. You can make eth_getLogs "
            "requests with up to a 2K block range and no limit on the response size, or you can "
            "request any block range with a cap of 10K logs in the response.",
        },
        True,
        False,
        None,
        2000,
    ),
    (
        {"code": -32000, "message": "eth_getLogs is limited to a 10,000 blocks range"},
        True,
        False,
        None,
        10000,
    ),
    ({"code": -32005, "message": "limit exceeded"}, True, False, None, None),
    (
        {"code": -32005, "message": "daily request count exceeded, request rate limited"},
        False,
        True,
        None,
        None,
    ),
    ({"code": 429, "message": "Too Many Requests"}, False, True, None, None),
    (
        {"code": -32090, "message": "Too many requests, reason: call rate limit exhausted"},
        False,
        True,
        None,
        None,
    ),
    # A contract's revert reason is its own text, whatever words it uses.
    (
        {"code": 3, "message": "execution reverted: daily limit exceeded", "data": "0x"},
        False,
        False,
        None,
        None,
    ),
    (
        {"code": -32602, "message": "invalid argument 0: hex string without 0x prefix"},
        False,
        False,
        None,
        None,
    ),
    ("HTTPStatusError: 503", False, False, None, None),
]


@pytest.mark.parametrize(("error", "large", "rate", "end", "span"), REFUSALS)
def test_refusals_are_read_by_their_words(
    error: Any, large: bool, rate: bool, end: int | None, span: int | None
) -> None:
    assert limits.too_large(error) is large
    assert limits.rate_limited(error) is rate
    assert limits.suggested_end(error, 0x10, 0x100) == end
    assert limits.suggested_span(error) == span


def test_http_413_is_too_large_whatever_it_says() -> None:
    assert limits.too_large("Request Entity Too Large", 413)
    assert not limits.too_large("Request Entity Too Large", 400)


def test_a_suggested_range_is_taken_only_inside_the_refused_one() -> None:
    said = {"code": -32005, "message": "Try with this block range [0x10, 0x2f]."}
    assert limits.suggested_end(said, 0x10, 0x2F) is None  # not smaller
    assert limits.suggested_end(said, 0x11, 0x100) is None  # another start
    assert limits.suggested_end(said, 0x10, 0x30) == 0x2F


def test_batch_refusals_are_told_from_reverts() -> None:
    assert limits.batch_refused({"code": -32600, "message": "batch size limit exceeded"})
    assert not limits.batch_refused({"code": 3, "message": "execution reverted: bad batch"})
    assert not limits.batch_refused({"code": -32000, "message": "header not found"})


def test_retry_after_reads_seconds_and_dates() -> None:
    assert retry_after("2") == 2.0
    assert retry_after(" 0.5 ") == 0.5
    assert retry_after("-3") == 0.0
    assert retry_after("999999") == 3600.0  # capped
    assert retry_after("Wed, 21 Oct 2015 07:28:30 GMT", now=1445412500.0) == 10.0
    assert retry_after("soon") is None
    assert retry_after(None) is None


# -- where a first pass starts -------------------------------------------------------------------


class Timestamps:
    """The ``times`` callable of the search, counting its rounds (its round trips)."""

    def __init__(self, time_of: Callable[[int], int]) -> None:
        self.time_of = time_of
        self.rounds = 0

    def __call__(self, numbers: Sequence[int]) -> dict[int, int]:
        self.rounds += 1
        return {n: self.time_of(n) for n in numbers}


@pytest.mark.parametrize("probes", [1, 3, 15])
def test_the_search_finds_the_last_block_before_a_moment(probes: int) -> None:
    # 12 s blocks, with runs of equal timestamps as some rollups have.
    times = [1_000 + 12 * (n // 3) for n in range(5_000)]
    for moment in (0, 1_000, 1_001, 1_012, 1_013, 13_000, times[-1], times[-1] + 1):
        found = last_block_before(moment, len(times) - 1, Timestamps(times.__getitem__), probes)
        expected = max((n for n, t in enumerate(times) if t < moment), default=-1)
        assert found == expected, (moment, probes)


def test_fifteen_probes_cut_the_rounds() -> None:
    highest = 3 * 10**8  # an L2's height
    one, many = Timestamps(lambda n: 2 * n), Timestamps(lambda n: 2 * n)
    moment = 2 * 77_777_777
    assert last_block_before(moment, highest, one, 1) == 77_777_776
    assert last_block_before(moment, highest, many, 15) == 77_777_776
    assert one.rounds >= 28 and many.rounds <= 8


# -- call traces ----------------------------------------------------------------------------------

WATCHED = {"aa" * 20: "0x" + "AA" * 20, "bb" * 20: "0x" + "BB" * 20, "cc" * 20: "0x" + "CC" * 20}
A, B, C = ("0x" + x * 20 for x in ("aa", "bb", "cc"))
PAYOUT = "0x" + "11" * 20
SENDER = "0x" + "22" * 20
BLOCK = {"number": "0x10", "hash": "0x" + "0f" * 32, "transactions": ["0xt1", "0xt2", "0xt3"]}


def frame(
    kind: str, source: str, to: str, value: int, calls: Sequence[Any] = (), error: str = ""
) -> dict[str, Any]:
    found: dict[str, Any] = {"type": kind, "from": source, "to": to, "value": hex(value)}
    if calls:
        found["calls"] = list(calls)
    if error:
        found["error"] = error
    return found


def call_tracer() -> list[dict[str, Any]]:
    """t1: the contract pays A, then B inside a nested call; t2: a reverted call that paid C;
    t3: a failed transaction that paid A."""
    return [
        {
            "txHash": "0xt1",
            "result": frame(
                "CALL",
                SENDER,
                PAYOUT,
                30,
                [
                    frame("CALL", PAYOUT, A, 10),
                    frame("STATICCALL", PAYOUT, B, 0),
                    frame("DELEGATECALL", PAYOUT, PAYOUT, 5, [frame("CALL", PAYOUT, B, 20)]),
                ],
            ),
        },
        {
            "txHash": "0xt2",
            "result": frame(
                "CALL",
                SENDER,
                PAYOUT,
                7,
                [frame("CALL", PAYOUT, PAYOUT, 7, [frame("CALL", PAYOUT, C, 7)], error="reverted")],
            ),
        },
        {
            "txHash": "0xt3",
            "result": frame(
                "CALL", SENDER, PAYOUT, 1, [frame("CALL", PAYOUT, A, 1)], error="revert"
            ),
        },
    ]


def parity() -> list[dict[str, Any]]:
    """The same three transactions as ``trace_block`` lists them."""

    def entry(
        tx: str, path: list[int], kind: str, action: dict[str, Any], error: str = ""
    ) -> dict[str, Any]:
        found = {
            "transactionHash": tx,
            "traceAddress": path,
            "type": kind,
            "action": action,
            "blockHash": BLOCK["hash"],
            "result": {},
        }
        if error:
            found["error"] = error
        return found

    def call(source: str, to: str, value: int, call_type: str = "call") -> dict[str, Any]:
        return {"from": source, "to": to, "value": hex(value), "callType": call_type}

    return [
        entry("0xt1", [], "call", call(SENDER, PAYOUT, 30)),
        entry("0xt1", [2, 0], "call", call(PAYOUT, B, 20)),  # listed out of order on purpose
        entry("0xt1", [0], "call", call(PAYOUT, A, 10)),
        entry("0xt1", [1], "call", call(PAYOUT, B, 0, "staticcall")),
        entry("0xt1", [2], "call", call(PAYOUT, PAYOUT, 5, "delegatecall")),
        entry("0xt2", [], "call", call(SENDER, PAYOUT, 7)),
        entry("0xt2", [0], "call", call(PAYOUT, PAYOUT, 7), error="Reverted"),
        entry("0xt2", [0, 0], "call", call(PAYOUT, C, 7)),
        entry("0xt3", [], "call", call(SENDER, PAYOUT, 1), error="Reverted"),
        entry("0xt3", [0], "call", call(PAYOUT, A, 1)),
        {
            "type": "reward",
            "action": {"author": A, "value": "0x1"},
            "blockHash": BLOCK["hash"],
            "traceAddress": [],
        },
    ]


@pytest.mark.parametrize(("mode", "result"), [("debug", call_tracer()), ("trace", parity())])
def test_traces_count_value_moved_by_contracts_and_nothing_undone(mode: str, result: Any) -> None:
    found = traces.match(mode, BLOCK, result, WATCHED)
    assert [(t.tx_hash, t.to, t.units, t.log_index, t.tx_index) for t in found] == [
        ("0xt1", WATCHED["aa" * 20], 10, -2, 0),
        ("0xt1", WATCHED["bb" * 20], 20, -3, 0),
    ]
    assert all(t.block_number == 16 and t.block_hash == BLOCK["hash"] for t in found)
    # A wallet sweeping its forwarder (Collected in the same transaction) is no payment.
    swept = traces.match(mode, BLOCK, result, WATCHED, {("0xt1", "bb" * 20)})
    assert [t.to for t in swept] == [WATCHED["aa" * 20]]


def test_selfdestruct_and_create_move_value_too() -> None:
    result = [
        {
            "txHash": "0xt1",
            "result": frame(
                "CALL",
                SENDER,
                PAYOUT,
                0,
                [frame("CREATE", PAYOUT, C, 3), frame("SELFDESTRUCT", PAYOUT, A, 4)],
            ),
        },
        {"txHash": "0xt2", "result": frame("CALL", SENDER, PAYOUT, 0)},
        {"txHash": "0xt3", "result": frame("CALL", SENDER, PAYOUT, 0)},
    ]
    found = traces.match("debug", BLOCK, result, WATCHED)
    assert [(t.to[2:4], t.units, t.log_index) for t in found] == [("CC", 3, -2), ("AA", 4, -3)]


@pytest.mark.parametrize(
    ("mode", "result"),
    [
        ("debug", call_tracer()[:2]),  # a transaction missing
        ("debug", [{**e, "txHash": "0xother"} for e in call_tracer()]),
        ("debug", [{"txHash": "0xt1", "error": "execution timeout"}, *call_tracer()[1:]]),
        ("trace", None),  # the node does not have the block
        ("trace", [{**e, "blockHash": "0x" + "ee" * 32} for e in parity()]),  # another block
        ("trace", [e for e in parity() if e.get("transactionHash") != "0xt3"]),
    ],
)
def test_a_trace_that_does_not_match_the_block_is_read_again(mode: str, result: Any) -> None:
    with pytest.raises(Inconsistent):
        traces.match(mode, BLOCK, result, WATCHED)


def test_only_blocks_with_transactions_are_traced() -> None:
    empty = {"number": "0x11", "hash": "0x" + "01" * 32, "transactions": []}
    busy, calls = traces.calls("debug", [BLOCK, empty])
    assert busy == [BLOCK]
    assert calls == [("debug_traceBlockByHash", [BLOCK["hash"], {"tracer": "callTracer"}])]
    assert traces.calls("trace", [empty, BLOCK])[1] == [("trace_block", ["0x10"])]


# -- settings ----------------------------------------------------------------------------------


def test_several_rpc_urls_and_rpc_url_alone() -> None:
    alone = ChainConfig(1, "eth", rpc_url="https://a.example/rpc")
    assert alone.endpoints == ("https://a.example/rpc",)
    listed = ChainConfig(1, "eth", rpc_urls="https://a.example/rpc, https://b.example/rpc")
    assert listed.rpc_url == "https://a.example/rpc"
    assert listed.endpoints == ("https://a.example/rpc", "https://b.example/rpc")
    both = ChainConfig(
        1,
        "eth",
        rpc_url="https://b.example/rpc",
        rpc_urls=["https://a.example/rpc", "https://b.example/rpc"],
    )
    assert both.endpoints == ("https://b.example/rpc", "https://a.example/rpc")


def test_rpc_urls_keys_are_secrets() -> None:
    key = "k3yk3yk3yk3yk3yk3yk3yk3y9"
    settings = Settings(chains={1: ChainConfig(1, "eth", rpc_urls=[f"https://b.example/v3/{key}"])})
    assert key in settings.secret_values()
    assert key not in repr(settings.chains[1])


@pytest.mark.parametrize(
    ("raw", "mode"), [(None, "off"), ("", "off"), ("DEBUG", "debug"), ("trace", "trace")]
)
def test_internal_transfers_modes(raw: Any, mode: str) -> None:
    assert ChainConfig(1, "eth", internal_transfers=raw).internal_transfers == mode


@pytest.mark.parametrize(
    "bad", [{"internal_transfers": "parity"}, {"rpc_timeout": 0}, {"rpc_max_wait": -1}]
)
def test_bad_node_settings_fail_at_startup(bad: dict[str, Any]) -> None:
    with pytest.raises(InvalidInput):
        ChainConfig(1, "eth", **bad)


def test_chains_from_the_environment_take_rpc_urls() -> None:
    env = {
        "PAYCORE_CHAINS": '{"1": {"name": "eth", "rpc_urls": ["https://a.example", "https://b.example"],'
        ' "internal_transfers": "debug", "rpc_timeout": "5"}}'
    }
    chain = Settings.from_env(env).chains[1]
    assert chain.endpoints == ("https://a.example", "https://b.example")
    assert (chain.internal_transfers, chain.rpc_timeout) == ("debug", 5.0)
