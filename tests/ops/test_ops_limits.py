"""The per-client token bucket (``paycore.ops.limits``) on a clock the test moves."""

from __future__ import annotations

import pytest

from paycore.config import Settings
from paycore.errors import TooManyRequests
from paycore.ops.limits import RateLimiter, client_limits, per_minute


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_bucket_lets_a_burst_through_then_refills_at_its_rate() -> None:
    clock = Clock()
    limiter = RateLimiter(rate=0.5, burst=3, clock=clock)  # one every 2 s
    assert [limiter.take("a") for _ in range(3)] == [None, None, None]
    assert limiter.take("a") == 2  # whole seconds until one token is back
    assert limiter.take("b") is None  # another client has its own bucket
    clock.now += 1.0
    assert limiter.take("a") == 1
    clock.now += 1.0
    assert limiter.take("a") is None
    clock.now += 3600.0  # refills to the burst, never beyond
    assert [limiter.take("a") for _ in range(4)] == [None, None, None, 2]


def test_memory_is_bounded_by_dropping_the_least_recently_seen() -> None:
    clock = Clock()
    limiter = RateLimiter(rate=1 / 60, burst=1, clock=clock, max_keys=2)
    assert limiter.take("a") is None
    assert limiter.take("b") is None
    assert limiter.take("a") == 60  # "a" seen last now
    assert limiter.take("c") is None  # pushes out "b", the least recently seen
    assert limiter.take("a") == 60
    assert limiter.take("b") is None  # came back full


def test_settings_make_the_limits_and_zero_turns_one_off() -> None:
    assert per_minute(0) is None
    with pytest.raises(ValueError, match="rate > 0"):
        RateLimiter(rate=0, burst=1)
    clock = Clock()
    limits = client_limits(
        Settings(database_url="memory://", ip_challenge_limit=1, ip_registration_limit=0), clock
    )
    limits.check("challenge", "127.0.0.1")
    with pytest.raises(TooManyRequests) as refused:
        limits.check("challenge", "127.0.0.1")
    assert refused.value.status == 429 and refused.value.headers == {"retry-after": "60"}
    for _ in range(100):
        limits.check("registration", "127.0.0.1")
    with pytest.raises(Exception, match="ip_challenge_limit: must be 0"):
        Settings(database_url="memory://", ip_challenge_limit=-1)
