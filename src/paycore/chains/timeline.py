"""Which block a moment falls in: a search over block timestamps, for a watcher's first pass.

A watcher with no cursor must begin no later than the oldest invoice it watches was
created, or a deposit made before its first pass goes unseen (docs/chains.md, Where a
watcher starts). Nodes have no "block at time" call, but block timestamps never decrease
with height (strictly increasing on Ethereum, equal neighbours on some rollups), so a
search over ``eth_getBlockByNumber`` (or Tron's ``getblockbynum``) finds it. Each round asks
for ``probes`` timestamps at once -- one JSON-RPC batch on EVM -- and cuts the interval into
``probes + 1`` parts: 15 probes find a block among 300 million in 8 round trips.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence


def last_block_before(
    moment: int,
    highest: int,
    times: Callable[[Sequence[int]], dict[int, int]],
    probes: int = 1,
) -> int:
    """The highest block in ``0..highest`` whose timestamp is before ``moment`` (unix
    seconds), or -1 when even block 0 is not. ``times`` returns the timestamp of each block
    number it is given."""
    below, above = -1, highest + 1  # timestamp(below) < moment <= timestamp(above)
    while above - below > 1:
        gap = above - below
        count = min(max(probes, 1), gap - 1)
        numbers = sorted({below + (gap * k) // (count + 1) for k in range(1, count + 1)})
        found = times(numbers)
        for number in numbers:
            if found[number] < moment:
                below = number
            else:
                above = number
                break
    return below
