"""The pace paycore keeps with a Tron node (``paycore.chains.tron.pacing``), on a clock the
test moves: the rate limiter's spacing, a refusal's penalty and the recovery after it, and
the blocks one request may ask for as answers grow, shrink, fail and get cut by the node."""

from __future__ import annotations

import pytest

from paycore.chains.tron.pacing import (
    FLOOR_RATE,
    RECOVER_AFTER,
    BlockWindow,
    RateLimiter,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def starts(limiter: RateLimiter, clock: Clock, count: int) -> list[float]:
    """When ``count`` requests sent back to back would start (each waits its turn)."""
    out = []
    for _ in range(count):
        wait = limiter.reserve()
        assert wait is not None
        clock.now += wait
        out.append(clock.now)
    return out


def test_requests_are_spaced_to_the_rate_and_never_burst() -> None:
    clock = Clock()
    limiter = RateLimiter(10, clock=clock)
    times = starts(limiter, clock, 31)
    assert all(abs((b - a) - 0.1) < 1e-9 for a, b in zip(times, times[1:], strict=False))
    # Any one-second window holds at most 10 of them, however it is placed.
    for t in times:
        assert sum(1 for s in times if t <= s < t + 1.0) <= 10


def test_no_limit_means_no_wait() -> None:
    clock = Clock()
    limiter = RateLimiter(None, clock=clock)
    assert starts(limiter, clock, 50) == [1000.0] * 50


def test_a_refusal_pauses_everyone_for_the_named_penalty_and_halves_the_pace() -> None:
    clock = Clock()
    limiter = RateLimiter(10, clock=clock)
    starts(limiter, clock, 10)
    assert limiter.refused(30.0) == 30.0
    assert limiter.paused_for() == pytest.approx(30.0)
    assert limiter.reserve(max_wait=5.0) is None  # a helper will not wait that long
    wait = limiter.reserve()
    assert wait == pytest.approx(30.0)
    assert limiter.rate == 5.0
    clock.now += wait
    first, second = starts(limiter, clock, 2)
    assert second - first == pytest.approx(0.2)  # 5 a second now


def test_refusals_without_a_penalty_double_it_and_the_pace_has_a_floor() -> None:
    clock = Clock()
    limiter = RateLimiter(None, clock=clock)
    starts(limiter, clock, 8)  # 8 in the same instant
    pauses = [limiter.refused(None) for _ in range(4)]
    assert pauses == [2.0, 4.0, 8.0, 16.0]
    assert limiter.rate is not None and limiter.rate <= 4.0
    for _ in range(20):
        limiter.refused(None)
    assert limiter.rate == FLOOR_RATE
    assert limiter.paused_for() <= 120.0


def test_the_pace_comes_back_after_a_run_of_answers_but_not_past_the_setting() -> None:
    clock = Clock()
    limiter = RateLimiter(8, clock=clock)
    starts(limiter, clock, 8)
    limiter.refused(0.0)
    assert limiter.rate == 4.0
    for _ in range(RECOVER_AFTER * 10):
        limiter.succeeded()
    assert limiter.rate == 8.0  # the operator's setting is the ceiling


def test_the_window_grows_towards_the_target_in_steps() -> None:
    window = BlockWindow(ceiling=100, target=4_000_000)
    assert window.size == 10
    window.fitted(10, 10 * 40_000)  # 40 KB a block: 100 fit, but only twice as many now
    assert window.size == 20
    window.fitted(20, 20 * 40_000)
    assert window.size == 40
    window.fitted(40, 40 * 40_000)
    window.fitted(80, 80 * 40_000)
    assert window.size == 100  # java-tron's limit
    window.fitted(100, 100 * 400_000)  # mainnet-sized blocks: 10 fit
    assert window.size == 10


def test_the_window_halves_on_failures_and_stops_at_one() -> None:
    window = BlockWindow(ceiling=64)
    window.size = 64
    sizes = []
    for _ in range(8):
        window.failed(window.size)
        sizes.append(window.size)
    assert sizes == [32, 16, 8, 4, 2, 1, 1, 1]
    assert window.cap(1) is None  # one block is read whatever its size
    assert window.cap(2) == 8 * window.target


def test_after_a_failure_the_window_does_not_climb_straight_back() -> None:
    window = BlockWindow(ceiling=100, target=4_000_000)
    window.fitted(10, 10 * 40_000)  # 40 KB a block
    window.failed(20)  # 800 KB timed out: 400 KB is the budget now
    assert window.size == 10
    sizes = []
    for _ in range(12):
        window.fitted(window.size, window.size * 40_000)
        sizes.append(window.size)
    assert sizes[:3] == [11, 12, 13]  # a tenth more bytes an answer
    assert sizes == sorted(sizes) and sizes[-1] <= 32  # a dozen answers later: 1.25 MB
    before = window.size
    window.fitted(before, before * 500)  # quiet blocks: the byte budget lets it grow fast
    assert window.size == 2 * before


def test_a_node_that_answers_fewer_blocks_caps_the_window() -> None:
    window = BlockWindow(ceiling=100)
    window.fitted(10, 10_000)
    window.capped(7)
    assert window.size == 7


def test_the_operators_ceiling_and_java_trons_limit_hold() -> None:
    assert BlockWindow(ceiling=500).ceiling == 100
    small = BlockWindow(ceiling=3)
    assert small.size == 3
    small.fitted(3, 30)
    assert small.size == 3
