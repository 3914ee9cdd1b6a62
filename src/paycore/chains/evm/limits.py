"""How hosted JSON-RPC providers say "too much" and "too often", read from their answers.

Providers cap ``eth_getLogs`` by block span (free public endpoints: 1,000 to 10,000 blocks,
some as few as 10) or by result count (paid plans: 10,000 logs), and cap request rates.
None of this is standardised: the same refusal comes as JSON-RPC ``-32005`` ("limit
exceeded"), ``-32602`` ("invalid params") with words about the range, ``-32000`` or
``-32600`` with other words, or a bare HTTP 413. A rate limit comes as HTTP 429, as a 200
answer whose error says "rate limit" or "too many requests", or as ``-32005`` with words
about the request count. docs/chains.md lists what each does to the watcher.

The tests are by words, deliberately loose: mistaking a rate limit for a range limit only
makes a range smaller, and mistaking a range limit for a rate limit is avoided by checking
range words first. Some providers also say which range would work ("Try with this block
range [0x10, 0x2f]", "up to a 2K block range"); :func:`suggested_end` and
:func:`suggested_span` read that so the next request fits at once.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

#: JSON-RPC codes that mean "limit exceeded" on their own (EIP-1474).
LIMIT_CODES = frozenset({-32005})
#: Words of a refusal because the range or its result is too large.
_TOO_LARGE = re.compile(
    r"block range|range (?:is )?too (?:wide|large|big|long)|exceeds? (?:the )?max(?:imum)?"
    r"(?: block)? range|max(?:imum)? (?:block )?range|range limit|too many blocks"
    r"|more than \d[\d,]* (?:results|logs)|query returned more than|too many (?:results|logs)"
    r"|log response size|response size|result (?:set |window )?(?:is )?too (?:large|big)"
    r"|(?:results?|logs?) limit|query timeout|request entity too large|payload too large"
    r"|(?:is|are) limited to|blocks? range",
    re.IGNORECASE,
)
#: Words of a rate limit or an exhausted quota.
_RATE = re.compile(
    r"rate.?limit|too many requests|request (?:rate|count|limit)|requests? per|capacity"
    r"|throughput|quota|daily|credits?|exceeded the (?:allowed )?rps|try again later|\b429\b",
    re.IGNORECASE,
)
#: A revert's reason is the contract's text, whatever words it uses (EIP-1474 code 3).
_REVERTED = 3
_REVERT = re.compile(r"revert|execution", re.IGNORECASE)
#: Words of a refused batch: too many calls in one HTTP request.
_BATCH = re.compile(r"batch", re.IGNORECASE)
#: "[0x10, 0x2f]": the range a provider suggests.
_SUGGESTED = re.compile(r"\[\s*(0x[0-9a-f]+)\s*,\s*(0x[0-9a-f]+)\s*\]", re.IGNORECASE)
#: "2K block range", "1000-block range", "block range of 500", "maximum block range: 50000",
#: "range limit is 100": a number of blocks next to the word range.
_SPAN = re.compile(
    r"(\d[\d,]*)\s*(k)?[\s-]*blocks?\s+range"
    r"|range(?:\s+(?:limit|size|is|of|to|exceeds?|maximum|max|allowed))*\s*[:=]?\s*(\d[\d,]*)\s*(k)?"
    r"(?!\s*(?:results|logs))",
    re.IGNORECASE,
)


def message(detail: object) -> str:
    """The words of an error: its message and data, or the text of a failure."""
    if isinstance(detail, Mapping):
        return f"{detail.get('message', '')} {detail.get('data', '') or ''}"
    return str(detail)


def too_large(detail: object, http_status: int | None = None) -> bool:
    """Whether an error answer (a JSON-RPC error object, or the text of an HTTP failure)
    refuses the request for its size: a block range or a result set too large."""
    if http_status == 413:
        return True
    if not isinstance(detail, Mapping):
        return False
    text = message(detail)
    if _TOO_LARGE.search(text):
        return True
    return detail.get("code") in LIMIT_CODES and not _RATE.search(text)


def rate_limited(detail: object) -> bool:
    """Whether a JSON-RPC error object says "slow down" rather than "no": the request may
    be sent again later, unchanged. Size refusals are not rate limits even when worded
    "limit exceeded"."""
    if not isinstance(detail, Mapping) or too_large(detail):
        return False
    text = message(detail)
    if detail.get("code") == _REVERTED or _REVERT.search(text):  # a contract's own words
        return False
    return detail.get("code") == 429 or bool(_RATE.search(text))


def batch_refused(detail: object) -> bool:
    """Whether an error refuses a whole HTTP batch for having too many calls."""
    if not isinstance(detail, Mapping) or detail.get("code") == _REVERTED:
        return False
    text = message(detail)
    return bool(_BATCH.search(text)) and not _REVERT.search(text)


def suggested_end(detail: object, start: int, end: int) -> int | None:
    """The last block of a range the provider suggests instead of ``start..end``: only one
    that begins at ``start`` and ends inside the refused range is taken."""
    match = _SUGGESTED.search(message(detail))
    if match is None:
        return None
    first, last = int(match.group(1), 16), int(match.group(2), 16)
    return last if first == start and start <= last < end else None


def suggested_span(detail: object) -> int | None:
    """The most blocks per request a refusal names ("up to a 2K block range"), if any."""
    for match in _SPAN.finditer(message(detail)):
        digits, kilo = (match.group(1), match.group(2)) if match.group(1) else match.groups()[2:]
        if digits:
            value = int(digits.replace(",", "")) * (1000 if kilo else 1)
            if value > 0:
                return value
    return None
