"""Where a watcher with no cursor starts (``paycore.chains.timeline``), chain-neutral: the
search must find the last block before a moment exactly as a scan of every block would,
with equal neighbouring timestamps (rollups) too, and in the few round trips its docstring
promises. The EVM and Tron watchers that call it are tested in tests/chains/evm and
tests/chains/tron."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given
from hypothesis import strategies as st

from paycore.chains.timeline import last_block_before


def scan(moment: int, stamps: list[int]) -> int:
    before = [n for n, t in enumerate(stamps) if t < moment]
    return before[-1] if before else -1


@given(
    steps=st.lists(st.integers(min_value=0, max_value=3), min_size=1, max_size=60),
    start=st.integers(min_value=0, max_value=10),
    moment=st.integers(min_value=-1, max_value=200),
    probes=st.integers(min_value=0, max_value=16),
)
def test_the_search_agrees_with_a_scan_of_every_block(
    steps: list[int], start: int, moment: int, probes: int
) -> None:
    stamps = [start]
    for step in steps[1:]:
        stamps.append(stamps[-1] + step)  # never decreasing; equal neighbours allowed

    def times(numbers: Sequence[int]) -> dict[int, int]:
        assert all(0 <= n < len(stamps) for n in numbers), "asked for a block that is not there"
        return {n: stamps[n] for n in numbers}

    assert last_block_before(moment, len(stamps) - 1, times, probes) == scan(moment, stamps)


def test_fifteen_probes_find_a_block_among_300_million_in_eight_round_trips() -> None:
    highest = 300_000_000
    rounds: list[int] = []

    def times(numbers: Sequence[int]) -> dict[int, int]:
        rounds.append(len(numbers))
        return {n: 1_500_000_000 + 2 * n for n in numbers}  # one block every 2 s

    moment = 1_500_000_000 + 2 * 123_456_789 + 1
    assert last_block_before(moment, highest, times, probes=15) == 123_456_789
    assert len(rounds) <= 8 and max(rounds) <= 15


def test_nothing_before_the_first_block_answers_minus_one() -> None:
    assert last_block_before(5, 10, lambda numbers: {n: 100 + n for n in numbers}) == -1
